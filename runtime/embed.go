package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/loader"
)

// Pooling is how Embed turns the hidden states of an input's tokens into
// embeddings: llama.cpp's llama_pooling_type (none 0, mean 1, cls 2, last 3,
// rank 4), shifted by one so that the zero value means "the model's".
type Pooling int

const (
	// PoolingDefault is the file's {arch}.pooling_type, and PoolingNone
	// when the file has none: what llama.cpp's llama-embedding does for a
	// causal language model (one embedding per token).
	PoolingDefault Pooling = iota
	PoolingNone            // one embedding per token
	PoolingMean            // the mean over the input's tokens
	PoolingCLS             // the first token's
	PoolingLast            // the last token's
	PoolingRank            // a classification head's scores (rerankers: encoder models with cls tensors)
)

var poolingNames = []string{"default", "none", "mean", "cls", "last", "rank"}

func (p Pooling) String() string {
	if p < 0 || int(p) >= len(poolingNames) {
		return fmt.Sprintf("pooling(%d)", int(p))
	}
	return poolingNames[p]
}

// ParsePooling reads a pooling name as llama.cpp's --pooling spells it
// (none, mean, cls, last, rank), or "default".
func ParsePooling(s string) (Pooling, error) {
	for i, n := range poolingNames {
		if s == n {
			return Pooling(i), nil
		}
	}
	return 0, fmt.Errorf("unknown pooling %q (want one of %s)", s, strings.Join(poolingNames, ", "))
}

// poolingFromGGUF reads {arch}.pooling_type (PoolingDefault when absent).
func poolingFromGGUF(f *loader.File, arch string) (Pooling, error) {
	key := arch + ".pooling_type"
	if _, ok := f.Get(key); !ok {
		return PoolingDefault, nil
	}
	v, ok := f.Uint(key)
	if !ok || v > 4 {
		return 0, fmt.Errorf("key %s is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)", key)
	}
	return Pooling(v + 1), nil
}

// EmbedOptions describe one Embed call.
type EmbedOptions struct {
	// Inputs are tokenized like llama-embedding's prompts: with BOS/EOS as
	// the vocabulary says and special tokens parsed.
	Inputs []string
	// Tokens, if set, are used instead of Inputs, as they are (nothing added).
	Tokens [][]int32
	// Pooling overrides the model's pooling (PoolingDefault: the file's, or
	// none when it has none, as llama.cpp).
	Pooling Pooling
	// Truncate keeps the first NCtx tokens of a longer input (the last kept
	// one replaced by EOS when the vocabulary adds EOS, by SEP when it adds
	// SEP); without it such an input is an error.
	Truncate bool
	// NCtx is the context each input is evaluated in (0: the model's default).
	NCtx int
	// Normalize scales every embedding to unit Euclidean length (L2), as
	// llama-embedding's default --embd-normalize 2; otherwise they are raw.
	Normalize bool
}

// Embedding is one input's result.
type Embedding struct {
	Tokens    []int32 // the tokens evaluated (after truncation)
	Truncated bool    // Tokens are the start of a longer input
	// Vector is the pooled embedding [NEmbd] (nil with PoolingNone).
	Vector []float32
	// TokenVectors, with PoolingNone, are the embeddings of every token.
	TokenVectors [][]float32
}

// EmbedResult is the outcome of Embed.
type EmbedResult struct {
	Embeddings []Embedding // one per input, in order
	Pooling    Pooling     // the pooling applied
	Tokens     int         // tokens evaluated, all inputs
	Duration   time.Duration
}

// EmbeddingPooling is the pooling PoolingDefault stands for on this model:
// the file's {arch}.pooling_type, or PoolingNone.
func (m *Model) EmbeddingPooling() Pooling {
	if m.cfg.Pooling == PoolingDefault {
		return PoolingNone
	}
	return m.cfg.Pooling
}

// Embed computes embeddings the way llama.cpp does with embeddings on: each
// input is evaluated alone, in a session of its own (the model's other
// sessions and its prefix cache are not touched), and the hidden state after
// the final norm (what feeds the output matrix) is pooled. An empty list of
// inputs gives an empty result.
func (m *Model) Embed(ctx context.Context, o EmbedOptions) (*EmbedResult, error) {
	if m.enc != nil {
		return m.encoderEmbed(ctx, o)
	}
	start := time.Now()
	pool := o.Pooling
	if pool == PoolingDefault {
		pool = m.EmbeddingPooling()
	}
	switch {
	case pool == PoolingRank:
		return nil, errors.New("pooling rank needs a classification head (rerankers), which is not supported")
	case pool < PoolingDefault || pool > PoolingRank:
		return nil, fmt.Errorf("unknown pooling %d", int(pool))
	}
	nctx := o.NCtx
	if nctx < 0 {
		return nil, fmt.Errorf("context length %d is negative", nctx)
	}
	if nctx == 0 {
		nctx = m.nCtx
	}
	inputs, err := m.embedInputs(o, nctx)
	if err != nil {
		return nil, err
	}
	res := &EmbedResult{Embeddings: make([]Embedding, len(inputs)), Pooling: pool}
	if len(inputs) == 0 {
		res.Duration = time.Since(start)
		return res, nil
	}
	// One session for all inputs, reset between them; its cache holds the
	// longest input (rope factors still follow nctx, as for generation).
	s, err := m.NewSession(nctx)
	if err != nil {
		return nil, err
	}
	s.hiddenOut = true
	d := m.cfg.NEmbd
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Reset()
		n := len(in.Tokens)
		h := make([]float32, n*d) // the embedding may keep it
		if err := s.evalHidden(in.Tokens, h); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		e := in
		e.pool(pool, h, n, d)
		if o.Normalize {
			e.normalize()
		}
		res.Embeddings[i] = e
		res.Tokens += n
	}
	res.Duration = time.Since(start)
	return res, nil
}

// pool sets e's vector (for PoolingNone, its token vectors) from h, the
// hidden states of its n tokens, d values each; they share h's memory.
// PoolingRank is left to the caller.
func (e *Embedding) pool(pool Pooling, h []float32, n, d int) {
	switch pool {
	case PoolingNone:
		e.TokenVectors = make([][]float32, n)
		for t := range e.TokenVectors {
			e.TokenVectors[t] = h[t*d : (t+1)*d : (t+1)*d]
		}
	case PoolingMean:
		e.Vector = meanRows(h, n, d)
	case PoolingCLS:
		e.Vector = h[:d:d]
	case PoolingLast:
		e.Vector = h[(n-1)*d:]
	}
}

// embedInputs tokenizes (or checks) the inputs and applies the context limit.
func (m *Model) embedInputs(o EmbedOptions, nctx int) ([]Embedding, error) {
	if o.Tokens != nil && o.Inputs != nil {
		return nil, errors.New("give Inputs or Tokens, not both")
	}
	var out []Embedding
	if o.Tokens != nil {
		for i, ids := range o.Tokens {
			for _, t := range ids {
				if t < 0 || int(t) >= m.cfg.NVocab {
					return nil, fmt.Errorf("input %d: token id %d out of range [0, %d)", i, t, m.cfg.NVocab)
				}
			}
			out = append(out, Embedding{Tokens: ids})
		}
	} else {
		for i, text := range o.Inputs {
			ids, err := m.tok.Encode(text, true, true)
			if err != nil {
				return nil, fmt.Errorf("input %d: tokenize: %w", i, err)
			}
			out = append(out, Embedding{Tokens: ids})
		}
	}
	for i := range out {
		e := &out[i]
		switch {
		case len(e.Tokens) == 0:
			return nil, fmt.Errorf("input %d is empty (no tokens)", i)
		case len(e.Tokens) <= nctx:
		case !o.Truncate:
			return nil, &InputTooLongError{Input: i, Tokens: len(e.Tokens), NCtx: nctx}
		default:
			ids := append([]int32(nil), e.Tokens[:nctx]...)
			if o.Tokens == nil && m.tok.AddEOS() {
				ids[nctx-1] = m.tok.EOS()
			} else if o.Tokens == nil && m.tok.AddSEP() && m.tok.SEP() >= 0 {
				ids[nctx-1] = m.tok.SEP() // WordPiece: the input still ends with [SEP]
			}
			e.Tokens, e.Truncated = ids, true
		}
	}
	return out, nil
}

// InputTooLongError is Embed's error for an input longer than the context
// when truncation is off.
type InputTooLongError struct {
	Input, Tokens, NCtx int
}

func (e *InputTooLongError) Error() string {
	return fmt.Sprintf("input %d has %d tokens, more than the context length %d (truncation is off)", e.Input, e.Tokens, e.NCtx)
}

// evalHidden evaluates tokens from position s.pos in batches of the
// session's size and writes every token's final-normed hidden state to
// out ([len(tokens)][NEmbd]).
func (s *Session) evalHidden(tokens []int32, out []float32) error {
	if s.pos+len(tokens) > s.nCtx {
		return fmt.Errorf("context full: %d positions used + %d new tokens > context length %d", s.pos, len(tokens), s.nCtx)
	}
	d, nb := s.model.cfg.NEmbd, s.st.nBatch
	for b := 0; b < len(tokens); b += nb {
		chunk := tokens[b:min(b+nb, len(tokens))]
		n := len(chunk)
		s.forward(chunk, 0, out[b*d:(b+n)*d])
		s.pos += n
		s.tokens = append(s.tokens[:s.pos-n], chunk...)
	}
	return nil
}

// meanRows is the mean of n rows of d values (summed in float64).
func meanRows(h []float32, n, d int) []float32 {
	out := make([]float32, d)
	for j := 0; j < d; j++ {
		sum := 0.0
		for t := 0; t < n; t++ {
			sum += float64(h[t*d+j])
		}
		out[j] = float32(sum / float64(n))
	}
	return out
}

// NormalizeL2 scales v in place to unit Euclidean length, as llama.cpp's
// common_embd_normalize(…, 2) does (sum of squares in float64); a zero
// vector stays zero.
func NormalizeL2(v []float32) {
	sum := 0.0
	for _, x := range v {
		sum += float64(x * x)
	}
	norm := float32(0)
	if sum > 0 {
		norm = float32(1 / math.Sqrt(sum))
	}
	for i := range v {
		v[i] *= norm
	}
}

// normalize scales e's vector and each token vector to unit L2 norm.
func (e *Embedding) normalize() {
	NormalizeL2(e.Vector)
	for _, v := range e.TokenVectors {
		NormalizeL2(v)
	}
}

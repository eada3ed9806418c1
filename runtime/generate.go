package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/runtime/gbnf"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// GenerateOptions describe one generation.
type GenerateOptions struct {
	Prompt    string  // tokenized with BOS as the vocabulary says, special tokens parsed
	Tokens    []int32 // if set, used instead of Prompt
	MaxTokens int     // tokens to generate; -1 (or 0): until end of generation or the context is full
	// PromptOnly evaluates the prompt (filling the cache, timing it) and
	// generates nothing, like llama-cli -n 0; StopReason is "length".
	PromptOnly bool
	Sampler    SamplerOptions
	Stop       []string // stop strings: generation ends when the text contains one; it is removed
	NCtx       int      // context of the session Model.Generate makes (0: the model's default)
	// Logprobs attaches to every Token the log-probability of the chosen
	// token and of the TopLogprobs most likely ones (at most 20), from the
	// log-softmax of the model's raw logits over the whole vocabulary, as
	// llama-server reports them (before penalties, temperature and filters).
	Logprobs    bool
	TopLogprobs int
	// Grammar, when set, constrains the output to its JSON documents: every
	// step, tokens that cannot continue a valid document are masked before
	// sampling (after Logprobs read the raw logits), end-of-generation
	// tokens only once it is complete, and the generation stops ("stop")
	// as soon as nothing can follow. With MaxTokens reached first, Text is
	// an unfinished document (StopReason "length"), as llama-server does.
	Grammar *grammar.Grammar
	// GBNF, when set (and Grammar is not), constrains the output to the
	// grammar's language the same way: masked before sampling, end of
	// generation only once complete, "stop" when nothing can follow.
	GBNF *gbnf.Grammar
	// Literal keeps the model's output text as its tokens spell it. By
	// default a gpt-oss (harmony) reply is rewritten for the chat layer:
	// the analysis channel as <think>…</think>, a call as <tool_call>…;
	// raw completions set Literal and get the format's own text, as
	// llama-server prints it.
	Literal bool

	// force, when set, constrains sampling like Grammar (tests: a
	// random-weight model made to write a given token stream).
	force constraint
}

// TokenLogprob is one token's log-probability.
type TokenLogprob struct {
	ID      int32
	Piece   []byte // the token's bytes (do not modify)
	Logprob float32
}

// Token is one generated token as streamed to the callback.
type Token struct {
	ID   int32
	Text string // printable text, UTF-8 complete; may be empty (held back) or carry held-back text
	// With GenerateOptions.Logprobs: the chosen token's log-probability and
	// the most likely alternatives, best first.
	Logprob     *TokenLogprob
	TopLogprobs []TokenLogprob
}

// GenerateResult is the outcome of a generation.
type GenerateResult struct {
	PromptTokens   []int32
	Tokens         []int32 // generated ids, including the end-of-generation id if one stopped it
	Text           string  // generated text without stop strings and end-of-generation text
	StopReason     string  // "stop" (end of generation or stop string), "length", "cancel"
	StopString     string  // the stop string that ended the generation ("" for any other end)
	CachedTokens   int     // prompt tokens reused (the session's cache or the model's prefix cache)
	PromptDuration time.Duration
	GenDuration    time.Duration
}

// Generate makes a new session and generates a continuation of the prompt.
// onToken (may be nil) is called once per generated token; an error from it
// ends the generation and is returned with the partial result.
func (m *Model) Generate(ctx context.Context, o GenerateOptions, onToken func(Token) error) (*GenerateResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	nctx := o.NCtx
	if nctx == 0 {
		nctx = m.nCtx
	}
	prompt, err := m.promptTokens(o)
	if err != nil {
		return nil, err
	}
	if len(prompt) > nctx {
		return nil, badRequest("prompt has %d tokens, more than the context length %d", len(prompt), nctx)
	}
	s, err := m.NewSession(nctx)
	if err != nil {
		return nil, err
	}
	o.Tokens = prompt
	return s.Generate(ctx, o, onToken)
}

func (m *Model) promptTokens(o GenerateOptions) ([]int32, error) {
	if o.Tokens != nil {
		if len(o.Tokens) == 0 {
			return nil, errors.New("empty prompt")
		}
		return o.Tokens, nil
	}
	ids, err := m.tok.Encode(o.Prompt, m.tok.AddBOS(), true)
	if err != nil {
		return nil, fmt.Errorf("tokenize prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("empty prompt")
	}
	return ids, nil
}

// evalPrompt evaluates a prompt in pieces of whole evaluation chunks (so
// the numerics are those of one eval), stopping between pieces when ctx
// ends: a long prompt on a large model is minutes of work. In a batch a
// piece is one prompt chunk, the tokens one step takes of a sequence, so a
// cancelled request leaves after the step under way (its chunks are the
// same as in longer pieces: the numbers do not change).
func (s *Session) evalPrompt(ctx context.Context, tokens []int32) error {
	step := maxBatch
	switch {
	case s.batch != nil:
		step = s.batch.chunk
	case s.st != nil:
		step = s.st.nBatch
	}
	for len(tokens) > 0 {
		if ctx.Err() != nil {
			return nil
		}
		end := s.pos + len(tokens)
		n := s.recPieceEnd(min(step, len(tokens)), end)
		if _, err := s.eval(tokens[:n], false); err != nil {
			return err
		}
		tokens = tokens[n:]
		if isCheckpoint(s.pos, end) {
			s.checkpoint() // recurrent models only (recsnap.go)
		}
	}
	return nil
}

// Generate continues the session's sequence with the prompt and generates.
// Cached positions that match the start of the prompt are reused; the rest
// of the cache is dropped. o.NCtx is ignored (the session has its size).
// It fails when the model file was truncated since it was loaded.
func (s *Session) Generate(ctx context.Context, o GenerateOptions, onToken func(Token) error) (*GenerateResult, error) {
	m := s.model
	if err := o.Validate(); err != nil { // before any work
		return nil, err
	}
	if err := m.CheckFile(); err != nil { // cut underneath its mapping: an error, not a fault
		return nil, err
	}
	prompt, err := m.promptTokens(o)
	if err != nil {
		return nil, err
	}
	if len(prompt) > s.nCtx {
		return nil, badRequest("prompt has %d tokens, more than the context length %d", len(prompt), s.nCtx)
	}
	res := &GenerateResult{PromptTokens: prompt}
	if s.batch != nil { // the batch's steps wait briefly for this session's tokens
		s.batch.enter(s)
		defer s.batch.leave(s)
	}

	if err := ctx.Err(); err != nil {
		res.StopReason = "cancel"
		return res, nil
	}
	// Reuse the longest known prefix: the session's own cached positions or
	// a snapshot from the model's prefix cache; always evaluate at least one
	// token for logits.
	t0 := time.Now()
	n, fromCache, err := s.lookupPrefix(prompt)
	if err != nil {
		return nil, err
	}
	res.CachedTokens = n
	if err := s.evalPrompt(ctx, prompt[n:]); err != nil {
		return nil, err
	}
	if ctx.Err() != nil { // the positions evaluated so far stay valid
		res.StopReason = "cancel"
		res.PromptDuration = time.Since(t0)
		return res, nil
	}
	t1 := time.Now()
	res.PromptDuration = t1.Sub(t0)
	reused := 0
	if fromCache {
		reused = n
	}
	m.notePrompt(reused, len(prompt)-n, res.PromptDuration)
	// Keep the conversation's state for later requests (the sequence as it
	// stands when the generation ends: prompt and reply).
	defer s.storePrefix()

	if o.PromptOnly {
		res.StopReason = "length"
		return res, nil
	}
	smp := NewSampler(o.Sampler)
	if err := smp.UseVocab(m.tok); err != nil {
		return nil, err
	}
	for _, id := range prompt {
		smp.Accept(id)
	}
	dec := m.tok.NewStreamDecoder()
	var harmony *harmonyOut // gpt-oss's channels as <think> (harmony.go); nil for other vocabularies
	var g4 *gemma4Out       // Gemma 4's thought channel and calls (gemma4out.go); nil for other vocabularies
	if !o.Literal {
		harmony = newHarmonyOut(m.tok)
		g4 = newGemma4Out(m.tok)
	}
	stop := stopMatcher{stops: o.Stop}
	var text strings.Builder
	var lp *TokenLogprob
	var top []TokenLogprob
	emit := func(id int32, t string) error {
		text.WriteString(t)
		if onToken != nil {
			return onToken(Token{ID: id, Text: t, Logprob: lp, TopLogprobs: top})
		}
		return nil
	}
	maxTok := o.MaxTokens
	if maxTok <= 0 {
		maxTok = -1
	}
	var gm constraint
	var masked []float32
	switch {
	case o.force != nil:
		gm = o.force
	case o.Grammar != nil:
		gm = grammar.NewTokenMatcher(o.Grammar, m.GrammarVocab())
	case o.GBNF != nil:
		gbm, err := o.GBNF.NewMatcher(m.gbnfVocab())
		if err != nil {
			return nil, err
		}
		gm = gbm
	}
	for {
		if ctx.Err() != nil {
			res.StopReason = "cancel"
			tail := dec.Flush()
			if g4 != nil {
				tail = g4.piece(tail) + g4.flush()
			}
			text.WriteString(stop.pending + tail)
			if harmony != nil {
				text.WriteString(harmony.flush())
			}
			break
		}
		if o.Logprobs {
			// The distribution the token is drawn from, before the sampler
			// changes the logits.
			lp, top = m.logprobs(s.last, o.TopLogprobs)
		}
		logits, err := maskLogits(gm, s.last, &masked)
		if err != nil {
			res.Text = text.String()
			return res, err
		}
		id := smp.Sample(logits)
		if gm != nil {
			if err := gm.Accept(id); err != nil {
				res.Text = text.String()
				return res, err
			}
		}
		if o.Logprobs {
			lp = &TokenLogprob{ID: id, Piece: m.tok.Piece(id), Logprob: logprobOf(s.last, id)}
		}
		smp.Accept(id)
		res.Tokens = append(res.Tokens, id)

		if m.tok.IsEOG(id) {
			res.StopReason = "stop"
			tail := dec.Flush()
			if harmony != nil { // <|call|> closes a tool call
				tail += harmony.piece(id, "") + harmony.flush()
			}
			if g4 != nil {
				tail = g4.piece(tail) + g4.flush()
			}
			if err := emit(id, stop.flush(tail)); err != nil {
				res.Text = text.String()
				return res, err
			}
			break
		}
		// A control token (<s>, <|im_start|>, ...) generated mid-answer
		// prints nothing, as llama.cpp renders pieces without special
		// tokens unless asked; its id is still in Tokens.
		var chunk string
		if !m.tok.IsControl(id) {
			chunk = dec.Add(id)
		}
		if harmony != nil {
			chunk = harmony.piece(id, chunk)
		}
		if g4 != nil {
			chunk = g4.piece(chunk)
		}
		piece, hit := stop.add(chunk)
		done := gm != nil && gm.Finished() // the document is complete: nothing may follow
		last := hit || done || len(res.Tokens) == maxTok || s.pos >= s.nCtx
		if last && !hit {
			tail := dec.Flush()
			if harmony != nil {
				tail += harmony.flush()
			}
			if g4 != nil {
				tail = g4.piece(tail) + g4.flush()
			}
			piece += stop.flush(tail)
		}
		if err := emit(id, piece); err != nil {
			res.Text = text.String()
			return res, err
		}
		if hit || done {
			res.StopReason = "stop"
			if hit {
				res.StopString = stop.matched
			}
			break
		}
		if last {
			res.StopReason = "length"
			break
		}
		if _, err := s.eval([]int32{id}, false); err != nil {
			res.Text = text.String()
			return res, err
		}
	}
	res.Text = text.String()
	res.GenDuration = time.Since(t1)
	return res, nil
}

// stopMatcher holds back text that could be the start of a stop string.
type stopMatcher struct {
	stops   []string
	pending string
	matched string // the stop string add found
}

// add appends text and returns what can be emitted; hit reports that a stop
// string was found (the returned text is everything before it).
func (m *stopMatcher) add(text string) (out string, hit bool) {
	m.pending += text
	first := -1
	for _, s := range m.stops {
		if s == "" {
			continue
		}
		if i := strings.Index(m.pending, s); i >= 0 && (first < 0 || i < first) {
			first, m.matched = i, s
		}
	}
	if first >= 0 {
		out, m.pending = m.pending[:first], ""
		return out, true
	}
	hold := 0
	for _, s := range m.stops {
		for l := min(len(s)-1, len(m.pending)); l > hold; l-- {
			if strings.HasSuffix(m.pending, s[:l]) {
				hold = l
				break
			}
		}
	}
	out = m.pending[:len(m.pending)-hold]
	m.pending = m.pending[len(m.pending)-hold:]
	return out, false
}

// flush returns the held-back text plus tail (no stop string can follow).
func (m *stopMatcher) flush(tail string) string {
	out := m.pending + tail
	m.pending = ""
	return out
}

// logSumExp is log(sum(exp(l))) over the logits, in float64.
func logSumExp(l []float32) float64 {
	mx := float32(math.Inf(-1))
	for _, v := range l {
		mx = max(mx, v)
	}
	sum := 0.0
	for _, v := range l {
		sum += math.Exp(float64(v - mx))
	}
	return float64(mx) + math.Log(sum)
}

// logprobOf is the log-softmax of logits l at id.
func logprobOf(l []float32, id int32) float32 {
	return float32(float64(l[id]) - logSumExp(l))
}

// logprobs returns the n most likely tokens of logits l with their
// log-probabilities, best first (ties: lower id first); the first result is
// unused here (the chosen token's entry is made after sampling).
func (m *Model) logprobs(l []float32, n int) (*TokenLogprob, []TokenLogprob) {
	if n == 0 {
		return nil, nil
	}
	lse := logSumExp(l)
	top := make([]TokenLogprob, 0, n+1)
	for i, v := range l {
		if len(top) == n && v <= l[top[n-1].ID] {
			continue
		}
		e := TokenLogprob{ID: int32(i)}
		j := len(top)
		top = append(top, e)
		for j > 0 && l[top[j-1].ID] < v {
			top[j] = top[j-1]
			j--
		}
		top[j] = e
		if len(top) > n {
			top = top[:n]
		}
	}
	for i := range top {
		top[i].Piece = m.tok.Piece(top[i].ID)
		top[i].Logprob = float32(float64(l[top[i].ID]) - lse)
	}
	return nil, top
}

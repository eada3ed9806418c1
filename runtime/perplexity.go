package runtime

import (
	"context"
	"fmt"
	"math"
)

// NLL is the negative log-likelihood of target under a row of logits,
// computed as llama-perplexity does: the max in f32, exp in f32 and the sum
// of exponentials in f64.
func NLL(logits []float32, target int32) float64 {
	mx := logits[0]
	for _, v := range logits[1:] {
		mx = max(mx, v)
	}
	sum := 0.0
	for _, v := range logits {
		sum += float64(float32(math.Exp(float64(v - mx))))
	}
	return -(float64(logits[target]-mx) - math.Log(sum))
}

// LogProbs returns log softmax of a row of logits (f64 accumulation).
func LogProbs(logits []float32) []float64 {
	mx := logits[0]
	for _, v := range logits[1:] {
		mx = max(mx, v)
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	ls := math.Log(sum)
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = float64(v-mx) - ls
	}
	return out
}

// PerplexityResult is the outcome of Perplexity.
type PerplexityResult struct {
	PPL        float64
	Chunks     int
	Scored     int       // tokens scored
	Cumulative []float64 // PPL after each chunk
	NLL        []float64 // per scored token, in order
}

// Perplexity computes llama-perplexity's figure for text with chunks of
// nCtx tokens (see shared/ref/README.md §5): the text is tokenized with BOS
// only if the vocabulary adds BOS and special tokens not parsed; each chunk's
// first token becomes BOS if the vocabulary adds BOS; positions nCtx/2 ..
// nCtx-2 are scored. progress (may be nil) is called after each chunk.
func (m *Model) Perplexity(ctx context.Context, text string, nCtx int, progress func(chunk int, ppl float64)) (*PerplexityResult, error) {
	ids, err := m.tok.Encode(text, m.tok.AddBOS(), false)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %w", err)
	}
	return m.PerplexityTokens(ctx, ids, nCtx, progress)
}

// PerplexityTokens is Perplexity over already tokenized text.
func (m *Model) PerplexityTokens(ctx context.Context, ids []int32, nCtx int, progress func(chunk int, ppl float64)) (*PerplexityResult, error) {
	if nCtx < 4 {
		return nil, fmt.Errorf("perplexity context %d is too small (need at least 4)", nCtx)
	}
	nChunks := len(ids) / nCtx
	if nChunks == 0 {
		return nil, fmt.Errorf("the text has %d tokens, fewer than one chunk of %d", len(ids), nCtx)
	}
	s, err := m.NewSession(nCtx)
	if err != nil {
		return nil, err
	}
	res := &PerplexityResult{Chunks: nChunks}
	first := nCtx / 2
	nv := m.cfg.NVocab
	chunk := make([]int32, nCtx)
	sum := 0.0
	for c := 0; c < nChunks; c++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		copy(chunk, ids[c*nCtx:(c+1)*nCtx])
		if m.tok.AddBOS() {
			chunk[0] = m.tok.BOS()
		}
		s.Reset()
		logits, err := s.Eval(chunk, true)
		if err != nil {
			return nil, err
		}
		for j := first; j < nCtx-1; j++ {
			nll := NLL(logits[j*nv:(j+1)*nv], ids[c*nCtx+j+1])
			res.NLL = append(res.NLL, nll)
			sum += nll
		}
		res.Scored = len(res.NLL)
		ppl := math.Exp(sum / float64(res.Scored))
		res.Cumulative = append(res.Cumulative, ppl)
		if progress != nil {
			progress(c+1, ppl)
		}
	}
	res.PPL = res.Cumulative[len(res.Cumulative)-1]
	return res, nil
}

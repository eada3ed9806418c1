package runtime

import (
	"context"
	"math"
	"testing"
)

// Greedy decoding with logprobs: the chosen token is the first of the top
// list with the same log-probability, the list is sorted, its
// probabilities sum to at most 1, and the chosen token's log-probability
// is the log-softmax of the logits a separate Eval gives.
func TestGenerateLogprobs(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{Threads: 1})
	var toks []Token
	res, err := m.Generate(context.Background(), GenerateOptions{Prompt: "Once upon a time", MaxTokens: 8,
		Logprobs: true, TopLogprobs: 5}, func(tk Token) error { toks = append(toks, tk); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != len(res.Tokens) {
		t.Fatalf("%d callbacks for %d tokens", len(toks), len(res.Tokens))
	}
	for i, tk := range toks {
		if tk.Logprob == nil || tk.Logprob.ID != tk.ID || len(tk.TopLogprobs) != 5 {
			t.Fatalf("token %d: logprob %+v, %d alternatives", i, tk.Logprob, len(tk.TopLogprobs))
		}
		if tk.TopLogprobs[0].ID != tk.ID || tk.TopLogprobs[0].Logprob != tk.Logprob.Logprob {
			t.Errorf("token %d: greedy chose %d (%v) but the best is %d (%v)", i, tk.ID, tk.Logprob.Logprob,
				tk.TopLogprobs[0].ID, tk.TopLogprobs[0].Logprob)
		}
		sum := 0.0
		for j, a := range tk.TopLogprobs {
			if a.Logprob > 0 || (j > 0 && a.Logprob > tk.TopLogprobs[j-1].Logprob) {
				t.Errorf("token %d: alternative %d logprob %v out of order or > 0", i, j, a.Logprob)
			}
			sum += math.Exp(float64(a.Logprob))
		}
		if sum > 1+1e-5 {
			t.Errorf("token %d: top probabilities sum to %v", i, sum)
		}
	}
	// Against an independent evaluation of the first step.
	s, _ := m.NewSession(0)
	logits, err := s.Eval(res.PromptTokens, false)
	if err != nil {
		t.Fatal(err)
	}
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	want := float64(logits[res.Tokens[0]]) - mx - math.Log(sum)
	if d := math.Abs(want - float64(toks[0].Logprob.Logprob)); d > 1e-5 {
		t.Errorf("first token logprob %v, log-softmax of the logits %v", toks[0].Logprob.Logprob, want)
	}
	if _, err := m.Generate(context.Background(), GenerateOptions{Prompt: "x", MaxTokens: 1, Logprobs: true, TopLogprobs: 21}, nil); err == nil {
		t.Error("top logprobs 21 accepted")
	}
}

package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// On the real runtime, a generation ended by cancellation (as generate
// ends one at the thinking budget) stays cached: the continuation, prompted
// with the first prompt, the text so far and the closing tag, reuses all
// of that but the tag instead of evaluating it again.
func TestThinkBudgetContinuationReusesSession(t *testing.T) {
	m, err := RuntimeBackend{}.Load(filepath.Join(realModelsDir(t), realModel+".gguf"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := defaultRequest()
	req.Prompt, req.Temperature = "Once upon a time", 0
	var text strings.Builder
	n := 0
	res, err := m.Generate(ctx, req, func(s string) error {
		text.WriteString(s)
		if n++; n == 12 {
			cancel()
		}
		return nil
	})
	if err != nil || res.StopReason != "cancel" || res.Tokens != 12 {
		t.Fatalf("first: %+v %v", res, err)
	}
	next := req
	next.Prompt, next.MaxTokens = req.Prompt+text.String()+"\n"+thinkClose+"\n\n", 4
	res2, err := m.Generate(context.Background(), next, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	count := m.Meta().CountTokens
	whole, _ := count(next.Prompt)
	before, _ := count(req.Prompt + text.String())
	// The text's tokens may not re-tokenize exactly as generated: allow a
	// couple of positions at the seam.
	if res2.PromptTokens != whole || res2.CachedTokens < before-2 || res2.CachedTokens >= whole {
		t.Errorf("continuation: %d prompt tokens, %d cached; %d before the tag", res2.PromptTokens, res2.CachedTokens, before)
	}
}

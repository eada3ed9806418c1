package chat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Fit drops the oldest turns (never system messages, never the last
// message) until the prompt is under the limit.
func TestFitDropsOldestTurns(t *testing.T) {
	tm, err := Builtin("chatml", "", "")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) (int, error) { return len(strings.Fields(s)), nil }
	msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "one one one"}, {Role: "assistant", Content: "two two two"},
		{Role: "user", Content: "three three three"}, {Role: "assistant", Content: "four four four"}, {Role: "user", Content: "five"}}
	full, _ := tm.Render(msgs, true)
	n, _ := words(full)
	p, kept, err := tm.Fit(msgs, Options{AddGenerationPrompt: true}, words, n+1)
	if err != nil || len(kept) != len(msgs) || p != full {
		t.Fatalf("fits already: %d kept, %v", len(kept), err)
	}
	p, kept, err = tm.Fit(msgs, Options{AddGenerationPrompt: true}, words, n-3)
	if err != nil {
		t.Fatal(err)
	}
	if kept[0].Role != "system" || kept[len(kept)-1].Content != "five" || len(kept) >= len(msgs) {
		t.Fatalf("kept %+v", kept)
	}
	if strings.Contains(p, "one one one") || !strings.Contains(p, "five") {
		t.Fatalf("prompt %q: the oldest turn should be gone, the last kept", p)
	}
	if c, _ := words(p); c >= n-3 {
		t.Fatalf("prompt has %d words, limit %d", c, n-3)
	}
	if _, _, err := tm.Fit(msgs, Options{AddGenerationPrompt: true}, words, 2); err == nil || !strings.Contains(err.Error(), "context holds 2") {
		t.Fatalf("nothing fits: %v", err)
	}
}

// fitSlow is Fit's definition step by step (the old quadratic loop): drop
// the oldest turn until the prompt fits and, once one is dropped, the kept
// history starts at a user message (or is the last message alone).
func fitSlow(t *Template, msgs []Message, o Options, count func(string) (int, error), limit int) (string, int, bool) {
	kept := msgs
	startsAtUser := func() bool {
		for _, m := range kept[:len(kept)-1] {
			if m.Role != "system" {
				return m.Role == "user"
			}
		}
		return true
	}
	for {
		if len(kept) == len(msgs) || startsAtUser() {
			p, _ := t.RenderOptions(kept, o)
			if n, _ := count(p); n < limit {
				return p, len(kept), true
			}
		}
		drop := -1
		for i, m := range kept[:len(kept)-1] {
			if m.Role != "system" {
				drop = i
				break
			}
		}
		if drop < 0 {
			return "", 0, false
		}
		kept = append(append([]Message{}, kept[:drop]...), kept[drop+1:]...)
	}
}

// FitContext keeps what the step-by-step definition keeps, for random
// conversations and limits, with and without the byte bound.
func TestFitMatchesDefinition(t *testing.T) {
	tm, err := Builtin("chatml", "", "")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) (int, error) { return len(strings.Fields(s)) + 1, nil } // +1: a BOS
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		var msgs []Message
		for i, n := 0, 1+rng.IntN(30); i < n; i++ {
			role := []string{"user", "assistant", "system"}[rng.IntN(3)]
			msgs = append(msgs, Message{Role: role, Content: strings.Repeat("w ", rng.IntN(40))})
		}
		o := Options{AddGenerationPrompt: true}
		full, _ := tm.RenderOptions(msgs, o)
		n, _ := words(full)
		limit := 1 + rng.IntN(n+5)
		wantP, wantN, ok := fitSlow(tm, msgs, o, words, limit)
		// Every word here is 2 bytes with its space: at most 2 bytes a token.
		for _, mtb := range []int{0, 2} {
			p, kept, err := tm.FitContext(context.Background(), msgs, o, words, limit, mtb)
			if !ok {
				if err == nil || !strings.Contains(err.Error(), "context holds") {
					t.Fatalf("trial %d: nothing fits, got %d kept, %v", trial, len(kept), err)
				}
				continue
			}
			if err != nil || p != wantP || len(kept) != wantN {
				t.Fatalf("trial %d limit %d mtb %d: kept %d (%v), want %d", trial, limit, mtb, len(kept), err, wantN)
			}
		}
	}
}

// Trimming a long history costs time linear in it: the text counted over
// the whole trim is a few times the full prompt, not one prompt per
// dropped turn (the issue: 2,000 messages took a minute), and with the
// byte bound the turns that cannot fit are never counted at all.
func TestFitLinear(t *testing.T) {
	tm, err := Builtin("chatml", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	for i := 0; i < 2000; i++ {
		msgs = append(msgs, Message{Role: []string{"user", "assistant"}[i%2], Content: fmt.Sprintf("turn %d: %s", i, strings.Repeat("word ", 10))})
	}
	full, _ := tm.Render(msgs, true)
	counted, calls := 0, 0
	words := func(s string) (int, error) {
		counted += len(s)
		calls++
		return len(strings.Fields(s)), nil
	}
	for _, mtb := range []int{0, 5} {
		counted, calls = 0, 0
		p, kept, err := tm.FitContext(context.Background(), msgs, Options{AddGenerationPrompt: true}, words, 1000, mtb)
		if err != nil || len(kept) < 10 || !strings.Contains(p, "turn 1999:") {
			t.Fatalf("mtb %d: %d kept, %v", mtb, len(kept), err)
		}
		if counted > 4*len(full) {
			t.Errorf("mtb %d: counted %d bytes in %d calls for a %d-byte history", mtb, counted, calls, len(full))
		}
		if mtb > 0 && counted > 10*len(p) {
			t.Errorf("mtb %d: counted %d bytes for a %d-byte prompt: the turns that cannot fit were tokenized", mtb, counted, len(p))
		}
		t.Logf("mtb %d: %d calls, %d bytes counted, history %d bytes, prompt %d", mtb, calls, counted, len(full), len(p))
	}
	// A context that ends stops the trim.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := tm.FitContext(ctx, msgs, Options{}, words, 1000, 0); err != context.Canceled {
		t.Errorf("canceled: %v", err)
	}
}

// alternating is a template that refuses a conversation whose roles do not
// alternate user/assistant from the first message, as Mistral's, Llama 2's
// and Gemma's templates do (with raise_exception).
const alternating = `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}`

// Fit drops whole exchanges: what it keeps of the history starts at a user
// message, so a template that wants user/assistant alternation renders it
// (dropping only the oldest user message left an assistant message first:
// a 400 "Conversation roles must alternate" on every long chat).
func TestFitKeepsAUserMessageFirst(t *testing.T) {
	tm, err := New(alternating, "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) (int, error) { return len(strings.Fields(s)), nil }
	msgs := []Message{{Role: "user", Content: "one"}, {Role: "assistant", Content: "two two two two"},
		{Role: "user", Content: "three"}, {Role: "assistant", Content: "four"}, {Role: "user", Content: "five"}}
	full, err := tm.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := words(full)
	for _, mtb := range []int{0, 8} {
		// Dropping "one" alone would fit (n-2 words), but leaves "two" first.
		p, kept, err := tm.FitContext(context.Background(), msgs, Options{AddGenerationPrompt: true}, words, n-1, mtb)
		if err != nil {
			t.Fatalf("mtb %d: %v", mtb, err)
		}
		if len(kept) != 3 || kept[0].Content != "three" || strings.Contains(p, "two") {
			t.Fatalf("mtb %d: kept %+v, want the history from the user message \"three\" on", mtb, kept)
		}
	}
}

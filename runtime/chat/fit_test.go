package chat

import (
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

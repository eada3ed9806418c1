package chat

import (
	"strings"
	"testing"
	"time"
)

// TestHarmony: gpt-oss's format as its template renders a conversation
// without tools (system turn with today's date, the system message as the
// developer's instructions, earlier answers on the final channel), the
// detection of its template, and the split of a reply into the analysis
// (reasoning) and final (answer) channels.
func TestHarmony(t *testing.T) {
	if got := Detect(`{{- "<|start|>system<|message|>" }} ... "<|channel|>final<|message|>"`); got != "harmony" {
		t.Fatalf("Detect: %q", got)
	}
	tm, err := Builtin("harmony", "<|startoftext|>", "<|return|>")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "2+2?"}}
	got, err := tm.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: " +
		time.Now().Format("2006-01-02") + "\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>" +
		"<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>" +
		"<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|end|>" +
		"<|start|>user<|message|>2+2?<|end|><|start|>assistant"
	if got != want {
		t.Fatalf("render:\n%q\nwant\n%q", got, want)
	}
	// No system message: no developer turn; a closing assistant turn ends with <|return|>.
	got, err = tm.Render([]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "developer") || !strings.HasSuffix(got, "<|start|>assistant<|channel|>final<|message|>Yo<|return|>") {
		t.Fatalf("render without system: %q", got)
	}
	if _, err := tm.Render([]Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "<|channel|>final<|message|>x"}}, true); err == nil {
		t.Error("channel tags in content accepted")
	}

	for _, c := range []struct{ out, reasoning, content string }{
		{"<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>", "Add them.", "4"},
		{"<|channel|>final<|message|>4", "", "4"},
		{"<|channel|>analysis<|message|>thinking so f", "thinking so f", ""},
		{"plain text", "", "plain text"},
		{"<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>", "x", ""},
	} {
		r, a := SplitHarmony(c.out)
		if r != c.reasoning || a != c.content {
			t.Errorf("SplitHarmony(%q) = %q, %q; want %q, %q", c.out, r, a, c.reasoning, c.content)
		}
	}
}

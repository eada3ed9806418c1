package chat

import (
	_ "embed"
	"testing"
)

// Qwen3.5's template (Qwen/Qwen3.5-4B's tokenizer_config.json, the copy in
// llama.cpp's models/templates at the reference commit).
//
//go:embed testdata/templates/qwen35.jinja
var tmplQwen35 string

// TestQwen35Template renders a conversation through the Jinja engine:
// ChatML turns, the reasoning of an assistant turn before the last user
// query dropped, and a generation prompt that opens a <think> block (or
// pre-fills an empty one with enable_thinking false). Expected text written
// by hand from the template.
func TestQwen35Template(t *testing.T) {
	tm := mustNew(t, tmplQwen35, "", "<|im_end|>")
	if Detect(tmplQwen35) != "qwen3" || !tm.SupportsThinking() {
		t.Errorf("Detect = %q, SupportsThinking %v; want qwen3, true", Detect(tmplQwen35), tm.SupportsThinking())
	}
	const turns = "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n" +
		"<|im_start|>user\nHello<|im_end|>\n" +
		"<|im_start|>assistant\nHi there<|im_end|>\n" +
		"<|im_start|>user\nWho are you<|im_end|>\n"
	off := false
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{AddGenerationPrompt: true}, turns + "<|im_start|>assistant\n<think>\n"},
		{Options{AddGenerationPrompt: true, EnableThinking: &off}, turns + "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{Options{}, turns},
	} {
		got, err := tm.RenderOptions(withThinking, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("render %+v:\n got %q\nwant %q", c.o, got, c.want)
		}
	}
}

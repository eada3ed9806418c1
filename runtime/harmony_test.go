package runtime

import "testing"

// TestHarmonyOut: a harmony reply's token stream becomes the analysis
// channel between <think> and </think> and the final channel as it is; the
// headers (role, channel names) print nothing; text outside the format
// passes unchanged.
func TestHarmonyOut(t *testing.T) {
	const ch, msg, end, start, call, constrain, txt = 1, 2, 3, 4, 5, 6, 100
	type tk struct {
		id   int32
		text string
	}
	run := func(toks []tk) string {
		h := &harmonyOut{channel: ch, message: msg, end: end, start: start, call: call}
		out := ""
		for _, k := range toks {
			out += h.piece(k.id, k.text)
		}
		return out + h.flush()
	}
	reply := []tk{{ch, ""}, {txt, "analysis"}, {msg, ""}, {txt, "Add "}, {txt, "them."}, {end, ""},
		{start, ""}, {txt, "assistant"}, {ch, ""}, {txt, "final"}, {msg, ""}, {txt, "4"}}
	if got, want := run(reply), "<think>Add them.</think>4"; got != want {
		t.Errorf("reply: %q, want %q", got, want)
	}
	if got := run([]tk{{txt, "plain "}, {txt, "text"}}); got != "plain text" {
		t.Errorf("plain: %q", got)
	}
	if got := run([]tk{{ch, ""}, {txt, "final"}, {msg, ""}, {txt, "only"}}); got != "only" {
		t.Errorf("final only: %q", got)
	}
	// A tool call (recipient in the role header or after the channel name)
	// becomes a hermes-style block; its header prints nothing.
	wantCall := `<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>`
	if got := run([]tk{{start, ""}, {txt, "assistant to=functions.f"}, {ch, ""}, {txt, "commentary json"}, {msg, ""}, {txt, `{"a": 1}`}, {call, ""}}); got != wantCall {
		t.Errorf("call in role header: %q", got)
	}
	if got := run([]tk{{ch, ""}, {txt, "analysis"}, {msg, ""}, {txt, "Use f."}, {end, ""}, {start, ""}, {txt, "assistant"}, {ch, ""},
		{txt, "commentary to=functions.f "}, {constrain, ""}, {txt, "json"}, {msg, ""}, {txt, `{"a": `}, {txt, `1}`}, {call, ""}}); got != "<think>Use f.</think>"+wantCall {
		t.Errorf("call after channel: %q", got)
	}
	// Right after the generation prompt (<|start|>assistant) the recipient is held until its channel token.
	if got := run([]tk{{txt, " to"}, {txt, "=functions.f"}, {ch, ""}, {txt, "commentary json"}, {msg, ""}, {txt, `{"a": 1}`}, {call, ""}}); got != wantCall {
		t.Errorf("leading recipient: %q", got)
	}
	if got := run([]tk{{txt, " to"}, {txt, "day"}}); got != " today" {
		t.Errorf("text like a recipient: %q", got)
	}
	if got := run([]tk{{txt, " to"}}); got != " to" {
		t.Errorf("held text at the end: %q", got)
	}
	// A message to another channel without a recipient prints its text only.
	if got := run([]tk{{start, ""}, {txt, "assistant"}, {ch, ""}, {txt, "commentary"}, {msg, ""}, {txt, "note"}}); got != "note" {
		t.Errorf("commentary: %q", got)
	}
}

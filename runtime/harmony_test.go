package runtime

import "testing"

// TestHarmonyOut: a harmony reply's token stream becomes the analysis
// channel between <think> and </think> and the final channel as it is; the
// headers (role, channel names) print nothing; text outside the format
// passes unchanged.
func TestHarmonyOut(t *testing.T) {
	const ch, msg, end, start, txt = 1, 2, 3, 4, 100
	type tk struct {
		id   int32
		text string
	}
	run := func(toks []tk) string {
		h := &harmonyOut{channel: ch, message: msg, end: end, start: start}
		out := ""
		for _, k := range toks {
			out += h.piece(k.id, k.text)
		}
		return out
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
	// A tool call's header ("to=functions.f", channel "commentary json") prints nothing.
	if got := run([]tk{{start, ""}, {txt, "assistant to=functions.f"}, {ch, ""}, {txt, "commentary json"}, {msg, ""}, {txt, "{}"}}); got != "{}" {
		t.Errorf("commentary: %q", got)
	}
}

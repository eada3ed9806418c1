package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHybridChatReuse: the second turn of a chat with a Gated DeltaNet
// hybrid (the qwen35 mini) evaluates only its new tokens, even though its
// history diverges from what the session evaluated right where turn 1's
// prompt ended (the client sends back an edited assistant message, as a
// template that renders past assistant turns differently does): the
// runtime goes back to the recurrent-state checkpoint at the end of turn
// 1's prompt. With the prefix cache off (idle sessions alone) and on.
func TestHybridChatReuse(t *testing.T) {
	dir := t.TempDir()
	writePresets(t, dir, "qwen35-mini")
	forPrefixCacheModes(t, func(t *testing.T, pc *int64) { testHybridReuse(t, dir, pc) })
}

func testHybridReuse(t *testing.T, dir string, prefixCache *int64) {
	serve := func() string {
		_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{PrefixCache: prefixCache})
		return ts.URL
	}
	url := serve()

	type usage struct{ prompt, cached int }
	chat := func(msgs string) (usage, string) {
		r := postChat(t, url, `{"model":"qwen35-mini","temperature":0,"max_tokens":8,"logprobs":true,"top_logprobs":5,"messages":[`+msgs+`]}`)
		// The reply with its log-probabilities: equal only if the logits are.
		return usage{r.Usage.Prompt, r.Usage.Details.Cached}, r.Choices[0].Message.Content + string(r.Choices[0].Logprobs)
	}
	msg := func(role, content string) string {
		b, _ := json.Marshal(content)
		return `{"role":"` + role + `","content":` + string(b) + `}`
	}
	u1 := msg("user", strings.Repeat("Lily had a dog and a red ball. ", 4)+"What did she do?")
	a, reply := chat(u1)
	if a.prompt < 70 || a.cached != 0 {
		t.Fatalf("turn 1: %d prompt tokens, %d cached; want over 70, none cached", a.prompt, a.cached)
	}
	// The assistant message as the client sends it back differs from the
	// reply from its first character on.
	turn2 := u1 + "," + msg("assistant", "Edited: "+strings.Repeat("x", len(reply)%7)) + "," + msg("user", "And then?")
	b, reply2 := chat(turn2)
	if b.cached != a.prompt {
		t.Errorf("turn 1 prompt %d tokens; turn 2 prompt %d, %d reused (want %d: evaluate only from the end of turn 1's prompt)",
			a.prompt, b.prompt, b.cached, a.prompt)
	}
	// The same request to a new server evaluates it all: the same reply
	// and log-probabilities.
	url = serve()
	if c, fresh := chat(turn2); c.cached != 0 || fresh != reply2 {
		t.Errorf("turn 2 from scratch (%d cached): %q; after turn 1: %q", c.cached, fresh, reply2)
	}
	t.Logf("turn 1 prompt %d; turn 2 prompt %d, reused %d, evaluated %d", a.prompt, b.prompt, b.cached, b.prompt-b.cached)
}

package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime"
)

// TestConversationReuseAcrossAPIs: turn 2 of a conversation evaluates only
// the tokens after the prefix turn 1 left in the KV cache, whichever API
// family each turn came through (/v1/chat/completions then /v1/messages,
// and the other way round, /api/chat then /v1/chat/completions): with the prefix cache off (the runtime's idle
// sessions alone, Batch.Acquire) and at the defaults (the prefix cache too).
func TestConversationReuseAcrossAPIs(t *testing.T) {
	dir := realModelsDir(t)
	forPrefixCacheModes(t, func(t *testing.T, pc *int64) { testReuse(t, dir, pc) })
}

// chatReply is what the reuse tests read of a /v1/chat/completions answer.
type chatReply struct {
	Choices []struct {
		Message  struct{ Content string } `json:"message"`
		Logprobs json.RawMessage          `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Details    struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// postChat posts body to url's /v1/chat/completions and returns its
// answer, which must be a 200 with one choice.
func postChat(t *testing.T, url, body string) chatReply {
	t.Helper()
	st, b := post(t, url+"/v1/chat/completions", body)
	if st != 200 {
		t.Fatalf("chat: %d %s", st, b)
	}
	var r chatReply
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("chat: %v %s", err, b)
	}
	return r
}

// forPrefixCacheModes runs test with the prefix cache off (the runtime's
// idle sessions alone) and at the defaults (the prefix cache too), each a
// subtest.
func forPrefixCacheModes(t *testing.T, test func(t *testing.T, prefixCache *int64)) {
	for _, pc := range []*int64{runtime.Ptr(int64(0)), nil} {
		name := "prefix cache off"
		if pc == nil {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) { test(t, pc) })
	}
}

func testReuse(t *testing.T, dir string, prefixCache *int64) {
	_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{PrefixCache: prefixCache})

	story := strings.Repeat("Lily had a dog. ", 1)
	user2, _ := json.Marshal("And then?")

	type usage struct{ prompt, cached, completion int }
	chat := func(msgs string) (usage, string) {
		r := postChat(t, ts.URL, `{"model":"`+realModel+`","temperature":0,"max_tokens":6,"messages":[`+msgs+`]}`)
		return usage{r.Usage.Prompt, r.Usage.Details.Cached, r.Usage.Completion}, r.Choices[0].Message.Content
	}
	messages := func(msgs string) (usage, string) {
		st, b := post(t, ts.URL+"/v1/messages", `{"model":"`+realModel+`","temperature":0,"max_tokens":6,"messages":[`+msgs+`]}`)
		if st != 200 {
			t.Fatalf("messages: %d %s", st, b)
		}
		var r struct {
			Content []struct{ Text string } `json:"content"`
			Usage   struct {
				Input  int `json:"input_tokens"`
				Cached int `json:"cache_read_input_tokens"`
				Output int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("messages: %v %s", err, b)
		}
		text := ""
		for _, c := range r.Content {
			text += c.Text
		}
		// input_tokens are the evaluated ones, cache_read_input_tokens the reused
		return usage{r.Usage.Input + r.Usage.Cached, r.Usage.Cached, r.Usage.Output}, text
	}
	ollama := func(msgs string) (usage, string) {
		st, b := post(t, ts.URL+"/api/chat", `{"model":"`+realModel+`","stream":false,"options":{"temperature":0,"num_predict":6},"messages":[`+msgs+`]}`)
		if st != 200 {
			t.Fatalf("api/chat: %d %s", st, b)
		}
		var r struct {
			Message struct{ Content string } `json:"message"`
			Prompt  int                      `json:"prompt_eval_count"`
			Eval    int                      `json:"eval_count"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("api/chat: %v %s", err, b)
		}
		return usage{prompt: r.Prompt, completion: r.Eval}, r.Message.Content // Ollama's shape has no reused count
	}
	msg := func(role string, content []byte) string {
		return `{"role":"` + role + `","content":` + string(content) + `}`
	}

	for _, c := range []struct {
		name         string
		turn1, turn2 func(string) (usage, string)
	}{{"chat then messages", chat, messages}, {"messages then chat", messages, chat}, {"api/chat then chat", ollama, chat}} {
		// A different first message each round, so a round cannot reuse another.
		u1, _ := json.Marshal(c.name + ": " + story + "What did she do?")
		a, reply := c.turn1(msg("user", u1))
		if a.prompt < 20 {
			t.Fatalf("%s: turn 1 prompt of %d tokens, want a long one", c.name, a.prompt)
		}
		r, _ := json.Marshal(reply)
		b, _ := c.turn2(msg("user", u1) + "," + msg("assistant", r) + "," + msg("user", user2))
		evaluated := b.prompt - b.cached
		// Turn 2's prompt starts with turn 1's; only what follows it (the
		// reply as rendered and the new message) is evaluated.
		if b.prompt <= a.prompt || b.cached < a.prompt || evaluated > b.prompt-a.prompt {
			t.Errorf("%s: turn 1 prompt %d tokens; turn 2 prompt %d, %d reused, %d evaluated (want only the %d after turn 1's prompt)",
				c.name, a.prompt, b.prompt, b.cached, evaluated, b.prompt-a.prompt)
		}
		t.Logf("%s: turn 1 prompt %d; turn 2 prompt %d, reused %d, evaluated %d", c.name, a.prompt, b.prompt, b.cached, evaluated)
	}
}

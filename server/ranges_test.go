package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// The ranges OpenAI's and Anthropic's APIs enforce are 400s in each API's
// error shape, before any generation; values on the bounds are accepted.
// Ollama's options keep no such ranges (Ollama checks none).
func TestAPIRanges(t *testing.T) {
	b, ts := fakeServer(t)
	generations := func() int {
		if len(b.models) == 0 {
			return 0
		}
		m := b.last()
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.reqs)
	}
	chat := `"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,`
	comp := `"model":"tiny","prompt":"hi","max_tokens":1,`
	resp := `"model":"tiny","input":"hi","max_output_tokens":16,`
	anth := `"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,`
	// OpenAI's own API takes 4 stop strings; Woolly takes the 16 of every
	// route, as llama-server and Ollama take more than 4 (editor clients
	// send more on their OpenAI-compatible routes).
	stops17 := `"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]`
	bad := []struct{ path, body, want string }{
		{"/v1/chat/completions", chat + `"temperature":2.5`, "temperature"},
		{"/v1/chat/completions", chat + `"temperature":-0.1`, "temperature"},
		{"/v1/chat/completions", chat + `"top_p":1.5`, "top_p"},
		{"/v1/chat/completions", chat + stops17, "stop: 17 stop strings; at most 16"},
		{"/v1/chat/completions", chat + `"presence_penalty":2.5`, "presence_penalty"},
		{"/v1/chat/completions", chat + `"frequency_penalty":-3`, "frequency_penalty"},
		{"/v1/chat/completions", chat + `"n":0`, "n must be >= 1"},
		{"/v1/chat/completions", chat + `"logprobs":true,"top_logprobs":21`, "top_logprobs"},
		{"/v1/completions", comp + `"temperature":3`, "temperature"},
		{"/v1/completions", comp + `"top_p":-1`, "top_p"},
		{"/v1/completions", comp + stops17, "at most 16"},
		{"/v1/completions", comp + `"presence_penalty":-2.01`, "presence_penalty"},
		{"/v1/completions", comp + `"n":-1`, "n must be >= 1"},
		{"/v1/completions", comp + `"logprobs":21`, "logprobs"},
		{"/v1/responses", resp + `"temperature":2.1`, "temperature"},
		{"/v1/responses", resp + `"top_p":1.1`, "top_p"},
		{"/v1/messages", anth + `"temperature":1.5`, "temperature"},
		{"/v1/messages", anth + `"temperature":-1`, "temperature"},
		{"/v1/messages", anth + `"top_p":1.01`, "top_p"},
		{"/v1/messages", anth + `"top_k":-1`, "top_k"},
	}
	for _, c := range bad {
		before := generations()
		r := do(t, ts, "POST", c.path, "{"+c.body+"}")
		var msg string
		var shape struct {
			Type  string
			Error json.RawMessage
		}
		json.Unmarshal(r.body, &shape)
		if strings.HasPrefix(c.path, "/v1/messages") {
			var e struct{ Type, Message string }
			json.Unmarshal(shape.Error, &e)
			if shape.Type != "error" || e.Type != "invalid_request_error" {
				t.Errorf("%s %s: not Anthropic's error shape: %s", c.path, c.body, r.body)
			}
			msg = e.Message
		} else {
			var e struct{ Type, Message string }
			json.Unmarshal(shape.Error, &e)
			if e.Type != "invalid_request_error" {
				t.Errorf("%s %s: not OpenAI's error shape: %s", c.path, c.body, r.body)
			}
			msg = e.Message
		}
		if r.status != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %s; want 400 naming %q", c.path, c.body, r.status, r.body, c.want)
		}
		if generations() != before {
			t.Errorf("%s %s: generated before refusing", c.path, c.body)
		}
	}
	good := []struct{ path, body string }{
		{"/v1/chat/completions", chat + `"temperature":2,"top_p":0,"presence_penalty":-2,"frequency_penalty":2,"stop":["a","b","c","d"],"n":1`},
		{"/v1/completions", comp + `"temperature":0,"top_p":1,"stop":["a","b","c","d"],"logprobs":5`},
		{"/v1/responses", resp + `"temperature":2,"top_p":1`},
		{"/v1/messages", anth + `"temperature":1,"top_p":1,"top_k":0`},
		// Ollama's options are not range-checked by Ollama.
		{"/api/generate", `"model":"tiny","prompt":"hi","stream":false,"options":{"temperature":5,"num_predict":1}`},
	}
	for _, c := range good {
		if r := do(t, ts, "POST", c.path, "{"+c.body+"}"); r.status != 200 {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.body)
		}
	}
}

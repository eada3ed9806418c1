package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime/grammar/schematest"
)

// format and response_format reach the backend as a grammar; asking for
// plain text gives none.
func TestStructuredRequestsCarryGrammar(t *testing.T) {
	b, ts := fakeServer(t)
	schema := `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`
	for _, c := range []struct {
		route, body string
		want        bool
	}{
		{"/api/generate", `{"model":"tiny","prompt":"x","stream":false,"format":"json"}`, true},
		{"/api/generate", `{"model":"tiny","prompt":"x","stream":false,"format":` + schema + `}`, true},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"stream":false,"format":` + schema + `}`, true},
		{"/api/generate", `{"model":"tiny","prompt":"x","stream":false,"format":""}`, false},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, true},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":` + schema + `}}}`, true},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"}}`, false},
		{"/v1/completions", `{"model":"tiny","prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":` + schema + `}}}`, true},
		{"/v1/completions", `{"model":"tiny","prompt":"x"}`, false},
	} {
		r := do(t, ts, "POST", c.route, c.body)
		if r.status != 200 {
			t.Errorf("%s %s: %d %s", c.route, c.body, r.status, r.body)
			continue
		}
		if got := b.last().lastReq().Grammar != nil; got != c.want {
			t.Errorf("%s %s: grammar %v, want %v", c.route, c.body, got, c.want)
		}
	}
}

// A format the server cannot honour is a 400 naming the problem, in the
// route family's error shape.
func TestStructuredBadFormats(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	chat := `"model":"tiny","messages":[{"role":"user","content":"x"}]`
	for _, c := range []struct{ route, body, want string }{
		{"/api/generate", `{"model":"tiny","prompt":"x","format":"yaml"}`, `format must be \"json\" or a JSON schema`},
		{"/api/generate", `{"model":"tiny","prompt":"x","format":[1]}`, `format must be \"json\" or a JSON schema`},
		{"/api/generate", `{"model":"tiny","prompt":"x","format":{"type":"string","pattern":"(?<=a)b"}}`, `lookbehind`},
		{"/api/chat", `{` + chat + `,"format":{"type":"object","properties":{"d":{"type":"string","format":"ipv6"}}}}`, `format: schema at /properties/d/format: format \"ipv6\" is not supported`},
		{"/v1/chat/completions", `{` + chat + `,"response_format":{"type":"xml"}}`, `response_format.type must be`},
		{"/v1/chat/completions", `{` + chat + `,"response_format":{"type":"json_schema"}}`, `response_format.json_schema is required`},
		{"/v1/chat/completions", `{` + chat + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"number","minimum":2,"maximum":1}}}}`, `no number lies between the minimum and the maximum`},
		{"/v1/chat/completions", `{` + chat + `,"response_format":{"type":"json_object","frob":1}}`, `response_format: json: unknown field \"frob\"`},
		{"/v1/responses", `{"model":"tiny","input":"x","text":{"format":{"type":"text","frob":1}}}`, `text.format: json: unknown field \"frob\"`},
		{"/v1/messages", `{` + chat + `,"max_tokens":8,"thinking":{"type":"enabled","frob":1}}`, `thinking: json: unknown field \"frob\"`},
		{"/v1/messages", `{` + chat + `,"max_tokens":8,"tool_choice":{"type":"auto","frob":1}}`, `tool_choice: json: unknown field \"frob\"`},
		{"/v1/messages", `{` + chat + `,"max_tokens":8,"output_config":{"format":{"type":"json_schema","frob":1}}}`, `output_config.format: json: unknown field \"frob\"`},
		{"/v1/completions", `{"model":"tiny","prompt":"x","response_format":{"type":"json_object","schema":{"type":"string","pattern":"(a)\\1"}}}`, `backreference \\1 is not supported`},
	} {
		r := do(t, ts, "POST", c.route, c.body)
		if r.status != 400 || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s %s: %d %s; want 400 naming %s", c.route, c.body, r.status, r.body, c.want)
		}
		if strings.HasPrefix(c.route, "/v1/") != strings.Contains(string(r.body), `"error":{`) {
			t.Errorf("%s: error in the wrong family's shape: %s", c.route, r.body)
		}
	}
}

// On a real model, through both APIs, the reply is a document valid
// against the schema.
func TestStructuredRealModel(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"},"pet":{"enum":["cat","dog",null]}},"required":["name","age","pet"],"additionalProperties":false}`
	v, err := schematest.Compile([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for seed := range 3 {
		s := string(rune('0' + seed))
		code, body := post(t, url+"/api/generate", `{"model":"`+realModel+`","prompt":"Once","stream":false,"format":`+schema+`,"options":{"seed":`+s+`,"temperature":1.2}}`)
		var og struct {
			Response   string `json:"response"`
			DoneReason string `json:"done_reason"`
		}
		if code != 200 || json.Unmarshal(body, &og) != nil {
			t.Fatalf("ollama: %d %s", code, body)
		}
		if og.DoneReason != "stop" {
			t.Errorf("ollama seed %s: done_reason %q: %q", s, og.DoneReason, og.Response)
		} else if err := schematest.Check(v, []byte(og.Response)); err != nil {
			t.Errorf("ollama seed %s: %v", s, err)
		}
		code, body = post(t, url+"/v1/chat/completions", `{"model":"`+realModel+`","seed":`+s+`,"temperature":1.2,"messages":[{"role":"user","content":"Once"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":`+schema+`}}}`)
		var oa struct {
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		if code != 200 || json.Unmarshal(body, &oa) != nil || len(oa.Choices) != 1 {
			t.Fatalf("openai: %d %s", code, body)
		}
		if c := oa.Choices[0]; c.FinishReason != "stop" {
			t.Errorf("openai seed %s: finish_reason %q: %q", s, c.FinishReason, c.Message.Content)
		} else if err := schematest.Check(v, []byte(c.Message.Content)); err != nil {
			t.Errorf("openai seed %s: %v", s, err)
		}
	}
}

// Every schema of the test set (zod 4's defaults among them) is accepted
// on each route family that takes a schema, and reaches the backend as a
// grammar.
func TestStructuredAcceptsTestSet(t *testing.T) {
	cases, err := schematest.Load()
	if err != nil {
		t.Fatal(err)
	}
	b, ts := fakeServer(t)
	for _, c := range cases {
		s := string(c.Schema)
		if !strings.HasPrefix(s, "{") {
			continue // the boolean schema: not a format the routes take
		}
		for _, req := range []struct{ route, body string }{
			{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"stream":false,"format":` + s + `}`},
			{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":` + s + `}}}`},
			{"/v1/messages", `{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema","schema":` + s + `}}}`},
		} {
			r := do(t, ts, "POST", req.route, req.body)
			if r.status != 200 {
				t.Errorf("%s %s: %d %s", c.Name, req.route, r.status, r.body)
				continue
			}
			if b.last().lastReq().Grammar == nil {
				t.Errorf("%s %s: no grammar", c.Name, req.route)
			}
		}
	}
}

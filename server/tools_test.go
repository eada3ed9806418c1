package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

// toolScript is a Qwen-style answer: some text, then two calls.
var toolScript = []string{"Checking.", "\n<tool_", "call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
	"\n<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>"}

func toolServer(t *testing.T) (*fakeBackend, *httptest.Server) {
	t.Helper()
	b := newFakeBackend()
	b.template = chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	b.script = toolScript
	_, ts := newTestServer(t, Config{}, b)
	return b, ts
}

type call struct{ name, args string }

func TestOllamaTools(t *testing.T) {
	b, ts := toolServer(t)
	history := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
		`{"role":"tool","tool_name":"get_weather","content":"18C"}]`
	body := `{"model":"tiny","tools":[` + weatherTool + `],"messages":` + history
	r := do(t, ts, "POST", "/api/chat", body+`,"stream":false}`)
	wantStatus(t, r, 200)
	p := b.last().lastReq().Prompt
	for _, w := range []string{`<tools>` + "\n" + `{"type": "function", "function": {"name": "get_weather"`,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "<tool_response>\n18C\n</tool_response>"} {
		if !strings.Contains(p, w) {
			t.Errorf("prompt lacks %q:\n%s", w, p)
		}
	}
	msg := r.json(t)["message"].(map[string]any)
	if msg["content"] != "Checking." {
		t.Errorf("content %q", msg["content"])
	}
	checkOllamaCalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}})

	// Streamed: the calls come in chunks' message.tool_calls, the text never shows the tags.
	r = do(t, ts, "POST", "/api/chat", body+`}`)
	wantStatus(t, r, 200)
	var content strings.Builder
	var calls []any
	for _, l := range ndjson(t, r.body) {
		m := l["message"].(map[string]any)
		content.WriteString(m["content"].(string))
		if tc, ok := m["tool_calls"].([]any); ok {
			calls = append(calls, tc...)
		}
	}
	if content.String() != "Checking." {
		t.Errorf("streamed content %q", content.String())
	}
	checkOllamaCalls(t, calls, []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}})

	// Without tools the text is not parsed.
	r = do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"x"}]}`)
	if m := r.json(t)["message"].(map[string]any); m["tool_calls"] != nil || !strings.Contains(m["content"].(string), "<tool_call>") {
		t.Errorf("no tools: %s", r.body)
	}
	// Bad tools and calls are 400s naming the field.
	for _, bad := range []string{
		`{"model":"tiny","tools":{"a":1},"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"tiny","tools":[{"type":"function"}],"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"tiny","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`,
	} {
		r = do(t, ts, "POST", "/api/chat", bad)
		wantStatus(t, r, 400)
		if !strings.Contains(string(r.body), "tool") {
			t.Errorf("%s: %s", bad, r.body)
		}
	}
	// A model whose template takes no tools: 400, as Ollama answers.
	b2 := newFakeBackend()
	_, ts2 := newTestServer(t, Config{}, b2)
	r = do(t, ts2, "POST", "/api/chat", `{"model":"tiny","tools":[`+weatherTool+`],"messages":[{"role":"user","content":"x"}]}`)
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), "does not support tools") {
		t.Errorf("no-tools model: %s", r.body)
	}
}

func checkOllamaCalls(t *testing.T, v any, want []call) {
	t.Helper()
	list, _ := v.([]any)
	if len(list) != len(want) {
		t.Fatalf("tool_calls %v, want %d", v, len(want))
	}
	for i, c := range list {
		fn := c.(map[string]any)["function"].(map[string]any)
		args, _ := json.Marshal(fn["arguments"])
		if fn["name"] != want[i].name || string(args) != want[i].args || fn["index"] != float64(i) {
			t.Errorf("call %d = %v, want %v", i, fn, want[i])
		}
	}
}

func TestOpenAITools(t *testing.T) {
	b, ts := toolServer(t)
	history := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18C"}]`
	body := `{"model":"tiny","tools":[` + weatherTool + `],"messages":` + history
	r := do(t, ts, "POST", "/v1/chat/completions", body+`}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; !strings.Contains(p, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}") || !strings.Contains(p, "<tool_response>\n18C") {
		t.Errorf("prompt:\n%s", p)
	}
	choice := r.json(t)["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if choice["finish_reason"] != "tool_calls" || msg["content"] != "Checking." {
		t.Errorf("choice %v", choice)
	}
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}, false)

	// Streamed: delta.tool_calls with index, id, function.name and .arguments.
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"stream":true}`)
	wantStatus(t, r, 200)
	var content strings.Builder
	var calls []any
	finish := ""
	for _, f := range sse(t, r.body) {
		ch := f["choices"].([]any)[0].(map[string]any)
		d := ch["delta"].(map[string]any)
		if c, ok := d["content"].(string); ok {
			content.WriteString(c)
		}
		if tc, ok := d["tool_calls"].([]any); ok {
			calls = append(calls, tc...)
		}
		if fr, ok := ch["finish_reason"].(string); ok {
			finish = fr
		}
	}
	if content.String() != "Checking." || finish != "tool_calls" {
		t.Errorf("streamed content %q finish %q", content.String(), finish)
	}
	checkOpenAICalls(t, calls, []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}, true)

	// parallel_tool_calls false keeps the first call.
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"parallel_tool_calls":false}`)
	msg = r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}}, false)

	// tool_choice none: the tools are not rendered and the text is not parsed.
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"tool_choice":"none"}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; strings.Contains(p, "<tools>") {
		t.Errorf("tool_choice none rendered the tools")
	}
	choice = r.json(t)["choices"].([]any)[0].(map[string]any)
	if choice["finish_reason"] != "stop" || choice["message"].(map[string]any)["tool_calls"] != nil {
		t.Errorf("tool_choice none: %v", choice)
	}
	// auto is the default; required and a named function constrain the
	// answer to one call (the grammar the backend gets accepts exactly the
	// calls allowed); a bad choice or an unknown name is a 400 naming it.
	wantStatus(t, do(t, ts, "POST", "/v1/chat/completions", body+`,"tool_choice":"auto"}`), 200)
	if b.last().lastReq().Grammar != nil {
		t.Errorf("tool_choice auto constrained the answer")
	}
	for _, tc := range []struct{ choice, ok, bad string }{
		{`"required"`, `{"name":"get_weather","arguments":{"city":"Oslo"}}`, `{"name":"nope","arguments":{}}`},
		{`{"type":"function","function":{"name":"get_weather"}}`, `{"name": "get_weather", "arguments": {"city": "Paris"}}`, `{"name":"get_weather","arguments":{"town":"Paris"}}`},
	} {
		wantStatus(t, do(t, ts, "POST", "/v1/chat/completions", body+`,"tool_choice":`+tc.choice+`}`), 200)
		g := b.last().lastReq().Grammar
		if g == nil {
			t.Fatalf("tool_choice %s: no grammar", tc.choice)
		}
		if m := g.NewMatcher(); !m.Advance([]byte(tc.ok)) || !m.Done() {
			t.Errorf("tool_choice %s: the grammar refuses %s", tc.choice, tc.ok)
		}
		if g.NewMatcher().Accepts([]byte(tc.bad)) {
			t.Errorf("tool_choice %s: the grammar accepts %s", tc.choice, tc.bad)
		}
	}
	for _, tc := range []string{`"sometimes"`, `{"type":"function","function":{"name":"nope"}}`} {
		r = do(t, ts, "POST", "/v1/chat/completions", body+`,"tool_choice":`+tc+`}`)
		wantStatus(t, r, 400)
		if !strings.Contains(string(r.body), "tool_choice") {
			t.Errorf("tool_choice %s: %s", tc, r.body)
		}
	}
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`)
	wantStatus(t, r, 400)
}

func checkOpenAICalls(t *testing.T, v any, want []call, stream bool) {
	t.Helper()
	list, _ := v.([]any)
	if len(list) != len(want) {
		t.Fatalf("tool_calls %v, want %d", v, len(want))
	}
	ids := map[string]bool{}
	for i, c := range list {
		m := c.(map[string]any)
		fn := m["function"].(map[string]any)
		id, _ := m["id"].(string)
		if fn["name"] != want[i].name || fn["arguments"] != want[i].args || m["type"] != "function" || !strings.HasPrefix(id, "call_") || ids[id] {
			t.Errorf("call %d = %v, want %v", i, m, want[i])
		}
		ids[id] = true
		if idx, ok := m["index"]; stream != ok || (ok && idx != float64(i)) {
			t.Errorf("call %d index %v (stream %v)", i, idx, stream)
		}
	}
}

func TestCapabilities(t *testing.T) {
	qwen := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	llama := chatTemplate(t, "tools/meta-llama-Llama-3.1-8B-Instruct.jinja")
	for _, c := range []struct {
		tmpl string
		fim  *[3]string
		want string
	}{
		{"", nil, "completion"},
		{qwen, nil, "completion tools thinking"},
		{llama, &[3]string{"<PRE>", "<SUF>", "<MID>"}, "completion tools insert"},
		{qwen3Tmpl, nil, "completion thinking"},
	} {
		b := newFakeBackend()
		b.template, b.fim = c.tmpl, c.fim
		_, ts := newTestServer(t, Config{}, b)
		r := do(t, ts, "POST", "/api/show", `{"model":"tiny"}`)
		wantStatus(t, r, 200)
		var got []string
		for _, v := range r.json(t)["capabilities"].([]any) {
			got = append(got, v.(string))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("capabilities %v, want %s", got, c.want)
		}
	}
}

// suffix: an infill prompt with the model's FIM tokens (llama.cpp's order),
// a 400 naming suffix without them; raw with system or suffix is a 400.
func TestSuffixInfill(t *testing.T) {
	b := newFakeBackend()
	b.template = qwen3Tmpl
	b.fim = &[3]string{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}
	_, ts := newTestServer(t, Config{}, b)
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","stream":false,"prompt":"def f(","suffix":"\n    return x"}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; p != "<|fim_prefix|>def f(<|fim_suffix|>\n    return x<|fim_middle|>" {
		t.Errorf("infill prompt %q", p)
	}
	r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":"a","suffix":"c"}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; p != "<|fim_prefix|>a<|fim_suffix|>c<|fim_middle|>" {
		t.Errorf("openai infill prompt %q", p)
	}
	for _, bad := range []string{`{"model":"tiny","prompt":"a","suffix":"c","raw":true}`, `{"model":"tiny","prompt":"a","system":"s","raw":true}`,
		`{"model":"tiny","prompt":"a","suffix":"c","system":"s"}`} {
		r = do(t, ts, "POST", "/api/generate", bad)
		wantStatus(t, r, 400)
	}
	// system goes through the template unless raw
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","stream":false,"prompt":"hi","system":"be brief"}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; p != "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("system prompt %q", p)
	}
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","stream":false,"prompt":"hi","raw":true}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; p != "hi" {
		t.Errorf("raw prompt %q", p)
	}

	b2 := newFakeBackend()
	_, ts2 := newTestServer(t, Config{}, b2)
	r = do(t, ts2, "POST", "/api/generate", `{"model":"tiny","prompt":"a","suffix":"c"}`)
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), "suffix") || !strings.Contains(string(r.body), "does not support insert") {
		t.Errorf("no FIM: %s", r.body)
	}
	r = do(t, ts2, "POST", "/v1/completions", `{"model":"tiny","prompt":"a","suffix":"c"}`)
	wantStatus(t, r, 400)
}

// A forced tool call needs tools and no answer format beside it, on each
// API that can force one.
func TestForcedCallRefusals(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	chat := `{"model":"tiny","messages":[{"role":"user","content":"x"}]`
	respTool := `{"type":"function","name":"get_weather","parameters":{"type":"object"}}`
	for _, c := range []struct{ route, body, want string }{
		{"/v1/chat/completions", chat + `,"tool_choice":"required"}`, "tool_choice: a call is required but the request has no tools"},
		{"/v1/chat/completions", chat + `,"tools":[` + weatherTool + `],"tool_choice":"required","response_format":{"type":"json_object"}}`,
			"tool_choice: a forced tool call and response_format cannot both constrain the answer"},
		{"/v1/responses", `{"model":"tiny","input":"x","tool_choice":"required"}`, "tool_choice: a call is required but the request has no tools"},
		{"/v1/responses", `{"model":"tiny","input":"x","tools":[` + respTool + `],"tool_choice":"required","text":{"format":{"type":"json_object"}}}`,
			"tool_choice: a forced tool call and text.format cannot both constrain the answer"},
		{"/v1/messages", chat + `,"max_tokens":8,"tool_choice":{"type":"any"}}`, "tool_choice: a call is required but the request has no tools"},
		{"/v1/messages", chat + `,"max_tokens":2048,"tool_choice":{"type":"any"},"thinking":{"type":"enabled","budget_tokens":1024}}`,
			"tool_choice: a call is required but the request has no tools"},
	} {
		r := do(t, ts, "POST", c.route, c.body)
		if r.status != 400 || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s %s: %d %s; want 400 naming %q", c.route, c.body, r.status, r.body, c.want)
		}
	}
}

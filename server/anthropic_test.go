package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type anthropicEvent struct {
	name string
	data map[string]any
}

// anthropicSSE splits an Anthropic stream into its named events; it checks
// the framing (event: then data: in every frame, no [DONE]) and that each
// event's name is its data's type.
func anthropicSSE(t *testing.T, r resp) []anthropicEvent {
	t.Helper()
	wantStatus(t, r, 200)
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	frames := strings.Split(string(r.body), "\n\n")
	if frames[len(frames)-1] != "" {
		t.Fatalf("stream does not end with a blank line: %q", r.body)
	}
	var out []anthropicEvent
	for _, f := range frames[:len(frames)-1] {
		name, data, ok := strings.Cut(f, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok1 || !ok2 {
			t.Fatalf("frame %q is not event: + data:", f)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		if m["type"] != name {
			t.Fatalf("event %s carries type %v", name, m["type"])
		}
		out = append(out, anthropicEvent{name, m})
	}
	return out
}

// eventNames is the sequence of event names, content blocks' events
// marked with their index and block or delta type.
func eventNames(ev []anthropicEvent) string {
	var b []string
	for _, e := range ev {
		s := e.name
		switch e.name {
		case "content_block_start":
			s += "(" + itoaT(e.data["index"]) + " " + e.data["content_block"].(map[string]any)["type"].(string) + ")"
		case "content_block_delta":
			s += "(" + itoaT(e.data["index"]) + " " + e.data["delta"].(map[string]any)["type"].(string) + ")"
		case "content_block_stop":
			s += "(" + itoaT(e.data["index"]) + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func itoaT(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func anthropicServer(t *testing.T, tmpl string, script []string) (*fakeBackend, *Server, func(path, body string, hdr ...string) resp) {
	t.Helper()
	b := newFakeBackend()
	b.template, b.script, b.count = tmpl, script, true
	s, ts := newTestServer(t, Config{}, b)
	return b, s, func(path, body string, hdr ...string) resp {
		return do(t, ts, "POST", path, body, append([]string{"anthropic-version", "2023-06-01", "Content-Type", "application/json"}, hdr...)...)
	}
}

func TestAnthropicMessages(t *testing.T) {
	b, _, post := anthropicServer(t, qwen3Tmpl, []string{"Hello", " there", " friend"})
	body := `{"model":"tiny","max_tokens":50,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Hey."}]},{"role":"user","content":[{"type":"text","text":"More?"}]}],` +
		`"temperature":0.5,"top_p":0.9,"top_k":7,"metadata":{"user_id":"u1"}`
	r := post("/v1/messages", body+`}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	if !strings.HasPrefix(m["id"].(string), "msg_") || m["type"] != "message" || m["role"] != "assistant" || m["model"] != "tiny" ||
		m["stop_reason"] != "end_turn" || m["stop_sequence"] != nil {
		t.Errorf("message %s", r.body)
	}
	content := m["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["type"] != "text" || content[0].(map[string]any)["text"] != "Hello there friend" {
		t.Errorf("content %s", r.body)
	}
	req := b.last().lastReq()
	want := "<|im_start|>system\nBe brief.\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHey.<|im_end|>\n" +
		"<|im_start|>user\nMore?<|im_end|>\n<|im_start|>assistant\n" // without thinking: the template's default
	if req.Prompt != want {
		t.Errorf("prompt %q, want %q", req.Prompt, want)
	}
	if req.Temperature != 0.5 || req.TopP != 0.9 || req.TopK != 7 || req.MaxTokens != 50 {
		t.Errorf("sampling %+v", req.SamplerOptions)
	}
	u := m["usage"].(map[string]any)
	if u["input_tokens"] != float64(len(strings.Fields(want))) || u["output_tokens"] != float64(3) {
		t.Errorf("usage %v", u)
	}

	// count_tokens counts the same prompt.
	count := strings.NewReplacer(`"max_tokens":50,`, "", `,"temperature":0.5,"top_p":0.9,"top_k":7,"metadata":{"user_id":"u1"}`, "").Replace(body)
	r = post("/v1/messages/count_tokens", count+`}`)
	wantStatus(t, r, 200)
	if c := r.json(t); c["input_tokens"] != u["input_tokens"] || len(c) != 1 {
		t.Errorf("count_tokens %s, usage %v", r.body, u)
	}

	// Prompt tokens reused from the prefix cache: cache_read_input_tokens,
	// the rest input_tokens (Anthropic's split), streamed and not.
	b.cached = 4
	r = post("/v1/messages", body+`}`)
	if u := r.json(t)["usage"].(map[string]any); u["input_tokens"] != float64(len(strings.Fields(want))-4) || u["cache_read_input_tokens"] != float64(4) {
		t.Errorf("cached usage %v", u)
	}
	ev := anthropicSSE(t, post("/v1/messages", body+`,"stream":true}`))
	if u := ev[len(ev)-2].data["usage"].(map[string]any); u["input_tokens"] != float64(len(strings.Fields(want))-4) || u["cache_read_input_tokens"] != float64(4) {
		t.Errorf("streamed cached usage %v", u)
	}
	b.cached = 0

	// max_tokens cuts the answer: stop_reason max_tokens.
	r = post("/v1/messages", `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]}`)
	if m := r.json(t); m["stop_reason"] != "max_tokens" || m["usage"].(map[string]any)["output_tokens"] != float64(2) {
		t.Errorf("max_tokens: %s", r.body)
	}
	// A stop sequence: stop_reason stop_sequence naming it.
	r = post("/v1/messages", `{"model":"tiny","max_tokens":9,"stop_sequences":["nope","there"],"messages":[{"role":"user","content":"Hi"}]}`)
	if m := r.json(t); m["stop_reason"] != "stop_sequence" || m["stop_sequence"] != "there" {
		t.Errorf("stop_sequence: %s", r.body)
	}
	if s := b.last().lastReq().Stop; len(s) != 2 || s[1] != "there" {
		t.Errorf("stop strings %q", s)
	}
}

func TestAnthropicStream(t *testing.T) {
	_, _, post := anthropicServer(t, qwen3Tmpl, []string{"Hello", " there"})
	ev := anthropicSSE(t, post("/v1/messages", `{"model":"tiny","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`))
	want := "message_start ping content_block_start(0 text) content_block_delta(0 text_delta) content_block_delta(0 text_delta) " +
		"content_block_stop(0) message_delta message_stop"
	if got := eventNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	msg := ev[0].data["message"].(map[string]any)
	if !strings.HasPrefix(msg["id"].(string), "msg_") || msg["role"] != "assistant" || len(msg["content"].([]any)) != 0 || msg["stop_reason"] != nil {
		t.Errorf("message_start %v", msg)
	}
	inTokens := msg["usage"].(map[string]any)["input_tokens"].(float64)
	if inTokens < 3 {
		t.Errorf("message_start usage %v", msg["usage"])
	}
	var text strings.Builder
	for _, e := range ev[3:5] {
		text.WriteString(e.data["delta"].(map[string]any)["text"].(string))
	}
	if text.String() != "Hello there" {
		t.Errorf("text %q", text.String())
	}
	d := ev[6].data
	if d["delta"].(map[string]any)["stop_reason"] != "end_turn" || d["usage"].(map[string]any)["output_tokens"] != float64(2) ||
		d["usage"].(map[string]any)["input_tokens"] != inTokens {
		t.Errorf("message_delta %v", d)
	}

	// The max_tokens stop in a stream.
	ev = anthropicSSE(t, post("/v1/messages", `{"model":"tiny","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`))
	if d := ev[len(ev)-2].data; d["delta"].(map[string]any)["stop_reason"] != "max_tokens" {
		t.Errorf("stream max_tokens: %v", d)
	}
}

func TestAnthropicThinking(t *testing.T) {
	b, _, post := anthropicServer(t, qwen3Tmpl, []string{"<th", "ink>\nLet me", " see.\n</thi", "nk>\n\n", "Four."})
	body := `{"model":"tiny","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"2+2?"}]`
	r := post("/v1/messages", body+`}`)
	wantStatus(t, r, 200)
	content := r.json(t)["content"].([]any)
	if len(content) != 2 || content[0].(map[string]any)["type"] != "thinking" || content[0].(map[string]any)["thinking"] != "Let me see." ||
		content[1].(map[string]any)["text"] != "Four." {
		t.Errorf("thinking: %s", r.body)
	}
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<|im_start|>assistant\n") {
		t.Errorf("thinking enabled: prompt %q", p)
	}
	ev := anthropicSSE(t, post("/v1/messages", body+`,"stream":true}`))
	want := "message_start ping content_block_start(0 thinking) content_block_delta(0 thinking_delta) content_block_delta(0 thinking_delta) " +
		"content_block_stop(0) content_block_start(1 text) content_block_delta(1 text_delta) content_block_stop(1) message_delta message_stop"
	if got := eventNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	var th strings.Builder
	for _, e := range ev {
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "thinking_delta" {
			th.WriteString(d["thinking"].(string))
		}
	}
	if th.String() != "Let me see." {
		t.Errorf("streamed thinking %q", th.String())
	}
	// display omitted: the blocks come without their text.
	r = post("/v1/messages", strings.Replace(body, `"budget_tokens":1024`, `"budget_tokens":1024,"display":"omitted"`, 1)+`}`)
	if c := r.json(t)["content"].([]any); len(c) != 2 || c[0].(map[string]any)["type"] != "thinking" || c[0].(map[string]any)["thinking"] != "" {
		t.Errorf("display omitted: %s", r.body)
	}
	ev = anthropicSSE(t, post("/v1/messages", strings.Replace(body, `"budget_tokens":1024`, `"budget_tokens":1024,"display":"omitted"`, 1)+`,"stream":true}`))
	if got, want := eventNames(ev), "message_start ping content_block_start(0 thinking) content_block_stop(0) content_block_start(1 text) "+
		"content_block_delta(1 text_delta) content_block_stop(1) message_delta message_stop"; got != want {
		t.Errorf("display omitted events\n%s\nwant\n%s", got, want)
	}
	// disabled: the template's switch off; adaptive: its default.
	for th, suffix := range map[string]string{`{"type":"disabled"}`: "<|im_start|>assistant\n<think>\n\n</think>\n\n",
		`{"type":"adaptive"}`: "<|im_start|>assistant\n"} {
		r = post("/v1/messages", `{"model":"tiny","max_tokens":9,"thinking":`+th+`,"output_config":{"effort":"low"},"messages":[{"role":"user","content":"x"}]}`)
		wantStatus(t, r, 200)
		if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, suffix) {
			t.Errorf("thinking %s: prompt %q", th, p)
		}
	}
	// Earlier turns' thinking blocks are not in the prompt.
	r = post("/v1/messages", `{"model":"tiny","max_tokens":9,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"2+2?"},`+
		`{"role":"assistant","content":[{"type":"thinking","thinking":"SECRET","signature":""},{"type":"text","text":"4"}]},{"role":"user","content":"3+3?"}]}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; strings.Contains(p, "SECRET") || !strings.Contains(p, "assistant\n4<|im_end|>") {
		t.Errorf("history thinking: prompt %q", p)
	}
	for _, bad := range []string{
		`{"type":"enabled"}`, `{"type":"enabled","budget_tokens":100}`, `{"type":"enabled","budget_tokens":4096}`, `{"type":"on"}`,
		`{"type":"enabled","budget_tokens":1024,"extra":1}`, `{"type":"enabled","budget_tokens":1024,"display":"full"}`,
	} {
		r = post("/v1/messages", `{"model":"tiny","max_tokens":2048,"thinking":`+bad+`,"messages":[{"role":"user","content":"x"}]}`)
		wantAnthropicError(t, r, 400, "thinking")
	}
}

// wantAnthropicError checks an error in Anthropic's shape whose message
// mentions word.
func wantAnthropicError(t *testing.T, r resp, status int, word string) {
	t.Helper()
	wantStatus(t, r, status)
	m := r.json(t)
	e, _ := m["error"].(map[string]any)
	if m["type"] != "error" || e == nil || e["type"] == nil || !strings.Contains(e["message"].(string), word) {
		t.Errorf("error body %s, want Anthropic's shape mentioning %q", r.body, word)
	}
}

const anthropicWeather = `{"name":"get_weather","description":"Get the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

func TestAnthropicTools(t *testing.T) {
	src := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	b, _, post := anthropicServer(t, src, toolScript)
	history := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"18C"}]},{"type":"text","text":"And now?"}]}]`
	body := `{"model":"tiny","max_tokens":100,"tools":[` + anthropicWeather + `],"messages":` + history
	r := post("/v1/messages", body+`}`)
	wantStatus(t, r, 200)
	p := b.last().lastReq().Prompt
	for _, w := range []string{`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters"`,
		"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		"<tool_response>\n18C\n</tool_response>", "And now?"} {
		if !strings.Contains(p, w) {
			t.Errorf("prompt lacks %q:\n%s", w, p)
		}
	}
	m := r.json(t)
	content := m["content"].([]any)
	if m["stop_reason"] != "tool_use" || len(content) != 3 || content[0].(map[string]any)["text"] != "Checking." {
		t.Fatalf("tool answer %s", r.body)
	}
	for i, w := range []string{`get_weather {"city":"Paris"}`, `get_time {}`} {
		c := content[i+1].(map[string]any)
		in, _ := json.Marshal(c["input"])
		if c["type"] != "tool_use" || c["id"] == "" || c["name"].(string)+" "+string(in) != w {
			t.Errorf("block %d: %v, want %s", i+1, c, w)
		}
	}
	// Streamed: each call a tool_use block with one input_json_delta.
	ev := anthropicSSE(t, post("/v1/messages", body+`,"stream":true}`))
	want := "message_start ping content_block_start(0 text) content_block_delta(0 text_delta) content_block_stop(0) " +
		"content_block_start(1 tool_use) content_block_delta(1 input_json_delta) content_block_stop(1) " +
		"content_block_start(2 tool_use) content_block_delta(2 input_json_delta) content_block_stop(2) message_delta message_stop"
	if got := eventNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	if ev[5].data["content_block"].(map[string]any)["name"] != "get_weather" ||
		ev[6].data["delta"].(map[string]any)["partial_json"] != `{"city":"Paris"}` ||
		ev[11].data["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("streamed call: %v %v %v", ev[5].data, ev[6].data, ev[11].data)
	}
	// disable_parallel_tool_use keeps the first call.
	r = post("/v1/messages", body+`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`)
	if c := r.json(t)["content"].([]any); len(c) != 2 {
		t.Errorf("disable_parallel_tool_use: %s", r.body)
	}
	// tool_choice none: the tools are not offered.
	r = post("/v1/messages", body+`,"tool_choice":{"type":"none"}}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; strings.Contains(p, `"parameters"`) {
		t.Errorf("tool_choice none offered the tools:\n%s", p)
	}
	// A tool_result's is_error reaches the model.
	r = post("/v1/messages", strings.Replace(body, `"content":[{"type":"text","text":"18C"}]`, `"content":"no such city","is_error":true`, 1)+`}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; !strings.Contains(p, "<tool_response>\nError: no such city\n</tool_response>") {
		t.Errorf("is_error: prompt\n%s", p)
	}
	for bad, word := range map[string]string{
		`,"tool_choice":{"type":"tool"}}`:                                                   "tool_choice.name",
		`,"tool_choice":{"type":"tool","name":"nope"}}`:                                     "nope",
		`,"tool_choice":{"type":"sometimes"}}`:                                              "tool_choice.type",
		`,"tool_choice":{"type":"any"},"thinking":{"type":"enabled","budget_tokens":1024}}`: "thinking",
	} {
		wantAnthropicError(t, post("/v1/messages", body+bad), 400, word)
	}
}

func TestAnthropicForcedTool(t *testing.T) {
	src := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	// The forced call's answer is the grammar's JSON object.
	b, _, post := anthropicServer(t, src, []string{`{"name": "get_weather", `, `"arguments": {"city": "Oslo"}}`})
	body := `{"model":"tiny","max_tokens":100,"tools":[` + anthropicWeather + `],"tool_choice":{"type":"tool","name":"get_weather"},` +
		`"messages":[{"role":"user","content":"Weather?"}]`
	r := post("/v1/messages", body+`}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	c := m["content"].([]any)
	if m["stop_reason"] != "tool_use" || len(c) != 1 || c[0].(map[string]any)["name"] != "get_weather" ||
		c[0].(map[string]any)["input"].(map[string]any)["city"] != "Oslo" {
		t.Errorf("forced call: %s", r.body)
	}
	if b.last().lastReq().Grammar == nil {
		t.Error("forced call: no grammar constrains the answer")
	}
	ev := anthropicSSE(t, post("/v1/messages", body+`,"stream":true}`))
	want := "message_start ping content_block_start(0 tool_use) content_block_delta(0 input_json_delta) content_block_stop(0) message_delta message_stop"
	if got := eventNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	r = post("/v1/messages", strings.Replace(body, `{"type":"tool","name":"get_weather"}`, `{"type":"any"}`, 1)+`}`)
	wantStatus(t, r, 200)
	if b.last().lastReq().Grammar == nil || r.json(t)["stop_reason"] != "tool_use" {
		t.Errorf("tool_choice any: %s", r.body)
	}
}

func TestAnthropicErrors(t *testing.T) {
	_, _, post := anthropicServer(t, qwen3Tmpl, nil)
	user := `"messages":[{"role":"user","content":"x"}]`
	for body, word := range map[string]string{
		`{"model":"tiny",` + user + `}`:                 "max_tokens",
		`{"model":"tiny","max_tokens":0,` + user + `}`:  "max_tokens",
		`{"max_tokens":5,` + user + `}`:                 "model",
		`{"model":"tiny","max_tokens":5,"messages":[]}`: "messages",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`:                                        "image",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]}`:                                                 "document",
		`{"model":"tiny","max_tokens":5,"system":[{"type":"image"}],` + user + `}`:                                                                     "system[0]",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`:                                                                 "role",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"The"}]}`:                              "prefill",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`:             "t9",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":5}]}`:                                                                     "content",
		`{"model":"tiny","max_tokens":5,"frobnicate":1,` + user + `}`:                                                                                  "frobnicate",
		`{"model":"tiny","max_tokens":5,"mcp_servers":[{"url":"x"}],` + user + `}`:                                                                     "mcp_servers",
		`{"model":"tiny","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],` + user + `}`:                                    "web_search_20250305",
		`{"model":"tiny","max_tokens":5,"tools":[{"name":"f"}],` + user + `}`:                                                                          "input_schema",
		`{"model":"tiny","max_tokens":5,"temperature":-1,` + user + `}`:                                                                                "temperature",
		`{"model":"tiny","max_tokens":5,"output_config":{"effort":"extreme"},` + user + `}`:                                                            "effort",
		`{"model":"tiny","max_tokens":5,"output_config":{"format":{"type":"json_object"}},` + user + `}`:                                               "output_config.format",
		`{"model":"tiny","max_tokens":5,"output_config":{"format":{"type":"json_schema","schema":{"type":"string","pattern":"(?<=a)"}}},` + user + `}`: "output_config.format.schema",
		`{"model":"tiny","max_tokens":5,` + user:                                                                                                       "malformed",
	} {
		wantAnthropicError(t, post("/v1/messages", body), 400, word)
	}
	r := post("/v1/messages", `{"model":"nope","max_tokens":5,`+user+`}`)
	wantAnthropicError(t, r, 404, "nope")
	if r.json(t)["error"].(map[string]any)["type"] != "not_found_error" {
		t.Errorf("404 type: %s", r.body)
	}
	wantAnthropicError(t, post("/v1/messages/count_tokens", `{"model":"tiny","max_tokens":5,`+user+`}`), 400, "max_tokens")
	wantAnthropicError(t, post("/v1/messages/count_tokens", `{"model":"nope",`+user+`}`), 404, "nope")

	// A conversation longer than the context (the fake's 512 tokens) is a
	// 400 before any stream starts, not cut; count_tokens counts it whole.
	long := `"messages":[{"role":"user","content":"` + strings.Repeat("w ", 400) + `"},{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"` + strings.Repeat("w ", 200) + `"}]`
	wantAnthropicError(t, post("/v1/messages", `{"model":"tiny","max_tokens":5,`+long+`}`), 400, "prompt is too long")
	wantAnthropicError(t, post("/v1/messages", `{"model":"tiny","max_tokens":5,"stream":true,`+long+`}`), 400, "prompt is too long")
	r = post("/v1/messages/count_tokens", `{"model":"tiny",`+long+`}`)
	wantStatus(t, r, 200)
	if n := r.json(t)["input_tokens"].(float64); n < 600 {
		t.Errorf("count_tokens of the long chat: %v", n)
	}
}

// output_config.format constrains the answer to the schema (the grammar the
// other APIs' structured output uses); it cannot be combined with a forced
// call or with thinking.
func TestAnthropicOutputFormat(t *testing.T) {
	b, _, post := anthropicServer(t, qwen3Tmpl, []string{`{"a":`, ` 1}`})
	body := `{"model":"tiny","max_tokens":20,"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":"x"}],` +
		`"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}`
	r := post("/v1/messages", body+`}`)
	wantStatus(t, r, 200)
	if c := r.json(t)["content"].([]any); len(c) != 1 || c[0].(map[string]any)["text"] != `{"a": 1}` {
		t.Errorf("output format: %s", r.body)
	}
	if b.last().lastReq().Grammar == nil {
		t.Error("output_config.format: no grammar")
	}
	wantAnthropicError(t, post("/v1/messages", body+`,"thinking":{"type":"enabled","budget_tokens":1024}}`), 400, "thinking")
	wantAnthropicError(t, post("/v1/messages", body+`,"tools":[`+anthropicWeather+`],"tool_choice":{"type":"any"}}`), 400, "output_config.format")
}

func TestAnthropicAuth(t *testing.T) {
	_, ts := newTestServer(t, Config{APIKey: "secret"}, newFakeBackend())
	body := `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"x"}]}`
	r := do(t, ts, "POST", "/v1/messages", body, "anthropic-version", "2023-06-01")
	wantAnthropicError(t, r, 401, "API key")
	if r.json(t)["error"].(map[string]any)["type"] != "authentication_error" {
		t.Errorf("401 type: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/messages", body, "x-api-key", "secret", "anthropic-version", "2023-06-01"), 200)
	wantStatus(t, do(t, ts, "POST", "/v1/messages", body, "Authorization", "Bearer secret"), 200)
	wantAnthropicError(t, do(t, ts, "GET", "/v1/messages", "", "x-api-key", "secret"), 405, "GET")
}

// A stream silent for keepAliveEvery (a long prompt evaluation) gets
// keep-alive frames: Anthropic's ping events, and SSE comments in OpenAI
// streams (chat completions, Responses); the events around them are
// unchanged.
func TestStreamKeepAlive(t *testing.T) {
	old := keepAliveEvery
	keepAliveEvery = 20 * time.Millisecond
	defer func() { keepAliveEvery = old }()
	b := newFakeBackend()
	b.script = []string{"Hi"}
	b.gate = make(chan struct{})
	_, ts := newTestServer(t, Config{}, b)
	held := func(path, body string) resp {
		got := make(chan resp)
		go func() { got <- do(t, ts, "POST", path, body) }()
		time.Sleep(200 * time.Millisecond) // the model is "evaluating the prompt"
		b.gate <- struct{}{}
		return <-got
	}
	ev := anthropicSSE(t, held("/v1/messages", `{"model":"tiny","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	names := eventNames(ev)
	if !strings.HasPrefix(names, "message_start ping ping ping") || !strings.HasSuffix(names, "ping content_block_start(0 text) content_block_delta(0 text_delta) content_block_stop(0) message_delta message_stop") {
		t.Errorf("events: %s", names)
	}
	r := held("/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"stream":true}`)
	n := strings.Count(string(r.body), ": keep-alive\n\n")
	r.body = []byte(strings.ReplaceAll(string(r.body), ": keep-alive\n\n", ""))
	if frames := sse(t, r.body); n < 3 || len(frames) != 2 {
		t.Errorf("chat completions: %d keep-alives, %d frames", n, len(frames))
	}
	r = held("/v1/responses", `{"model":"tiny","input":"x","stream":true}`)
	n = strings.Count(string(r.body), ": keep-alive\n\n")
	r.body = []byte(strings.ReplaceAll(string(r.body), ": keep-alive\n\n", ""))
	ev = responsesEvents(t, r)
	if got := responsesNames(ev); n < 3 || got != "created in_progress output_item.added content_part.added output_text.delta* output_text.done content_part.done output_item.done completed" {
		t.Errorf("%d keep-alives; events %s", n, got)
	}
	// A model without a reasoning switch: its reasoning tokens are 0.
	u := ev[len(ev)-1].data["response"].(map[string]any)["usage"].(map[string]any)
	if d, _ := u["output_tokens_details"].(map[string]any); d == nil || d["reasoning_tokens"] != float64(0) {
		t.Errorf("usage %v", u)
	}
}

// A request shaped as Claude Code sends one (system blocks with
// cache_control, tools whose schemas carry $schema, metadata, a large
// max_tokens, temperature 1, a tool_result with is_error false, the beta
// headers) is served.
func TestAnthropicClaudeCodeShape(t *testing.T) {
	src := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	_, _, post := anthropicServer(t, src, []string{"Done."})
	body := `{"model":"tiny","max_tokens":32000,"temperature":1,"stream":true,"metadata":{"user_id":"user_abc_account__session_1"},
	"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Env: linux"}],
	"tools":[{"name":"Bash","description":"Run a command","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
	"properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"],"additionalProperties":false},"cache_control":{"type":"ephemeral"}}],
	"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"list files","cache_control":{"type":"ephemeral"}}]},
	{"role":"assistant","content":[{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"a.go\nb.go","is_error":false}]}]}`
	ev := anthropicSSE(t, post("/v1/messages?beta=true", body, "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"))
	if got := eventNames(ev); got != "message_start ping content_block_start(0 text) content_block_delta(0 text_delta) content_block_stop(0) message_delta message_stop" {
		t.Errorf("events %s", got)
	}
}

// thinking.budget_tokens bounds the reasoning: at the budget the block is
// closed and a second generation, prompted with everything so far and the
// closing tag, writes the answer; max_tokens bounds both.
func TestAnthropicThinkingBudget(t *testing.T) {
	long := append(overBudget(), "</think>", "Too late.")
	b, _, post := anthropicServer(t, qwen3Tmpl, nil)
	thought := strings.TrimSpace(strings.Repeat(" x", 1023)) // 1024 tokens with <think>
	body := `{"model":"tiny","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"?"}]`
	for _, stream := range []bool{false, true} {
		b.scripts = [][]string{long, {"Answer", "."}}
		var thinking, text string
		var usage map[string]any
		if !stream {
			m := post("/v1/messages", body+`}`).json(t)
			c := m["content"].([]any)
			if len(c) != 2 {
				t.Fatalf("content %v", c)
			}
			thinking, text = c[0].(map[string]any)["thinking"].(string), c[1].(map[string]any)["text"].(string)
			usage = m["usage"].(map[string]any)
		} else {
			ev := anthropicSSE(t, post("/v1/messages", body+`,"stream":true}`))
			if got := eventNames(ev); !strings.HasPrefix(got, "message_start ping content_block_start(0 thinking)") ||
				!strings.HasSuffix(got, "content_block_stop(0) content_block_start(1 text) content_block_delta(1 text_delta) content_block_delta(1 text_delta) content_block_stop(1) message_delta message_stop") {
				t.Errorf("events %s ... %s", got[:80], got[len(got)-200:])
			}
			for _, e := range ev {
				if d, ok := e.data["delta"].(map[string]any); ok {
					if s, ok := d["thinking"].(string); ok {
						thinking += s
					}
					if s, ok := d["text"].(string); ok {
						text += s
					}
				}
			}
			usage = ev[len(ev)-2].data["usage"].(map[string]any)
		}
		if thinking != thought || text != "Answer." || usage["output_tokens"] != float64(1026) {
			t.Errorf("stream %v: thinking of %d bytes, text %q, usage %v", stream, len(thinking), text, usage)
		}
		req := b.last().lastReq()
		if !strings.HasSuffix(req.Prompt, "<|im_start|>assistant\n<think>"+strings.Repeat(" x", 1023)+"\n</think>\n\n") || req.MaxTokens != 2000-1024 {
			t.Errorf("stream %v: continuation prompt ends %q, max tokens %d", stream, req.Prompt[max(0, len(req.Prompt)-60):], req.MaxTokens)
		}
	}
	// Reasoning that ends within the budget needs no second generation.
	b.scripts = [][]string{{"<think>", "short", "</think>", "Done."}}
	n := len(b.last().reqs)
	m := post("/v1/messages", body+`}`).json(t)
	if c := m["content"].([]any); len(c) != 2 || c[1].(map[string]any)["text"] != "Done." || len(b.last().reqs) != n+1 {
		t.Errorf("within the budget: %v, %d generations", m, len(b.last().reqs)-n)
	}
}

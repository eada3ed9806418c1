package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// responsesEvents checks a Responses stream's framing (named events whose
// data.type is the name, sequence numbers 0, 1, 2, ..., no [DONE]) and
// returns its events.
func responsesEvents(t *testing.T, r resp) []anthropicEvent {
	t.Helper()
	ev := anthropicSSE(t, r)
	for i, e := range ev {
		if e.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d (%s): sequence_number %v", i, e.name, e.data["sequence_number"])
		}
	}
	return ev
}

// responsesNames is the events' names, a run of text deltas merged into
// one "...delta*" entry, so a test needs not know how the text was cut.
func responsesNames(ev []anthropicEvent) string {
	var out []string
	for _, e := range ev {
		n := strings.TrimPrefix(e.name, "response.")
		if strings.HasSuffix(n, "text.delta") {
			n += "*" // one or more
			if len(out) > 0 && out[len(out)-1] == n {
				continue
			}
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

func responsesServer(t *testing.T, tmpl string, script []string) (*fakeBackend, func(body string) resp) {
	t.Helper()
	b := newFakeBackend()
	b.template, b.script, b.count = tmpl, script, true
	_, ts := newTestServer(t, Config{}, b)
	return b, func(body string) resp {
		return do(t, ts, "POST", "/v1/responses", body, "Content-Type", "application/json")
	}
}

func outputItems(t *testing.T, r resp) []map[string]any {
	t.Helper()
	wantStatus(t, r, 200)
	var out []map[string]any
	for _, it := range r.json(t)["output"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func TestResponsesPlain(t *testing.T) {
	b, post := responsesServer(t, qwen3Tmpl, []string{"Hello", " there", " friend"})
	r := post(`{"model":"tiny","instructions":"Be brief.","input":"Hi","temperature":0.5,"top_p":0.9,"max_output_tokens":50,"store":false}`)
	items := outputItems(t, r)
	m := r.json(t)
	if !strings.HasPrefix(m["id"].(string), "resp_") || m["object"] != "response" || m["status"] != "completed" || m["model"] != "tiny" ||
		m["instructions"] != "Be brief." || m["max_output_tokens"] != float64(50) {
		t.Errorf("response %s", r.body)
	}
	if len(items) != 1 || items[0]["type"] != "message" || items[0]["role"] != "assistant" || items[0]["status"] != "completed" {
		t.Fatalf("output %v", items)
	}
	part := items[0]["content"].([]any)[0].(map[string]any)
	if part["type"] != "output_text" || part["text"] != "Hello there friend" {
		t.Errorf("content %v", part)
	}
	req := b.last().lastReq()
	if want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; req.Prompt != want {
		t.Errorf("prompt %q, want %q", req.Prompt, want)
	}
	if req.Temperature != 0.5 || req.TopP != 0.9 || req.MaxTokens != 50 {
		t.Errorf("sampling %+v max %d", req.SamplerOptions, req.MaxTokens)
	}
	u := m["usage"].(map[string]any)
	if u["input_tokens"] != float64(len(strings.Fields(req.Prompt))) || u["output_tokens"] != float64(3) || u["total_tokens"] != u["input_tokens"].(float64)+3 {
		t.Errorf("usage %v", u)
	}

	// A thinking model's reasoning tokens are not counted apart: no
	// output_tokens_details (TestStreamKeepAlive has a model without).
	if d := u["input_tokens_details"].(map[string]any); d["cached_tokens"] != float64(0) || u["output_tokens_details"] != nil {
		t.Errorf("usage details %v", u)
	}
	b.cached = 2
	r = post(`{"model":"tiny","input":"Hi"}`)
	if u := r.json(t)["usage"].(map[string]any); u["input_tokens_details"].(map[string]any)["cached_tokens"] != float64(2) {
		t.Errorf("cached usage %v", u)
	}
	b.cached = 0

	// Streamed: the same text in output_text deltas, the events in order.
	ev := responsesEvents(t, post(`{"model":"tiny","input":"Hi","stream":true}`))
	want := "created in_progress output_item.added content_part.added output_text.delta* output_text.done content_part.done output_item.done completed"
	if got := responsesNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	var text strings.Builder
	for _, e := range ev {
		if e.name == "response.output_text.delta" {
			text.WriteString(e.data["delta"].(string))
		}
	}
	done := ev[len(ev)-1].data["response"].(map[string]any)
	final := done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
	if text.String() != "Hello there friend" || final != text.String() || done["status"] != "completed" || done["usage"] == nil {
		t.Errorf("streamed %q, final %v %v", text.String(), final, done)
	}
	if c := ev[0].data["response"].(map[string]any); c["status"] != "in_progress" || len(c["output"].([]any)) != 0 {
		t.Errorf("response.created %v", c)
	}

	// max_output_tokens cuts it: status incomplete, streamed and not.
	r = post(`{"model":"tiny","input":"Hi","max_output_tokens":2}`)
	if m := r.json(t); m["status"] != "incomplete" || m["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Errorf("incomplete: %s", r.body)
	}
	// The cut message item is incomplete too, as OpenAI marks it.
	if items := outputItems(t, r); len(items) != 1 || items[0]["status"] != "incomplete" {
		t.Errorf("incomplete: the message item %v", items)
	}
	ev = responsesEvents(t, post(`{"model":"tiny","input":"Hi","max_output_tokens":2,"stream":true}`))
	if last := ev[len(ev)-1]; last.name != "response.incomplete" || last.data["response"].(map[string]any)["status"] != "incomplete" ||
		last.data["response"].(map[string]any)["output"].([]any)[0].(map[string]any)["status"] != "incomplete" {
		t.Errorf("stream incomplete: %s %v", last.name, last.data)
	}
	for _, e := range ev {
		if e.name == "response.output_item.done" && e.data["item"].(map[string]any)["status"] != "incomplete" {
			t.Errorf("stream incomplete: output_item.done %v", e.data)
		}
	}
	// An empty answer cut by max_output_tokens: its empty message too.
	b.script = []string{""}
	if items := outputItems(t, post(`{"model":"tiny","input":"Hi","max_output_tokens":1}`)); len(items) != 1 || items[0]["status"] != "incomplete" {
		t.Errorf("incomplete empty answer: %v", items)
	}
}

func TestResponsesReasoning(t *testing.T) {
	b, post := responsesServer(t, qwen3Tmpl, []string{"<th", "ink>\nLet me", " see.\n</thi", "nk>\n\n", "Four."})
	items := outputItems(t, post(`{"model":"tiny","input":"2+2?","reasoning":{"effort":"low","summary":"auto"}}`))
	if len(items) != 2 || items[0]["type"] != "reasoning" || items[1]["type"] != "message" {
		t.Fatalf("output %v", items)
	}
	if c := items[0]["content"].([]any)[0].(map[string]any); c["type"] != "reasoning_text" || c["text"] != "Let me see." {
		t.Errorf("reasoning %v", items[0])
	}
	if c := items[1]["content"].([]any)[0].(map[string]any); c["text"] != "Four." {
		t.Errorf("message %v", items[1])
	}
	ev := responsesEvents(t, post(`{"model":"tiny","input":"2+2?","stream":true}`))
	want := "created in_progress output_item.added content_part.added reasoning_text.delta* reasoning_text.done content_part.done output_item.done " +
		"output_item.added content_part.added output_text.delta* output_text.done content_part.done output_item.done completed"
	if got := responsesNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	// effort none: the template's switch off.
	post(`{"model":"tiny","input":"2+2?","reasoning":{"effort":"none"}}`)
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<think>\n\n</think>\n\n") {
		t.Errorf("effort none: prompt %q", p)
	}
	// Reasoning items of earlier turns are left out of the prompt.
	r := post(`{"model":"tiny","input":[{"role":"user","content":"2+2?"},{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"SECRET"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"4"}]},{"role":"user","content":[{"type":"input_text","text":"3+3?"}]}]}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; strings.Contains(p, "SECRET") || !strings.Contains(p, "assistant\n4<|im_end|>") || !strings.Contains(p, "user\n3+3?") {
		t.Errorf("history: prompt %q", p)
	}
}

func TestResponsesTools(t *testing.T) {
	src := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	b, post := responsesServer(t, src, toolScript)
	tool := `{"type":"function","name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}`
	input := `[{"role":"developer","content":"Use tools."},{"role":"user","content":"Weather in Paris?"},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18C"}]`
	body := `{"model":"tiny","tools":[` + tool + `],"input":` + input
	items := outputItems(t, post(body+`}`))
	p := b.last().lastReq().Prompt
	for _, w := range []string{"Use tools.", `{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters"`,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "<tool_response>\n18C\n</tool_response>"} {
		if !strings.Contains(p, w) {
			t.Errorf("prompt lacks %q:\n%s", w, p)
		}
	}
	if len(items) != 3 || items[0]["type"] != "message" || items[1]["type"] != "function_call" || items[2]["type"] != "function_call" {
		t.Fatalf("output %v", items)
	}
	for i, w := range []string{`get_weather {"city":"Paris"}`, `get_time {}`} {
		c := items[i+1]
		if c["name"].(string)+" "+c["arguments"].(string) != w || c["call_id"] == "" || !strings.HasPrefix(c["id"].(string), "fc_") || c["status"] != "completed" {
			t.Errorf("call %d: %v, want %s", i, c, w)
		}
	}
	ev := responsesEvents(t, post(body+`,"stream":true}`))
	want := "created in_progress output_item.added content_part.added output_text.delta* output_text.done content_part.done output_item.done " +
		"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done " +
		"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done completed"
	if got := responsesNames(ev); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	for _, e := range ev {
		if e.name == "response.function_call_arguments.delta" {
			if e.data["delta"] != `{"city":"Paris"}` {
				t.Errorf("first call's arguments delta %v", e.data)
			}
			break
		}
	}
	// parallel_tool_calls false keeps the first call; tool_choice none offers none.
	if items := outputItems(t, post(body+`,"parallel_tool_calls":false}`)); len(items) != 2 {
		t.Errorf("parallel_tool_calls false: %v", items)
	}
	post(body + `,"tool_choice":"none"}`)
	if p := b.last().lastReq().Prompt; strings.Contains(p, `"parameters"`) {
		t.Errorf("tool_choice none offered the tools")
	}

	// A forced call: the grammar constrains the answer.
	b.script = []string{`{"name": "get_weather", "arguments": {"city": "Oslo"}}`}
	items = outputItems(t, post(body+`,"tool_choice":{"type":"function","name":"get_weather"}}`))
	if len(items) != 1 || items[0]["name"] != "get_weather" || items[0]["arguments"] != `{"city":"Oslo"}` || b.last().lastReq().Grammar == nil {
		t.Errorf("forced call: %v", items)
	}
	items = outputItems(t, post(body+`,"tool_choice":"required"}`))
	if len(items) != 1 || items[0]["type"] != "function_call" {
		t.Errorf("required: %v", items)
	}
}

func TestResponsesTextFormat(t *testing.T) {
	b, post := responsesServer(t, qwen3Tmpl, []string{`{"a":`, ` 1}`})
	items := outputItems(t, post(`{"model":"tiny","input":"x","text":{"format":{"type":"json_schema","name":"a","strict":true,`+
		`"schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}}}`))
	if b.last().lastReq().Grammar == nil || items[0]["content"].([]any)[0].(map[string]any)["text"] != `{"a": 1}` {
		t.Errorf("json_schema: %v", items)
	}
	post(`{"model":"tiny","input":"x","text":{"format":{"type":"json_object"}}}`)
	if b.last().lastReq().Grammar == nil {
		t.Error("json_object: no grammar")
	}
	post(`{"model":"tiny","input":"x","text":{"format":{"type":"text"}}}`)
	if b.last().lastReq().Grammar != nil {
		t.Error("text: a grammar")
	}
}

func TestResponsesErrors(t *testing.T) {
	_, post := responsesServer(t, qwen3Tmpl, nil)
	for body, word := range map[string]string{
		`{"model":"tiny","input":"x","previous_response_id":"resp_1"}`: "previous_response_id",
		`{"input":"x"}`:               "model",
		`{"model":"tiny"}`:            "input",
		`{"model":"tiny","input":[]}`: "input",
		`{"model":"tiny","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`: "input_image",
		`{"model":"tiny","input":[{"type":"item_reference","id":"msg_1"}]}`:                             "item_reference",
		`{"model":"tiny","input":[{"type":"function_call_output","call_id":"c9","output":"x"}]}`:        "c9",
		`{"model":"tiny","input":[{"role":"tool","content":"x"}]}`:                                      "role",
		`{"model":"tiny","input":"x","tools":[{"type":"web_search"}]}`:                                  "web_search",
		`{"model":"tiny","input":"x","tool_choice":"required"}`:                                         "tool_choice",
		`{"model":"tiny","input":"x","max_output_tokens":0}`:                                            "max_output_tokens",
		`{"model":"tiny","input":"x","truncation":"sometimes"}`:                                         "truncation",
		`{"model":"tiny","input":"x","include":["message.output_text.logprobs"]}`:                       "include",
		`{"model":"tiny","input":"x","text":{"format":{"type":"xml"}}}`:                                 "text.format",
		`{"model":"tiny","input":"x","reasoning":{"effort":"huge"}}`:                                    "reasoning.effort",
		`{"model":"tiny","input":"x","background":true}`:                                                "background",
		`{"model":"tiny","input":"x","context_management":[{"type":"compaction"}]}`:                     "context_management",
		`{"model":"tiny","input":"x","frobnicate":1}`:                                                   "frobnicate",
		`{"model":"tiny","input":"x","temperature":-1}`:                                                 "temperature",
	} {
		r := post(body)
		wantStatus(t, r, 400)
		e, _ := r.json(t)["error"].(map[string]any)
		if e == nil || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), word) {
			t.Errorf("%s: %s, want OpenAI's shape naming %q", body, r.body, word)
		}
	}
	r := post(`{"model":"nope","input":"x"}`)
	wantStatus(t, r, 404)
	// An input longer than the context: a 400 with truncation disabled
	// (OpenAI's default), the oldest turns dropped with auto.
	long := `[{"role":"user","content":"` + strings.Repeat("w ", 400) + `"},{"role":"assistant","content":"ok"},{"role":"user","content":"` + strings.Repeat("w ", 200) + `"}]`
	r = post(`{"model":"tiny","stream":true,"input":` + long + `}`)
	wantStatus(t, r, 400)
	if e := r.json(t)["error"].(map[string]any); !strings.Contains(e["message"].(string), "prompt is too long") || e["code"] != "context_length_exceeded" {
		t.Errorf("long input: %s", r.body)
	}
	wantStatus(t, post(`{"model":"tiny","truncation":"auto","input":`+long+`}`), 200)
	var m map[string]any
	json.Unmarshal(post(`{"model":"tiny","input":"x","store":true,"metadata":{"k":"v"}}`).body, &m)
	if m["store"] != false {
		t.Errorf("store: %v", m)
	}
}

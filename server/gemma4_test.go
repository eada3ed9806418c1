package server

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// gemma4Reply is what the runtime's Gemma 4 rewriter (runtime/gemma4out.go)
// gives out for a reply that thinks, says a word and calls get_weather:
// <|channel>thought\nNeed the weather.<channel|>Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>.
const gemma4Reply = `<think>Need the weather.</think>Checking.<tool_call>{"name": "get_weather", "arguments": {"city":"Paris"}}</tool_call>`

// gemma4Server serves a fake model with Gemma 4's published template
// whose every generation is gemma4Reply, one byte per piece (so the
// thinking splitter and the tool parser see it cut at every boundary).
func gemma4Server(t *testing.T) (*fakeBackend, func(path, body string) resp) {
	t.Helper()
	var script []string
	for i := range len(gemma4Reply) {
		script = append(script, gemma4Reply[i:i+1])
	}
	return scriptedServer(t, chatTemplate(t, "templates/gemma4.jinja"), script)
}

// TestGemma4Tools: with Gemma 4's template, the tools, an earlier call and
// its result are rendered in Gemma 4's own notation, and the model's
// thought and call come back apart in each API: reasoning_content and
// tool_calls (OpenAI chat, whole and streamed), thinking and tool_calls
// (Ollama, whole and streamed), thinking and tool_use blocks (Anthropic),
// reasoning and function_call items (responses).
func TestGemma4Tools(t *testing.T) {
	b, post := gemma4Server(t)
	var capabilities []string
	for _, v := range post("/api/show", `{"model":"tiny"}`).json(t)["capabilities"].([]any) {
		capabilities = append(capabilities, v.(string))
	}
	if strings.Join(capabilities, " ") != "completion tools thinking" {
		t.Errorf("capabilities %v", capabilities)
	}
	history := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18C"},` +
		`{"role":"assistant","content":"It is 18C."},{"role":"user","content":"And now?"}]`
	r := post("/v1/chat/completions", `{"model":"tiny","max_tokens":500,"reasoning_effort":"high","tools":[`+weatherTool+`],"messages":`+history+`}`)
	wantStatus(t, r, 200)
	p := b.last().lastReq().Prompt
	want := `<|turn>system` + "\n" + `<|think|>` + "\n" + `<|tool>declaration:get_weather{description:<|"|>Get the weather<|"|>,parameters:{properties:{city:{type:<|"|>STRING<|"|>}},required:[<|"|>city<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><turn|>` + "\n" +
		"<|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n" +
		`<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_response>response:get_weather{value:<|"|>18C<|"|>}<tool_response|>It is 18C.<turn|>` + "\n" +
		"<|turn>user\nAnd now?<turn|>\n<|turn>model\n"
	if !strings.HasSuffix(p, want) {
		t.Errorf("prompt\n%q\nwant suffix\n%q", p, want)
	}
	choice := r.json(t)["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if choice["finish_reason"] != "tool_calls" || msg["reasoning_content"] != "Need the weather." || msg["content"] != "Checking." {
		t.Errorf("choice %v", choice)
	}
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}}, false)

	r = post("/v1/chat/completions", `{"model":"tiny","max_tokens":500,"stream":true,"reasoning_effort":"high","tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	reasoning, content, calls := openAIDeltas(t, r.body)
	if reasoning != "Need the weather." || content != "Checking." {
		t.Errorf("streamed reasoning %q content %q", reasoning, content)
	}
	checkOpenAICalls(t, calls, []call{{"get_weather", `{"city":"Paris"}`}}, true)

	r = post("/api/chat", `{"model":"tiny","options":{"num_predict":500},"stream":false,"think":true,"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	m := r.json(t)["message"].(map[string]any)
	if m["thinking"] != "Need the weather." || m["content"] != "Checking." {
		t.Errorf("ollama message %v", m)
	}
	checkOllamaCalls(t, m["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}})

	r = post("/api/chat", `{"model":"tiny","options":{"num_predict":500},"think":true,"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	thinking, ocontent, calls := ollamaDeltas(t, r.body)
	if thinking != "Need the weather." || ocontent != "Checking." {
		t.Errorf("ollama streamed thinking %q content %q", thinking, ocontent)
	}
	checkOllamaCalls(t, calls, []call{{"get_weather", `{"city":"Paris"}`}})

	r = post("/v1/messages", `{"model":"tiny","max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":2000},"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	var kinds []string
	for _, c := range r.json(t)["content"].([]any) {
		cm := c.(map[string]any)
		kinds = append(kinds, cm["type"].(string))
		in, _ := json.Marshal(cm["input"])
		if (cm["type"] == "thinking" && cm["thinking"] != "Need the weather.") || (cm["type"] == "text" && cm["text"] != "Checking.") ||
			(cm["type"] == "tool_use" && (cm["name"] != "get_weather" || string(in) != `{"city":"Paris"}`)) {
			t.Errorf("anthropic block %v", cm)
		}
	}
	if strings.Join(kinds, " ") != "thinking text tool_use" {
		t.Errorf("anthropic blocks %v: %s", kinds, r.body)
	}

	// Anthropic, streamed: thinking, text and the call's input as deltas.
	ev := anthropicSSE(t, post("/v1/messages", `{"model":"tiny","stream":true,"max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":2000},"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"Weather?"}]}`))
	var th, text, input strings.Builder
	for _, e := range ev {
		d, _ := e.data["delta"].(map[string]any)
		switch d["type"] {
		case "thinking_delta":
			th.WriteString(d["thinking"].(string))
		case "text_delta":
			text.WriteString(d["text"].(string))
		case "input_json_delta":
			input.WriteString(d["partial_json"].(string))
		}
	}
	if th.String() != "Need the weather." || text.String() != "Checking." || input.String() != `{"city":"Paris"}` {
		t.Errorf("anthropic stream: thinking %q text %q input %q", th.String(), text.String(), input.String())
	}

	tool := `{"type":"function","name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	r = post("/v1/responses", `{"model":"tiny","max_output_tokens":500,"reasoning":{"effort":"low"},"tools":[`+tool+`],"input":"Weather?"}`)
	wantStatus(t, r, 200)
	kinds = nil
	for _, it := range r.json(t)["output"].([]any) {
		im := it.(map[string]any)
		kinds = append(kinds, im["type"].(string))
		if im["type"] == "function_call" && (im["name"] != "get_weather" || im["arguments"] != `{"city":"Paris"}`) {
			t.Errorf("function_call %v", im)
		}
		if im["type"] == "reasoning" && !strings.Contains(mustJSON(im), "Need the weather.") {
			t.Errorf("reasoning %v", im)
		}
	}
	if strings.Join(kinds, " ") != "reasoning message function_call" {
		t.Errorf("responses output %v: %s", kinds, r.body)
	}
	// Responses, streamed: the completed response has the same items.
	ev = responsesEvents(t, post("/v1/responses", `{"model":"tiny","stream":true,"max_output_tokens":500,"reasoning":{"effort":"low"},"tools":[`+tool+`],"input":"Weather?"}`))
	last := ev[len(ev)-1]
	out, _ := json.Marshal(last.data["response"].(map[string]any)["output"])
	if last.name != "response.completed" || !strings.Contains(string(out), "Need the weather.") || !strings.Contains(string(out), `"arguments":"{\"city\":\"Paris\"}"`) ||
		!strings.Contains(string(out), `"text":"Checking."`) {
		t.Errorf("responses stream ends %s %s", last.name, out)
	}
}

// TestGemma4ThinkingSwitch: each API's reasoning switch is Gemma 4's
// <|think|> in the system turn (on) or the empty thought channel that
// opens the model's turn (off, and the default).
func TestGemma4ThinkingSwitch(t *testing.T) {
	b, post := gemma4Server(t)
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	const off, on = "<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", "<|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n"
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"tiny",` + msgs + `}`, off},
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"none",` + msgs + `}`, off},
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"medium",` + msgs + `}`, on},
		{"/v1/chat/completions", `{"model":"tiny","chat_template_kwargs":{"enable_thinking":true},` + msgs + `}`, on},
		{"/api/chat", `{"model":"tiny","stream":false,"think":false,` + msgs + `}`, off},
		{"/api/chat", `{"model":"tiny","stream":false,"think":"high",` + msgs + `}`, on},
		{"/v1/responses", `{"model":"tiny","reasoning":{"effort":"none"},"input":"Hi"}`, off},
		{"/v1/responses", `{"model":"tiny","reasoning":{"effort":"high"},"input":"Hi"}`, on},
		{"/v1/messages", `{"model":"tiny","max_tokens":100,"thinking":{"type":"disabled"},` + msgs + `}`, off},
		{"/v1/messages", `{"model":"tiny","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},` + msgs + `}`, on},
	} {
		r := post(c.path, c.body)
		wantStatus(t, r, 200)
		if p := b.last().lastReq().Prompt; p != c.want {
			t.Errorf("%s %s:\nprompt %q\nwant   %q", c.path, c.body, p, c.want)
		}
	}
}

// TestGemma4ThinkingBudget: at the budget, Gemma 4's continuation closes
// its thought channel in its own tags (not Qwen3's </think> text).
func TestGemma4ThinkingBudget(t *testing.T) {
	b, post := gemma4Server(t)
	p := thinkOverBudget(t, b, post)
	if want := "<|turn>model\n<|channel>thought\n" + strings.Repeat(" x", 1023) + "<channel|>"; !strings.HasSuffix(p, want) {
		t.Errorf("continuation prompt ends %q", p[max(0, len(p)-120):])
	}
}

// TestGemma4MiniEndToEnd: the gemma4 mini (random weights) served with
// the built-in Gemma 4 format (--chat-template gemma4), its reply forced
// by a GBNF grammar (the request's own grammar field) to a thought and a
// call in Gemma 4's notation: the runtime's rewriter and the server's
// parsers give reasoning_content and tool_calls, whole and streamed.
func TestGemma4MiniEndToEnd(t *testing.T) {
	dir := t.TempDir()
	writePresets(t, dir, "gemma4-mini")
	s, err := New(Config{ModelsDir: dir, Threads: 1, ChatTemplate: "gemma4"}, RuntimeBackend{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })

	reply := "<|channel>thought\nNeed the weather.<channel|>Checking.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>"
	gbnf, _ := json.Marshal(`root ::= ` + strconv.Quote(reply))
	body := `{"model":"gemma4-mini","max_tokens":200,"reasoning_effort":"high","grammar":` + string(gbnf) +
		`,"tools":[` + weatherTool + `],"messages":[{"role":"user","content":"Weather in Paris?"}]`
	st, b := post(t, ts.URL+"/v1/chat/completions", body+`}`)
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	var r struct {
		Choices []struct {
			FinishReason string         `json:"finish_reason"`
			Message      map[string]any `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("%v %s", err, b)
	}
	msg := r.Choices[0].Message
	if r.Choices[0].FinishReason != "tool_calls" || msg["reasoning_content"] != "Need the weather." || msg["content"] != "Checking." {
		t.Errorf("reply %s", b)
	}
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris","days":2}`}}, false)

	st, b = post(t, ts.URL+"/v1/chat/completions", body+`,"stream":true}`)
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	reasoning, content, calls := openAIDeltas(t, b)
	if reasoning != "Need the weather." || content != "Checking." {
		t.Errorf("streamed reasoning %q content %q", reasoning, content)
	}
	checkOpenAICalls(t, calls, []call{{"get_weather", `{"city":"Paris","days":2}`}}, true)
}

// streamed gathers the reasoning, the content and the tool calls of a
// stream's chunks.
type streamed struct {
	reasoning, content strings.Builder
	calls              []any
}

// add takes a chunk's delta or message m, whose reasoning is under key.
func (s *streamed) add(m map[string]any, key string) {
	r, _ := m[key].(string)
	s.reasoning.WriteString(r)
	c, _ := m["content"].(string)
	s.content.WriteString(c)
	if tc, ok := m["tool_calls"].([]any); ok {
		s.calls = append(s.calls, tc...)
	}
}

// openAIDeltas joins a chat-completions stream's reasoning_content and
// content deltas and collects its tool-call deltas.
func openAIDeltas(t *testing.T, body []byte) (reasoning, content string, calls []any) {
	t.Helper()
	var s streamed
	for _, ev := range sse(t, body) {
		for _, c := range ev["choices"].([]any) {
			s.add(c.(map[string]any)["delta"].(map[string]any), "reasoning_content")
		}
	}
	return s.reasoning.String(), s.content.String(), s.calls
}

// ollamaDeltas joins an Ollama chat stream's thinking and content and
// collects its tool calls.
func ollamaDeltas(t *testing.T, body []byte) (thinking, content string, calls []any) {
	t.Helper()
	var s streamed
	for _, line := range ndjson(t, body) {
		s.add(line["message"].(map[string]any), "thinking")
	}
	return s.reasoning.String(), s.content.String(), s.calls
}

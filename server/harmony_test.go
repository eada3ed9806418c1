package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// harmonyScript is what runtime's harmony rewriter gives out for a gpt-oss
// reply that reasons on the analysis channel, then calls get_weather on the
// commentary channel (runtime/harmony.go turns the tokens
// <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>commentary
// to=functions.get_weather <|constrain|>json<|message|>{...}<|call|> into these pieces).
var harmonyScript = []string{"<think>Need the", " weather.</think>", `<tool_call>{"name": "get_weather", "arguments": `, `{"city": "Paris"}`, `}</tool_call>`}

func harmonyServer(t *testing.T) (*fakeBackend, func(path, body string) resp) {
	t.Helper()
	return scriptedServer(t, chatTemplate(t, "tools/openai-gpt-oss-120b.jinja"), harmonyScript)
}

// TestHarmonyTools: with gpt-oss's template, tools are rendered in the
// harmony functions namespace, earlier calls and results as messages to
// and from functions.NAME, and a call the model makes comes back as
// tool_calls (Ollama, OpenAI chat), function_call items (responses) and
// tool_use blocks (Anthropic), its reasoning apart.
func TestHarmonyTools(t *testing.T) {
	b, post := harmonyServer(t)
	history := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18C"}]`
	r := post("/v1/chat/completions", `{"model":"tiny","tools":[`+weatherTool+`],"messages":`+history+`}`)
	wantStatus(t, r, 200)
	p := b.last().lastReq().Prompt
	for _, w := range []string{"Calls to these tools must go to the commentary channel: 'functions'.",
		"namespace functions {\n\n// Get the weather\ntype get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions",
		"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>",
		"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"18C\"<|end|><|start|>assistant"} {
		if !strings.Contains(p, w) {
			t.Errorf("prompt lacks %q:\n%s", w, p)
		}
	}
	choice := r.json(t)["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if choice["finish_reason"] != "tool_calls" || msg["reasoning_content"] != "Need the weather." || (msg["content"] != nil && msg["content"] != "") {
		t.Errorf("choice %v", choice)
	}
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}}, false)

	r = post("/api/chat", `{"model":"tiny","stream":false,"think":true,"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	m := r.json(t)["message"].(map[string]any)
	if m["thinking"] != "Need the weather." || m["content"] != "" {
		t.Errorf("ollama message %v", m)
	}
	checkOllamaCalls(t, m["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}})

	tool := `{"type":"function","name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	r = post("/v1/responses", `{"model":"tiny","tools":[`+tool+`],"input":"Weather?"}`)
	wantStatus(t, r, 200)
	var fc map[string]any
	for _, it := range r.json(t)["output"].([]any) {
		if m := it.(map[string]any); m["type"] == "function_call" {
			fc = m
		}
	}
	if fc == nil || fc["name"] != "get_weather" || fc["arguments"] != `{"city":"Paris"}` {
		t.Errorf("responses output %s", r.body)
	}

	r = post("/v1/messages", `{"model":"tiny","max_tokens":100,"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	var use map[string]any
	for _, c := range r.json(t)["content"].([]any) {
		if m := c.(map[string]any); m["type"] == "tool_use" {
			use = m
		}
	}
	in, _ := json.Marshal(use["input"])
	if use == nil || use["name"] != "get_weather" || string(in) != `{"city":"Paris"}` {
		t.Errorf("anthropic content %s", r.body)
	}
}

// TestHarmonyEffort: each API's reasoning effort becomes the "Reasoning:"
// line of gpt-oss's system message; a bad value is a 400 naming its field.
func TestHarmonyEffort(t *testing.T) {
	b, post := harmonyServer(t)
	b.script = []string{"<think>", "x", "</think>", "ok"}
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"tiny",` + msgs + `}`, "medium"},
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"high",` + msgs + `}`, "high"},
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"minimal",` + msgs + `}`, "low"},
		{"/api/chat", `{"model":"tiny","stream":false,"think":"low",` + msgs + `}`, "low"},
		{"/api/chat", `{"model":"tiny","stream":false,"think":true,` + msgs + `}`, "medium"},
		{"/v1/responses", `{"model":"tiny","reasoning":{"effort":"high"},"input":"Hi"}`, "high"},
		{"/v1/messages", `{"model":"tiny","max_tokens":50000,"thinking":{"type":"enabled","budget_tokens":2000},` + msgs + `}`, "low"},
		{"/v1/messages", `{"model":"tiny","max_tokens":50000,"thinking":{"type":"enabled","budget_tokens":20000},` + msgs + `}`, "high"},
		{"/v1/messages", `{"model":"tiny","max_tokens":100,"output_config":{"effort":"max"},` + msgs + `}`, "high"},
	} {
		r := post(c.path, c.body)
		wantStatus(t, r, 200)
		if p := b.last().lastReq().Prompt; !strings.Contains(p, "\nReasoning: "+c.want+"\n") {
			t.Errorf("%s %s: prompt %q", c.path, c.body, p)
		}
	}
	for _, c := range []struct{ path, body, field string }{
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"extreme",` + msgs + `}`, "reasoning_effort"},
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"none",` + msgs + `}`, "reasoning_effort"},
		{"/api/chat", `{"model":"tiny","think":"max",` + msgs + `}`, "think"},
		{"/v1/responses", `{"model":"tiny","reasoning":{"effort":"huge"},"input":"Hi"}`, "reasoning.effort"},
		{"/v1/messages", `{"model":"tiny","max_tokens":100,"output_config":{"effort":"lots"},` + msgs + `}`, "output_config.effort"},
	} {
		r := post(c.path, c.body)
		wantStatus(t, r, 400)
		if !strings.Contains(string(r.body), c.field) {
			t.Errorf("%s %s: %s", c.path, c.body, r.body)
		}
	}
}

// TestHarmonyForcedTool: a forced call (tool_choice "required") on gpt-oss
// goes through the shared constrained-sampling path: the grammar is set and
// the answer, one JSON call, comes back as tool_calls.
func TestHarmonyForcedTool(t *testing.T) {
	b, post := harmonyServer(t)
	b.script = []string{`{"name": "get_weather", `, `"arguments": {"city": "Paris"}}`}
	r := post("/v1/chat/completions", `{"model":"tiny","tool_choice":"required","tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	if b.last().lastReq().Grammar == nil {
		t.Error("forced call without a grammar")
	}
	msg := r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}}, false)
	// A named tool: the turn opens as the call in harmony's header and the
	// model writes only the arguments.
	b.script = []string{`{"city": `, `"Paris"}`}
	r = post("/v1/chat/completions", `{"model":"tiny","tool_choice":{"type":"function","function":{"name":"get_weather"}},"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") {
		t.Errorf("named call prompt ends %q", p[max(0, len(p)-100):])
	}
	msg = r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	checkOpenAICalls(t, msg["tool_calls"], []call{{"get_weather", `{"city":"Paris"}`}}, false)
	r = post("/v1/messages", `{"model":"tiny","max_tokens":100,"tool_choice":{"type":"tool","name":"get_weather"},"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.body), `"type":"tool_use"`) || !strings.Contains(string(r.body), `"input":{"city":"Paris"}`) {
		t.Errorf("anthropic named call: %s", r.body)
	}
	// Forcing a call from the first token leaves no room for reasoning.
	r = post("/v1/chat/completions", `{"model":"tiny","tool_choice":"required","reasoning_effort":"high","tools":[`+weatherTool+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	wantStatus(t, r, 400)
}

// TestHarmonyThinkingBudget: at the budget, gpt-oss's continuation closes
// the analysis message and opens the final channel in harmony's own format
// (not Qwen3's </think> text).
func TestHarmonyThinkingBudget(t *testing.T) {
	b, post := harmonyServer(t)
	p := thinkOverBudget(t, b, post)
	if want := "<|start|>assistant<|channel|>analysis<|message|>" + strings.Repeat(" x", 1023) + "<|end|><|start|>assistant<|channel|>final<|message|>"; !strings.HasSuffix(p, want) {
		t.Errorf("continuation prompt ends %q", p[max(0, len(p)-120):])
	}
	if !strings.Contains(p, "Reasoning: low") {
		t.Error("budget 1024 is not effort low")
	}
}

// Raw completions (no chat template applied) ask the runtime for the
// model's literal text (GenerateRequest.Literal: gpt-oss's format text as
// llama-server prints it); requests rendered by the chat template do not.
func TestLiteralForRawCompletions(t *testing.T) {
	b, _, post := anthropicServer(t, qwen3Tmpl, []string{"Hello"})
	for _, c := range []struct {
		path, body string
		literal    bool
	}{
		{"/v1/completions", `{"model":"tiny","prompt":"Once","max_tokens":4}`, true},
		{"/completion", `{"model":"tiny","prompt":"Once","n_predict":4}`, true},
		{"/api/generate", `{"model":"tiny","prompt":"Once","raw":true,"stream":false}`, true},
		{"/api/generate", `{"model":"tiny","prompt":"Once","stream":false}`, false},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`, false},
		{"/v1/messages", `{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"Hi"}]}`, false},
	} {
		r := post(c.path, c.body)
		wantStatus(t, r, 200)
		if got := b.last().lastReq().Literal; got != c.literal {
			t.Errorf("%s %s: Literal %v, want %v", c.path, c.body, got, c.literal)
		}
	}
}

package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// harmonySystem is the system message harmony opens with, at reasoning
// effort, up to its end.
func harmonySystem(effort string) string {
	return "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: " +
		time.Now().Format("2006-01-02") + "\n\nReasoning: " + effort + "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message."
}

// TestHarmony: gpt-oss's format as its template renders a conversation
// without tools (system turn with today's date, the system message as the
// developer's instructions, earlier answers on the final channel), the
// detection of its template, and the split of a reply into the analysis
// (reasoning) and final (answer) channels.
func TestHarmony(t *testing.T) {
	if got := Detect(`{{- "<|start|>system<|message|>" }} ... "<|channel|>final<|message|>"`); got != "harmony" {
		t.Fatalf("Detect: %q", got)
	}
	tm, err := Builtin("harmony", "<|startoftext|>", "<|return|>")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "2+2?"}}
	got, err := tm.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := harmonySystem("medium") + "<|end|>" +
		"<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>" +
		"<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|end|>" +
		"<|start|>user<|message|>2+2?<|end|><|start|>assistant"
	if got != want {
		t.Fatalf("render:\n%q\nwant\n%q", got, want)
	}
	// No system message: no developer turn; a closing assistant turn ends with <|return|>.
	got, err = tm.Render([]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "developer") || !strings.HasSuffix(got, "<|start|>assistant<|channel|>final<|message|>Yo<|return|>") {
		t.Fatalf("render without system: %q", got)
	}
	if _, err := tm.Render([]Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "<|channel|>final<|message|>x"}}, true); err == nil {
		t.Error("channel tags in content accepted")
	}

	for _, c := range []struct{ out, reasoning, content string }{
		{"<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>", "Add them.", "4"},
		{"<|channel|>final<|message|>4", "", "4"},
		{"<|channel|>analysis<|message|>thinking so f", "thinking so f", ""},
		{"plain text", "", "plain text"},
		{"<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>", "x", ""},
	} {
		r, a := SplitHarmony(c.out)
		if r != c.reasoning || a != c.content {
			t.Errorf("SplitHarmony(%q) = %q, %q; want %q, %q", c.out, r, a, c.reasoning, c.content)
		}
	}
}

// TestHarmonyTools: tools become the functions namespace of the developer
// turn (TypeScript-like types as gpt-oss's template writes them), calls
// and results are rendered as messages to and from functions.NAME, the
// reasoning effort goes into the system turn, and the runtime's rewritten
// call blocks parse into tool calls.
func TestHarmonyTools(t *testing.T) {
	tm, err := Builtin("harmony", "<|startoftext|>", "<|return|>")
	if err != nil {
		t.Fatal(err)
	}
	if tm.ToolFormat() != ToolsHarmony || !tm.SupportsTools() {
		t.Fatalf("tool format %q", tm.ToolFormat())
	}
	tools := []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object",` +
			`"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["c","f"],"default":"c"},` +
			`"days":{"type":"array","items":{"type":"integer"}},"opts":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}},"required":["city"]}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"now","description":"Time."}}`),
	}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Weather?"},
		{Role: "assistant", Content: "Need the tool.", ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}},
		{Role: "tool", ToolCallID: "c1", Content: `{"t": 3}`}}
	got, err := tm.RenderOptions(msgs, Options{AddGenerationPrompt: true, Tools: tools, ReasoningEffort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	want := harmonySystem("high") + "\n" +
		"Calls to these tools must go to the commentary channel: 'functions'.<|end|>" +
		"<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n" +
		"// Weather now.\ntype get_weather = (_: {\n// City name\ncity: string,\nunit?: \"c\" | \"f\", // default: c,\ndays?: number[],\n" +
		"opts?: {\nx: \n                boolean},\n}) => any;\n\n// Time.\ntype now = () => any;\n\n} // namespace functions<|end|>" +
		"<|start|>user<|message|>Weather?<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>" +
		"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Oslo\"}<|call|>" +
		"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"{\\\"t\\\": 3}\"<|end|><|start|>assistant"
	if got != want {
		t.Fatalf("render:\n%q\nwant\n%q", got, want)
	}
	// The analysis beside a call is dropped once a later turn answered.
	done := append(msgs, Message{Role: "assistant", Content: "3 degrees."}, Message{Role: "user", Content: "Thanks"})
	got, err = tm.RenderOptions(done, Options{AddGenerationPrompt: true, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "Need the tool.") || !strings.Contains(got, "Reasoning: medium") ||
		!strings.Contains(got, "<|start|>assistant<|channel|>final<|message|>3 degrees.<|end|>") {
		t.Fatalf("answered conversation: %q", got)
	}
	if _, err := tm.RenderOptions([]Message{{Role: "user", Content: "a"}, {Role: "tool", Content: "x"}}, Options{}); err == nil {
		t.Error("tool result without a call accepted")
	}
	if _, err := tm.RenderOptions(msgs[1:2], Options{ReasoningEffort: "extreme"}); err == nil || !strings.Contains(err.Error(), "extreme") {
		t.Errorf("bad effort: %v", err)
	}
	chatml, _ := Builtin("chatml", "", "")
	if _, err := chatml.RenderOptions(msgs[1:2], Options{ReasoningEffort: "low"}); err == nil {
		t.Error("reasoning effort accepted by a format without it")
	}

	content, calls := ParseToolCalls(ToolsHarmony, `<think>x</think><tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>`)
	if content != "<think>x</think>" || len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Arguments) != `{"city":"Oslo"}` {
		t.Errorf("parse: %q %+v", content, calls)
	}

	// A forced call opens the turn as the call; the answer is its arguments.
	got, err = tm.RenderOptions(msgs[1:2], Options{AddGenerationPrompt: true, Tools: tools, ForceCall: "get_weather"})
	if err != nil || !strings.HasSuffix(got, "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") {
		t.Errorf("forced call: %q %v", got, err)
	}
	if _, err := chatml.RenderOptions(msgs[1:2], Options{AddGenerationPrompt: true, ForceCall: "f"}); err == nil {
		t.Error("forced call header accepted by a format without it")
	}
	p := NewForcedArgsParser("get_weather")
	c1, k1 := p.Feed(`{"city": `)
	c2, k2 := p.Feed(`"Oslo"}`)
	c3, k3 := p.Flush()
	if c1+c2+c3 != "" || len(k1)+len(k2) != 0 || len(k3) != 1 || k3[0].Name != "get_weather" || string(k3[0].Arguments) != `{"city":"Oslo"}` {
		t.Errorf("forced arguments: %q %+v", c1+c2+c3, k3)
	}
}

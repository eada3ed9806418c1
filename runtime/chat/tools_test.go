package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

var (
	weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`)
	toolHistory = []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "abcdefghi", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: "tool", Content: "18C", ToolCallID: "abcdefghi", ToolName: "get_weather"}}
)

func loadTemplate(t *testing.T, name string) *Template {
	t.Helper()
	src, err := os.ReadFile("testdata/tools/" + name + ".jinja")
	if err != nil {
		t.Fatal(err)
	}
	tm := mustNew(t, string(src), "<s>", "</s>")
	return tm
}

// The real templates of each family render the tools, an assistant's call
// and the tool's answer as the family writes them.
func TestRenderToolsRealTemplates(t *testing.T) {
	hermesTools := "<tools>\n" + `{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}` + "\n</tools>"
	hermesCall := "<|im_start|>assistant\n<tool_call>\n" + `{"name": "get_weather", "arguments": {"city": "Paris"}}` + "\n</tool_call><|im_end|>"
	hermesAnswer := "<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	for _, c := range []struct {
		file, kind, format string
		want               []string
	}{
		{"Qwen-Qwen2.5-7B-Instruct", "jinja", ToolsHermes, []string{"<|im_start|>system\nBe brief.\n\n# Tools", hermesTools, hermesCall, hermesAnswer}},
		{"Qwen-Qwen3-0.6B", "jinja", ToolsHermes, []string{"<|im_start|>system\nBe brief.\n\n# Tools", hermesTools, hermesCall, hermesAnswer}},
		// gonja cannot run Hermes 3's template: the built-in ChatML writes the same turns
		{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "chatml", ToolsHermes, []string{hermesTools, hermesCall, hermesAnswer}},
		{"meta-llama-Llama-3.1-8B-Instruct", "jinja", ToolsLlama3, []string{"Environment: ipython\n",
			"Given the following functions", "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",",
			"Weather in Paris?<|eot_id|>", "<|start_header_id|>assistant<|end_header_id|>\n\n" + `{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>`,
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"18C\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"}},
		{"meta-llama-Llama-3.2-3B-Instruct", "jinja", ToolsLlama3, []string{"Given the following functions",
			`{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>`, "<|start_header_id|>ipython<|end_header_id|>"}},
		{"mistralai-Mistral-Nemo-Instruct-2407", "jinja", ToolsMistral, []string{
			`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]</s>`,
			`[TOOL_RESULTS]{"content": 18C, "call_id": "abcdefghi"}[/TOOL_RESULTS]`}},
		{"ibm-granite-granite-3.3-2B-Instruct", "jinja", ToolsGranite, []string{
			"<|start_of_role|>available_tools<|end_of_role|>[\n    {\n        \"type\": \"function\",",
			`<|start_of_role|>assistant<|end_of_role|><|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|end_of_text|>`,
			"<|start_of_role|>tool<|end_of_role|>18C<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			tm := loadTemplate(t, c.file)
			if tm.Kind() != c.kind || tm.ToolFormat() != c.format || !tm.SupportsTools() {
				t.Fatalf("kind %q format %q supports %v; want %q %q true", tm.Kind(), tm.ToolFormat(), tm.SupportsTools(), c.kind, c.format)
			}
			got, err := tm.RenderOptions(toolHistory, Options{AddGenerationPrompt: true, Tools: []json.RawMessage{weatherTool}})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			// without tools the template renders no tool instructions
			plain, err := tm.RenderOptions(toolHistory[:2], Options{AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(plain, "get_weather") {
				t.Errorf("tools rendered without tools:\n%s", plain)
			}
		})
	}
}

// The built-in Qwen3 and Llama 3 renderers write tools like the real templates.
func TestBuiltinTools(t *testing.T) {
	o := Options{AddGenerationPrompt: true, Tools: []json.RawMessage{weatherTool}}
	q := loadTemplate(t, "Qwen-Qwen3-0.6B")
	want, err := q.RenderOptions(toolHistory, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Builtin("qwen3", "", "")
	got, err := b.RenderOptions(toolHistory, o)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("builtin qwen3\n got %q\nwant %q", got, want)
	}
	l, _ := Builtin("llama3", "<s>", "")
	got, err = l.RenderOptions(toolHistory, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Given the following functions", "Weather in Paris?<|eot_id|>",
		`{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>`, "<|start_header_id|>ipython<|end_header_id|>\n\n18C<|eot_id|>"} {
		if !strings.Contains(got, w) {
			t.Errorf("builtin llama3: missing %q in\n%s", w, got)
		}
	}
}

func TestToolsRefused(t *testing.T) {
	o := Options{AddGenerationPrompt: true, Tools: []json.RawMessage{weatherTool}}
	none, _ := New("", "", "")
	if none.SupportsTools() {
		t.Error("a model without a template supports tools")
	}
	if _, err := none.RenderOptions(toolHistory[:2], o); err == nil {
		t.Error("tools rendered without a template")
	}
	g, _ := Builtin("gemma", "", "")
	if g.SupportsTools() {
		t.Error("gemma supports tools")
	}
	q := loadTemplate(t, "Qwen-Qwen3-0.6B")
	for _, bad := range []string{`{"type":"function"}`, `{"type":"retrieval","function":{"name":"x"}}`, `[1]`} {
		if _, err := q.RenderOptions(toolHistory[:2], Options{Tools: []json.RawMessage{json.RawMessage(bad)}}); err == nil {
			t.Errorf("tool %s accepted", bad)
		}
	}
	bad := []Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"a":`)}}}}
	if _, err := q.RenderOptions(bad, Options{}); err == nil {
		t.Error("malformed arguments rendered")
	}
}

// tojson keeps the client's key order and writes Python's separators.
func TestToJSONKeyOrder(t *testing.T) {
	tm := mustNew(t, `{# <tool_call> #}{% if tools %}{{ tools[0] | tojson }}|{{ {"b": 1, "a": [1.5, 2.0, "x\n"]} | tojson }}{% endif %}`, "", "")
	got, err := tm.RenderOptions([]Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"z":1,"a":{"y":true,"b":null},"m":2.0,"function":{"name":"f"}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"z": 1, "a": {"y": true, "b": null}, "m": 2.0, "function": {"name": "f"}}|{"b": 1, "a": [1.5, 2.0, "x\n"]}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestStrftime(t *testing.T) {
	tm := mustTime(t)
	if got := strftime(tm, "%B %d, %Y %a %H:%M %% %j"); got != "July 05, 2024 Fri 14:03 % 187" {
		t.Errorf("got %q", got)
	}
}

func mustTime(t *testing.T) time.Time {
	t.Helper()
	return time.Date(2024, 7, 5, 14, 3, 0, 0, time.UTC)
}

type parseCase struct {
	name, format, text, content string
	calls                       []ToolCall // ids not compared unless set
}

var parseCases = []parseCase{
	{"hermes", ToolsHermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
		"Let me check.", []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, {Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
	{"hermes-string-args", ToolsHermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", "",
		[]ToolCall{{Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}},
	{"hermes-plain", ToolsHermes, "No tools needed: a < b and <tool is not a tag.\n", "No tools needed: a < b and <tool is not a tag.\n", nil},
	{"hermes-malformed", ToolsHermes, "x <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call> y", "x <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call> y", nil},
	{"hermes-unclosed", ToolsHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}\n", "", []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"a":[1,2]}`)}}},
	{"hermes-thinking-text-after", ToolsHermes, "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>\n\nDone.", "Done.", []ToolCall{{Name: "f", Arguments: json.RawMessage(`{}`)}}},
	{"llama3", ToolsLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	{"llama3-typed-two", ToolsLlama3, " {\"type\": \"function\", \"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}", "",
		[]ToolCall{{Name: "a", Arguments: json.RawMessage(`{}`)}, {Name: "b", Arguments: json.RawMessage(`{"x":1}`)}}},
	{"llama3-python-tag", ToolsLlama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}", "", []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"q":"x"}`)}}},
	{"llama3-json-not-call", ToolsLlama3, "{\"answer\": 42}", "{\"answer\": 42}", nil},
	{"llama3-text", ToolsLlama3, "Paris is sunny {\"name\": \"f\", \"parameters\": {}}", "Paris is sunny {\"name\": \"f\", \"parameters\": {}}", nil},
	{"mistral", ToolsMistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcDEF123\"}]",
		"", []ToolCall{{ID: "abcDEF123", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	{"mistral-args", ToolsMistral, "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}",
		"Sure.", []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, {Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
	{"mistral-malformed", ToolsMistral, "[TOOL_CALLS][{\"name\": ", "[TOOL_CALLS][{\"name\": ", nil},
	{"granite", ToolsGranite, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "",
		[]ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	{"granite-text", ToolsGranite, "It is 18C in Paris.", "It is 18C in Paris.", nil},
}

func sameCalls(t *testing.T, got, want []ToolCall, format string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d calls %+v, want %d", len(got), got, len(want))
	}
	for i := range got {
		if got[i].Name != want[i].Name || string(got[i].Arguments) != string(want[i].Arguments) {
			t.Errorf("call %d = %s(%s), want %s(%s)", i, got[i].Name, got[i].Arguments, want[i].Name, want[i].Arguments)
		}
		if want[i].ID != "" && got[i].ID != want[i].ID {
			t.Errorf("call %d id %q, want %q", i, got[i].ID, want[i].ID)
		}
		if got[i].ID == "" || (format == ToolsMistral && len(got[i].ID) != 9) {
			t.Errorf("call %d id %q", i, got[i].ID)
		}
	}
}

func TestParseToolCalls(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			content, calls := ParseToolCalls(c.format, c.text)
			if content != c.content {
				t.Errorf("content %q, want %q", content, c.content)
			}
			sameCalls(t, calls, c.calls, c.format)
		})
	}
}

// Fed byte by byte, the parser gives the same content and calls as whole,
// and never gives out a marker's text as content before it is decided.
func TestToolParserStreaming(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			p := NewToolParser(c.format)
			var content strings.Builder
			var calls []ToolCall
			for i := 0; i < len(c.text); i++ {
				s, k := p.Feed(c.text[i : i+1])
				content.WriteString(s)
				calls = append(calls, k...)
				if c.calls != nil && strings.Contains(content.String(), "TOOL_CALLS") {
					t.Fatalf("marker given out as content: %q", content.String())
				}
			}
			s, k := p.Flush()
			content.WriteString(s)
			calls = append(calls, k...)
			if content.String() != c.content {
				t.Errorf("content %q, want %q", content.String(), c.content)
			}
			sameCalls(t, calls, c.calls, c.format)
		})
	}
}

// A hermes call is given out as soon as its closing tag arrives.
func TestToolParserEmitsEarly(t *testing.T) {
	p := NewToolParser(ToolsHermes)
	c, k := p.Feed("Hi <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>")
	if c != "Hi" || len(k) != 1 || k[0].Name != "f" {
		t.Fatalf("content %q calls %+v", c, k)
	}
	if c, k = p.Feed(" more"); c != "more" || len(k) != 0 {
		t.Fatalf("after: %q %+v", c, k)
	}
}

// A template that cannot write tool calls refuses a history holding them.
func TestToolCallsRefusedWithoutSupport(t *testing.T) {
	none, _ := New("", "", "")
	if _, err := none.RenderOptions(toolHistory, Options{}); err == nil || !strings.Contains(err.Error(), "tool calls") {
		t.Errorf("no template: %v", err)
	}
	// tool answers alone are plain turns
	if _, err := none.RenderOptions([]Message{{Role: "user", Content: "x"}, {Role: "tool", Content: "y"}}, Options{}); err != nil {
		t.Error(err)
	}
}

// A forced call's answer is the call object itself, whole or fed piece by
// piece; an answer that is not a call stays content.
func TestForcedToolCall(t *testing.T) {
	doc := `{"name": "get_weather", "arguments": {"city": "Paris"}}`
	content, calls := ParseToolCalls(ToolsForced, doc)
	if content != "" || len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Arguments) != `{"city":"Paris"}` || calls[0].ID == "" {
		t.Fatalf("content %q calls %+v", content, calls)
	}
	p := NewToolParser(ToolsForced)
	var got []ToolCall
	for i := 0; i < len(doc); i++ {
		c, k := p.Feed(doc[i : i+1])
		if c != "" {
			t.Fatalf("content %q before the end", c)
		}
		got = append(got, k...)
	}
	_, k := p.Flush()
	got = append(got, k...)
	if len(got) != 1 || got[0].Name != "get_weather" {
		t.Fatalf("fed byte by byte: %+v", got)
	}
	if content, calls := ParseToolCalls(ToolsForced, `{"name": "get_weath`); len(calls) != 0 || content != `{"name": "get_weath` {
		t.Fatalf("cut answer: content %q calls %+v", content, calls)
	}
}

// pyFloat writes floats as Python's repr (what json.dumps and {{ x }}
// print): positional up to an exponent of 15, scientific beyond, as
// Python 3 prints these values.
func TestPyFloat(t *testing.T) {
	for x, want := range map[float64]string{1234567.5: "1234567.5", 0.1: "0.1", 1e-7: "1e-07", 123456789.123: "123456789.123",
		1e21: "1e+21", 0.00012: "0.00012", 12345678901234567: "1.2345678901234568e+16", 1e16: "1e+16", 123: "123.0",
		-2.5e-5: "-2.5e-05", 9999999999999998: "9999999999999998.0", 0.0001: "0.0001"} {
		if got := pyFloat(x); got != want {
			t.Errorf("pyFloat(%v) = %q, want %q", x, got, want)
		}
	}
}

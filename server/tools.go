package server

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// Tool calls: a request's tools are rendered by the model's template, and
// the answer is read back into content and tool_calls in the format of the
// model's family (chat.ToolFormat). The parser runs after the thinking
// splitter, on the answer's content.

// decodeTools reads a tools field: a list of objects (absent or null: none).
func decodeTools(raw json.RawMessage) ([]json.RawMessage, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, badRequest("tools must be a list of tool objects")
	}
	return tools, nil
}

// answerEvents builds the events of a streamed answer made of parts
// (Anthropic's content blocks, the Responses API's output items).
type answerEvents interface {
	delta(kind, text string) // text for the open part of kind, opening it if need be
	call(c chat.ToolCall)    // a whole tool call, after closing the open part
	close()                  // ends the open part, if any
}

// partStream is what a streamed answer made of parts keeps whatever the
// API: its job, the API's builder around it (ev) with its kinds of part
// for the reasoning and the text, the reasoning splitter and the events of
// the current piece.
type partStream struct {
	j                   *job
	ev                  answerEvents
	thinkKind, textKind string
	sp                  thinkSplitter
	out                 []sseEvent
}

// feed hands ev the next piece of the answer (flush: its end) and returns
// the events it made: the reasoning the splitter takes off (when the job
// thinks) as thinkKind, the text as textKind, then the tool calls the
// job's parser finished; at the end, the open part is closed.
func (p *partStream) feed(t string, flush bool) []sseEvent {
	p.out = nil
	if p.j.thinking {
		var th string
		th, t = p.sp.take(t, flush)
		p.ev.delta(p.thinkKind, th)
	}
	t, calls := p.j.toolFeed(t, flush)
	p.ev.delta(p.textKind, t)
	for _, c := range calls {
		p.ev.call(c)
	}
	if flush {
		p.ev.close()
	}
	return p.out
}

// piece is feed as shapes.piece wants it: no events (while the splitters
// hold text back) are nil.
func (p *partStream) piece(t string) any {
	if ev := p.feed(t, false); len(ev) > 0 {
		return ev
	}
	return nil
}

// toolFeed passes content through j's tool parser (when the request has
// tools), keeping only the first call when parallel calls are off.
func (j *job) toolFeed(text string, flush bool) (string, []chat.ToolCall) {
	if j.toolParser == nil {
		return text, nil
	}
	content, calls := j.toolParser.Feed(text)
	if flush {
		c, k := j.toolParser.Flush()
		content, calls = content+c, append(calls, k...)
	}
	if j.noParallel {
		if j.callsMade > 0 {
			calls = nil
		} else if len(calls) > 1 {
			calls = calls[:1]
		}
	}
	j.callsMade += len(calls)
	return content, calls
}

// ollamaToolCalls is Ollama's message.tool_calls.
func ollamaToolCalls(calls []chat.ToolCall, first int) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": c.ID, "function": map[string]any{"index": first + i, "name": c.Name,
			"arguments": json.RawMessage(c.Arguments)}}
	}
	return out
}

// openaiToolCalls is OpenAI's message.tool_calls (arguments a JSON
// string); streamed deltas carry each call's index.
func openaiToolCalls(calls []chat.ToolCall, first int, stream bool) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		m := map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)}}
		if stream {
			m["index"] = first + i
		}
		out[i] = m
	}
	return out
}

// argumentsObject reads a call's arguments: a JSON object, or a string
// holding one (OpenAI's shape); absent means none.
func argumentsObject(raw json.RawMessage) (json.RawMessage, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return json.RawMessage("{}"), nil
	}
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if strings.TrimSpace(s) == "" {
			return json.RawMessage("{}"), nil
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		return nil, errors.New("must be a JSON object (or a string holding one)")
	}
	return json.RawMessage(s), nil
}

// wireToolCall is a tool call in a request's history, in either API's shape
// (OpenAI's arguments a JSON string, Ollama's an object; Ollama sends no type).
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// historyCalls checks and converts messages[i].tool_calls.
func historyCalls(i int, calls []wireToolCall) ([]chat.ToolCall, error) {
	var out []chat.ToolCall
	for k, c := range calls {
		if c.Type != "" && c.Type != "function" {
			return nil, badRequest("messages[%d].tool_calls[%d].type %s is not supported (only function)", i, k, quoteShort(c.Type))
		}
		if c.Function.Name == "" {
			return nil, badRequest("messages[%d].tool_calls[%d].function.name is required", i, k)
		}
		args, err := argumentsObject(c.Function.Arguments)
		if err != nil {
			return nil, badRequest("messages[%d].tool_calls[%d].function.arguments: %v", i, k, err)
		}
		out = append(out, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
	}
	return out, nil
}

// forcedCall completes a tool_choice that forces a call (j.forceTool): the
// request must have tools and no answer format (formatted, the field
// format names) constraining the answer too; it compiles the call's
// grammar.
func (j *job) forcedCall(tools []json.RawMessage, formatted bool, format string) error {
	if len(tools) == 0 {
		return badRequest("tool_choice: a call is required but the request has no tools")
	}
	if formatted {
		return badRequest("tool_choice: a forced tool call and %s cannot both constrain the answer", format)
	}
	g, err := forcedToolGrammar(tools, *j.forceTool)
	if err != nil {
		return err
	}
	j.forcedGrammar = g
	return nil
}

// forcedToolGrammar compiles the grammar of a forced call: one JSON object
// {"name": N, "arguments": A} where N is the named tool (or any of the
// tools when name is "") and A follows that tool's parameters schema.
func forcedToolGrammar(tools []json.RawMessage, name string) (*grammar.Grammar, error) {
	var alts []json.RawMessage
	for i, raw := range tools {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Function.Name == "" {
			return nil, badRequest("tools[%d]: want {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}", i)
		}
		if name != "" && t.Function.Name != name {
			continue
		}
		params := t.Function.Parameters
		if absent(params) {
			params = json.RawMessage(`{"type":"object"}`)
		}
		nameJSON, _ := json.Marshal(t.Function.Name)
		alts = append(alts, json.RawMessage(`{"type":"object","properties":{"name":{"const":`+string(nameJSON)+
			`},"arguments":`+string(params)+`},"required":["name","arguments"],"additionalProperties":false}`))
	}
	if len(alts) == 0 {
		return nil, badRequest("tool_choice: no tool named %s in tools", quoteShort(name))
	}
	schema, _ := json.Marshal(map[string]any{"anyOf": alts})
	if len(alts) == 1 {
		schema = alts[0]
	}
	return compileToolParams("the tools", schema)
}

// compileToolParams checks and compiles the parameters schema of what
// tool_choice asks for ("the tool" or "the tools").
func compileToolParams(what string, schema json.RawMessage) (*grammar.Grammar, error) {
	if err := checkSchema("tools (the parameters of "+what+" tool_choice asks for)", schema); err != nil {
		return nil, err
	}
	g, err := grammar.CompileSchema(schema)
	if err != nil {
		return nil, badRequest("tool_choice: the tool's parameters: %v", err)
	}
	return g, nil
}

// forcedArgsGrammar compiles the grammar of the arguments of a call of
// the tool name: its parameters schema (any object when it has none).
func forcedArgsGrammar(tools []json.RawMessage, name string) (*grammar.Grammar, error) {
	for _, raw := range tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Function.Name != name {
			continue
		}
		params := t.Function.Parameters
		if absent(params) {
			params = json.RawMessage(`{"type":"object"}`)
		}
		return compileToolParams("the tool", params)
	}
	return nil, badRequest("tool_choice: no tool named %s in tools", quoteShort(name))
}

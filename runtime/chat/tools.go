package chat

// Tool calls. A request's tools (OpenAI's shape: {"type": "function",
// "function": {"name", "description", "parameters"}}) are rendered by the
// model's own template, which gets them as the variable tools, as
// transformers, llama.cpp and Ollama hand them over. Assistant turns that
// called tools carry tool_calls (function.arguments an object) and the
// answers are "tool" messages with tool_call_id and name: the shape Hugging
// Face templates read.
//
// What a model writes when it calls a tool depends on its family; the
// format is recognised from the template's text, as llama.cpp does:
//
//	hermes   <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen 2.5/3, Hermes)
//	llama3   {"name": ..., "parameters": {...}} at the start, or after <|python_tag|> (Llama 3.1-3.3)
//	mistral  [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}] or [TOOL_CALLS]name[ARGS]{...}
//	granite  <|tool_call|>[{"name": ..., "arguments": {...}}] (Granite 3)

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolCall is one call of a tool: Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool-call formats (see ToolFormat).
const (
	ToolsHermes  = "hermes"
	ToolsLlama3  = "llama3"
	ToolsMistral = "mistral"
	ToolsGranite = "granite"
	// ToolsHarmony is gpt-oss's: a message to functions.NAME on the
	// commentary channel, which the runtime's harmony rewriter
	// (runtime/harmony.go) gives out as a hermes-style
	// <tool_call>{"name": ..., "arguments": ...}</tool_call> block.
	ToolsHarmony = "harmony"
	// ToolsGemma4 is Gemma 4's: <|tool_call>call:NAME{key:value,...}<tool_call|>
	// with strings between <|"|> marks, which the runtime's Gemma 4
	// rewriter (runtime/gemma4out.go) gives out as a hermes-style
	// <tool_call>{"name": ..., "arguments": ...}</tool_call> block.
	ToolsGemma4 = "gemma4"
	// ToolsForced is the answer of a request that forces a call (OpenAI
	// tool_choice "required" or a named function): sampling is constrained
	// to one JSON object {"name": ..., "arguments": {...}}, the whole answer.
	ToolsForced = "forced"
)

// ToolFormat names the tool-call format of the template's family ("" when
// the template does not take tools: no template, or one that never
// mentions them).
func (t *Template) ToolFormat() string {
	if t.Default {
		return ""
	}
	has := func(s string) bool { return strings.Contains(t.src, s) }
	if t.src != "" && !has("tools") {
		return ""
	}
	switch {
	case has("<tool_call>"):
		return ToolsHermes
	case has("[TOOL_CALLS]"):
		return ToolsMistral
	case has("<|tool_call|>"):
		return ToolsGranite
	case has("<|start_header_id|>") && (has("<|python_tag|>") || has(`"parameters"`)):
		return ToolsLlama3
	}
	if t.jinja == nil { // a built-in renderer that writes tools itself
		switch t.kind {
		case "chatml", "qwen3":
			return ToolsHermes
		case "llama3":
			return ToolsLlama3
		case "harmony":
			return ToolsHarmony
		case "gemma4":
			return ToolsGemma4
		}
	}
	return ""
}

// SupportsTools reports whether the template renders tools and the model's
// calls can be read back.
func (t *Template) SupportsTools() bool {
	f := t.ToolFormat()
	if f == "" {
		return false
	}
	if t.jinja != nil {
		return true
	}
	return (f == ToolsHermes && (t.kind == "chatml" || t.kind == "qwen3")) || (f == ToolsLlama3 && t.kind == "llama3") || f == ToolsHarmony || f == ToolsGemma4
}

// checkTools validates the tool definitions: JSON objects with a function name.
func checkTools(tools []json.RawMessage) error {
	for i, raw := range tools {
		var tl struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tl); err != nil {
			return fmt.Errorf("tools[%d]: %v", i, err)
		}
		if tl.Type != "" && tl.Type != "function" {
			return fmt.Errorf("tools[%d]: type %q is not supported (only function)", i, tl.Type)
		}
		if tl.Function == nil || tl.Function.Name == "" {
			return fmt.Errorf("tools[%d]: function.name is required", i)
		}
	}
	return nil
}

// jinjaMessage is m as Hugging Face templates read a message. A template
// that never reads tool_calls (Granite 3's) gets an assistant turn's calls
// written into its content in the family's format (callsInContent).
func jinjaMessage(m Message, jv *jsonValues, callsInContent string) (map[string]any, error) {
	out := map[string]any{"role": m.Role, "content": m.Content}
	if len(m.ToolCalls) > 0 && callsInContent != "" {
		text, err := callsText(callsInContent, m.ToolCalls)
		if err != nil {
			return nil, err
		}
		out["content"] = m.Content + text
	} else if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			args := any(map[string]any{})
			if len(c.Arguments) > 0 {
				v, err := jv.decode(c.Arguments)
				if err != nil {
					return nil, fmt.Errorf("tool call %q: arguments: %v", c.Name, err)
				}
				args = v
			}
			fn := jv.ordered(map[string]any{"name": c.Name, "arguments": args}, "name", "arguments")
			if c.ID != "" {
				calls[i] = jv.ordered(map[string]any{"id": c.ID, "type": "function", "function": fn}, "id", "type", "function")
			} else {
				calls[i] = jv.ordered(map[string]any{"type": "function", "function": fn}, "type", "function")
			}
		}
		out["tool_calls"] = calls
	}
	if m.ToolCallID != "" {
		out["tool_call_id"] = m.ToolCallID
	}
	if m.ToolName != "" {
		out["name"] = m.ToolName
	}
	if m.Reasoning != "" {
		out["reasoning_content"] = m.Reasoning
	}
	return out, nil
}

// builtinToolTurns rewrites a conversation with tools for the built-in
// renderers that support them (SupportsTools): the tool definitions and
// calls become text the way the family's template writes them.
func (t *Template) builtinToolTurns(msgs []Message, tools []json.RawMessage) ([]Message, error) {
	if len(tools) == 0 && !hasToolTurns(msgs) {
		return msgs, nil
	}
	jv := &jsonValues{}
	defer jv.forget()
	toolJSON := func(indent int) (string, error) {
		var b strings.Builder
		for i, raw := range tools {
			v, err := jv.decode(raw)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteString("\n")
				if indent >= 0 {
					b.WriteString("\n")
				}
			}
			if err := pyJSON(&b, v, indent, 0); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	}
	callJSON := func(c ToolCall, argKey string) (string, error) {
		var b strings.Builder
		b.WriteString(`{"name": `)
		pyString(&b, c.Name)
		b.WriteString(`, "` + argKey + `": `)
		args, err := jv.callArgs(c)
		if err != nil {
			return "", err
		}
		if err := pyJSON(&b, args, -1, 0); err != nil {
			return "", err
		}
		b.WriteString("}")
		return b.String(), nil
	}
	out := make([]Message, 0, len(msgs)+1)
	switch t.ToolFormat() {
	case ToolsHermes: // Qwen 2.5 / Qwen3's template
		if len(tools) > 0 {
			list, err := toolJSON(-1)
			if err != nil {
				return nil, err
			}
			sys := "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
				list + "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
			if msgs[0].Role == "system" {
				sys = msgs[0].Content + "\n\n" + sys
				msgs = msgs[1:]
			}
			out = append(out, Message{Role: "system", Content: sys})
		}
		for i, m := range msgs {
			switch {
			case m.Role == "assistant" && len(m.ToolCalls) > 0:
				var b strings.Builder
				b.WriteString(m.Content)
				for j, c := range m.ToolCalls {
					if j > 0 || m.Content != "" {
						b.WriteString("\n")
					}
					js, err := callJSON(c, "arguments")
					if err != nil {
						return nil, err
					}
					b.WriteString("<tool_call>\n" + js + "\n</tool_call>")
				}
				out = append(out, Message{Role: "assistant", Content: b.String()})
			case m.Role == "tool" && t.kind == "chatml":
				// consecutive tool answers share one user turn
				c := "<tool_response>\n" + m.Content + "\n</tool_response>"
				if i > 0 && msgs[i-1].Role == "tool" {
					out[len(out)-1].Content += "\n" + c
				} else {
					out = append(out, Message{Role: "user", Content: c})
				}
			default:
				out = append(out, m)
			}
		}
	case ToolsLlama3: // Llama 3.1's template (tools in the first user message)
		first := true
		for _, m := range msgs {
			switch {
			case m.Role == "user" && first && len(tools) > 0:
				first = false
				list, err := toolJSON(4)
				if err != nil {
					return nil, err
				}
				out = append(out, Message{Role: "user", Content: "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
					`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` +
					"Do not use variables.\n\n" + list + "\n\n" + strings.TrimSpace(m.Content)})
			case m.Role == "assistant" && len(m.ToolCalls) > 0:
				if len(m.ToolCalls) != 1 {
					return nil, &templateError{"This model only supports single tool-calls at once!"}
				}
				js, err := callJSON(m.ToolCalls[0], "parameters")
				if err != nil {
					return nil, err
				}
				out = append(out, Message{Role: "assistant", Content: js})
			case m.Role == "tool":
				out = append(out, Message{Role: "ipython", Content: m.Content})
			default:
				out = append(out, m)
			}
		}
	default:
		return nil, errors.New("chat: this template does not support tools")
	}
	return out, nil
}

// callsText writes calls as a model of the format writes them.
func callsText(format string, calls []ToolCall) (string, error) {
	jv := &jsonValues{}
	defer jv.forget()
	var b strings.Builder
	list := make([]any, len(calls))
	for i, c := range calls {
		args, err := jv.callArgs(c)
		if err != nil {
			return "", err
		}
		key := "arguments"
		if format == ToolsLlama3 {
			key = "parameters"
		}
		list[i] = jv.ordered(map[string]any{"name": c.Name, key: args}, "name", key)
	}
	switch format {
	case ToolsHermes:
		for i, c := range list {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<tool_call>\n")
			if err := pyJSON(&b, c, -1, 0); err != nil {
				return "", err
			}
			b.WriteString("\n</tool_call>")
		}
		return b.String(), nil
	case ToolsLlama3:
		for i, c := range list {
			if i > 0 {
				b.WriteString("; ")
			}
			if err := pyJSON(&b, c, -1, 0); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	case ToolsMistral:
		b.WriteString("[TOOL_CALLS]")
	case ToolsGranite:
		b.WriteString("<|tool_call|>")
	}
	err := pyJSON(&b, list, -1, 0)
	return b.String(), err
}

func hasToolTurns(msgs []Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// NewToolCallID makes a call's id: format mistral needs 9 letters and
// digits (its template checks), the others get OpenAI's "call_" style.
func NewToolCallID(format string) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	n, prefix := 24, "call_"
	if format == ToolsMistral {
		n, prefix = 9, ""
	}
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return prefix + string(b)
}

package chat

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Reasoning efforts of gpt-oss's system message (Options.ReasoningEffort).
var harmonyEfforts = []string{"low", "medium", "high"}

// CheckReasoningEffort reports an effort gpt-oss does not know.
func CheckReasoningEffort(e string) error {
	for _, v := range harmonyEfforts {
		if e == v {
			return nil
		}
	}
	return fmt.Errorf("must be low, medium or high, not %q", e)
}

// renderHarmony renders with default options (the builtins_ table entry).
func renderHarmony(msgs []Message, addGen bool, _, _ string) (string, error) {
	return renderHarmonyOptions(msgs, Options{AddGenerationPrompt: addGen})
}

// renderHarmonyOptions follows OpenAI's gpt-oss template (the "harmony"
// format): a system turn (model identity, knowledge cutoff, today's date,
// the reasoning effort, the valid channels), a developer turn with the
// first system or developer message as its instructions and the tools as
// TypeScript-like signatures in the functions namespace, user turns,
// earlier answers on the final channel (their reasoning is not rendered,
// as the template drops it), tool calls as messages to functions.NAME on
// the commentary channel and tool results as messages from functions.NAME.
// The generation prompt opens an assistant turn; the model then writes its
// reasoning on the analysis channel and its answer on the final one, or a
// call (runtime/harmony.go rewrites both for the server).
func renderHarmonyOptions(msgs []Message, o Options) (string, error) {
	effort := o.ReasoningEffort
	if effort == "" {
		effort = "medium"
	}
	if err := CheckReasoningEffort(effort); err != nil {
		return "", fmt.Errorf("chat: reasoning effort %v", err)
	}
	jv := &jsonValues{}
	defer jv.forget()
	var b strings.Builder
	b.WriteString("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n")
	b.WriteString("Knowledge cutoff: 2024-06\n")
	b.WriteString("Current date: " + time.Now().Format("2006-01-02") + "\n\n")
	b.WriteString("Reasoning: " + effort + "\n\n")
	b.WriteString("# Valid channels: analysis, commentary, final. Channel must be included for every message.")
	if len(o.Tools) > 0 {
		b.WriteString("\nCalls to these tools must go to the commentary channel: 'functions'.")
	}
	b.WriteString("<|end|>")
	dev := ""
	if len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer") {
		dev = msgs[0].Content
		msgs = msgs[1:]
	}
	if dev != "" || len(o.Tools) > 0 {
		b.WriteString("<|start|>developer<|message|>")
		if dev != "" {
			b.WriteString("# Instructions\n\n" + dev + "\n\n")
		}
		if len(o.Tools) > 0 {
			b.WriteString("# Tools\n\n")
			if err := harmonyNamespace(&b, jv, o.Tools); err != nil {
				return "", err
			}
		}
		b.WriteString("<|end|>")
	}
	lastCall := ""
	callNames := map[string]string{} // tool_call_id -> name
	for i, m := range msgs {
		switch m.Role {
		case "user":
			b.WriteString("<|start|>user<|message|>" + m.Content + "<|end|>")
		case "assistant":
			if strings.Contains(m.Content, "<|channel|>analysis<|message|>") || strings.Contains(m.Content, "<|channel|>final<|message|>") {
				return "", &templateError{"You have passed a message containing <|channel|> tags in the content field."}
			}
			if len(m.ToolCalls) > 0 {
				// The text beside a call is its analysis, kept unless a later
				// assistant turn answered (then the template drops it).
				answered := false
				for _, f := range msgs[i+1:] {
					if f.Role == "assistant" && len(f.ToolCalls) == 0 {
						answered = true
					}
				}
				if m.Content != "" && !answered {
					b.WriteString("<|start|>assistant<|channel|>analysis<|message|>" + m.Content + "<|end|>")
				}
				for _, c := range m.ToolCalls {
					args, err := jv.callArgs(c)
					if err != nil {
						return "", err
					}
					b.WriteString("<|start|>assistant to=functions." + c.Name + "<|channel|>commentary json<|message|>")
					if err := pyJSON(&b, args, -1, 0); err != nil {
						return "", err
					}
					b.WriteString("<|call|>")
					lastCall = c.Name
					if c.ID != "" {
						callNames[c.ID] = c.Name
					}
				}
				continue
			}
			end := "<|end|>"
			if i == len(msgs)-1 && !o.AddGenerationPrompt {
				end = "<|return|>"
			}
			b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + end)
			lastCall = ""
		case "tool":
			name := m.ToolName
			if name == "" {
				name = callNames[m.ToolCallID]
			}
			if name == "" {
				name = lastCall
			}
			if name == "" {
				return "", &templateError{"Message has tool role, but there was no previous assistant message with a tool call!"}
			}
			b.WriteString("<|start|>functions." + name + " to=assistant<|channel|>commentary<|message|>")
			pyString(&b, m.Content)
			b.WriteString("<|end|>")
		default:
			return "", &templateError{"harmony: role " + m.Role + " is not supported here (user, assistant, tool, and a first system/developer message)"}
		}
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|start|>assistant")
		if o.ForceCall != "" {
			b.WriteString("<|channel|>commentary to=functions." + o.ForceCall + " <|constrain|>json<|message|>")
		}
	}
	return b.String(), nil
}

// harmonyNamespace writes the tools as the template's functions namespace:
// each a comment with its description and a TypeScript type of its
// parameters.
func harmonyNamespace(b *strings.Builder, jv *jsonValues, tools []json.RawMessage) error {
	b.WriteString("## functions\n\nnamespace functions {\n\n")
	for i, raw := range tools {
		v, err := jv.decode(raw)
		if err != nil {
			return fmt.Errorf("chat: tools[%d]: %w", i, err)
		}
		fn, _ := field(v, "function").(map[string]any)
		name, _ := fn["name"].(string)
		if desc, ok := fn["description"].(string); ok {
			b.WriteString("// " + desc + "\n")
		}
		b.WriteString("type " + name + " = ")
		params, _ := fn["parameters"].(map[string]any)
		props, _ := params["properties"].(map[string]any)
		if len(props) == 0 {
			b.WriteString("() => any;\n\n")
			continue
		}
		b.WriteString("(_: {\n")
		req := params["required"]
		for _, pn := range objectKeys(props) {
			spec, _ := props[pn].(map[string]any)
			if d, ok := spec["description"].(string); ok && d != "" {
				b.WriteString("// " + d + "\n")
			}
			b.WriteString(pn)
			if !inList(req, pn) {
				b.WriteString("?")
			}
			b.WriteString(": ")
			if err := tsType(b, spec, 0); err != nil {
				return err
			}
			if def, ok := spec["default"]; ok {
				switch {
				case spec["enum"] != nil:
					b.WriteString(", // default: " + plainText(def))
				case spec["oneOf"] != nil:
					b.WriteString("// default: " + plainText(def))
				default:
					b.WriteString(", // default: ")
					if err := pyJSON(b, def, -1, 0); err != nil {
						return err
					}
				}
			}
			b.WriteString(",\n")
		}
		b.WriteString("}) => any;\n\n")
	}
	b.WriteString("} // namespace functions")
	return nil
}

// tsType writes a JSON Schema as the template's render_typescript_type.
func tsType(b *strings.Builder, spec map[string]any, depth int) error {
	if depth > 32 {
		return fmt.Errorf("chat: tool parameters nest deeper than 32 levels")
	}
	typ := spec["type"]
	nullable := truthy(spec["nullable"])
	switch {
	case typ == "array":
		items, ok := spec["items"].(map[string]any)
		if !ok || len(items) == 0 {
			b.WriteString("any[]")
		} else {
			switch items["type"] {
			case "string":
				b.WriteString("string[]")
			case "number", "integer":
				b.WriteString("number[]")
			case "boolean":
				b.WriteString("boolean[]")
			default:
				var in strings.Builder
				if err := tsType(&in, items, depth+1); err != nil {
					return err
				}
				if s := in.String(); s == "object | object" || len(s) > 50 {
					b.WriteString("any[]")
				} else {
					b.WriteString(s + "[]")
				}
			}
		}
		if nullable {
			b.WriteString(" | null")
		}
	case isList(typ):
		var names []string
		for _, t := range typ.([]any) {
			names = append(names, plainText(t))
		}
		b.WriteString(strings.Join(names, " | "))
	case isList(spec["oneOf"]) && len(spec["oneOf"].([]any)) > 0:
		vs := spec["oneOf"].([]any)
		obj := false
		for _, v := range vs {
			if field(v, "type") == "object" {
				obj = true
			}
		}
		if obj && len(vs) > 1 {
			b.WriteString("any")
			break
		}
		for i, v := range vs {
			vm, _ := v.(map[string]any)
			if err := tsType(b, vm, depth+1); err != nil {
				return err
			}
			if d, ok := vm["description"].(string); ok && d != "" {
				b.WriteString("// " + d)
			}
			if i < len(vs)-1 {
				b.WriteString(" | \n")
			}
		}
	case typ == "string":
		if enum, ok := spec["enum"].([]any); ok && len(enum) > 0 {
			var names []string
			for _, e := range enum {
				names = append(names, plainText(e))
			}
			b.WriteString(`"` + strings.Join(names, `" | "`) + `"`)
		} else {
			b.WriteString("string")
			if nullable {
				b.WriteString(" | null")
			}
		}
	case typ == "number" || typ == "integer":
		b.WriteString("number")
	case typ == "boolean":
		b.WriteString("boolean")
	case typ == "object":
		props, _ := spec["properties"].(map[string]any)
		if len(props) == 0 {
			b.WriteString("object")
			break
		}
		b.WriteString("{\n")
		for i, pn := range objectKeys(props) {
			b.WriteString(pn)
			if !inList(spec["required"], pn) {
				b.WriteString("?")
			}
			// The template's text between ": " and the nested type.
			b.WriteString(": \n                ")
			sub, _ := props[pn].(map[string]any)
			if err := tsType(b, sub, depth+1); err != nil {
				return err
			}
			if i < len(props)-1 {
				b.WriteString(", ")
			}
		}
		b.WriteString("}")
	default:
		b.WriteString("any")
	}
	return nil
}

func field(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func truthy(v any) bool { t, ok := v.(bool); return ok && t }

func inList(list any, s string) bool {
	l, _ := list.([]any)
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// plainText is v as Jinja prints it inside a string concatenation.
func plainText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	if err := pyJSON(&b, v, -1, 0); err != nil {
		return fmt.Sprint(v)
	}
	return b.String()
}

// objectKeys lists m's keys in their JSON order (jsonValues.decode).
func objectKeys(m map[string]any) []string {
	if k, ok := keyOrder.Load(reflect.ValueOf(m).Pointer()); ok {
		return k.([]string)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Harmony markers of the model's output.
const (
	harmonyAnalysis = "<|channel|>analysis<|message|>"
	harmonyFinal    = "<|channel|>final<|message|>"
)

// SplitHarmony separates a gpt-oss reply (the text after the generation
// prompt, special tokens included) into its reasoning (the analysis
// channel) and its answer (the final channel). A reply without channel
// markers is all answer; an analysis without a final channel yet (the
// reply was cut) is all reasoning.
func SplitHarmony(out string) (reasoning, content string) {
	out = strings.TrimPrefix(out, "<|start|>assistant")
	if i := strings.Index(out, harmonyAnalysis); i >= 0 {
		rest := out[i+len(harmonyAnalysis):]
		j := strings.Index(rest, "<|end|>")
		if j < 0 {
			return strings.TrimSpace(trimHarmonyEnd(rest)), ""
		}
		reasoning, out = rest[:j], rest[j+len("<|end|>"):]
	}
	if i := strings.Index(out, harmonyFinal); i >= 0 {
		return reasoning, trimHarmonyEnd(out[i+len(harmonyFinal):])
	}
	if strings.Contains(out, "<|channel|>") { // another channel (commentary): not an answer
		return reasoning, ""
	}
	return reasoning, trimHarmonyEnd(out)
}

// trimHarmonyEnd drops the end-of-message tokens at the end of s.
func trimHarmonyEnd(s string) string {
	for _, t := range []string{"<|return|>", "<|end|>", "<|call|>"} {
		s = strings.TrimSuffix(s, t)
	}
	return s
}

package chat

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// renderGemma4 follows Gemma 4's template (its Jinja text formats tool
// schemas with recursive macros, which the engine does not run): BOS; a
// system turn "<|turn>system\n…<turn|>\n" when the first message is a
// system (or developer) message, tools are given or thinking is on, with
// "<|think|>\n" at its top when it is and each tool's declaration as
// "<|tool>declaration:NAME{…}<tool|>" after the system text; then
// "<|turn>ROLE\n" + content + "<turn|>\n" per message (assistant is
// "model"; a model message right after another one, tool messages
// between them aside, continues its turn without a new header), the
// content trimmed, a model message's thinking channels
// (<|channel>…<channel|>) removed. A model message's tool calls are
// "<|tool_call>call:NAME{ARGS}<tool_call|>" and the tool messages that
// follow it "<|tool_response>response:NAME{value:<|"|>TEXT<|"|>}<tool_response|>",
// written inside that model turn, which stays open when it has no content
// (the model continues it: no generation prompt follows). The generation
// prompt is "<|turn>model\n", followed by an empty thought channel unless
// thinking is on; when the template would open no turn after a closed one
// (a call's results, then content), llama.cpp's "<|turn>model\n" is added.
func renderGemma4(msgs []Message, o Options, bos string) (string, error) {
	thinking := o.EnableThinking != nil && *o.EnableThinking
	jv := &jsonValues{}
	defer jv.forget()
	var b strings.Builder
	b.WriteString(bos)
	sys := msgs[0].Role == "system" || msgs[0].Role == "developer"
	if thinking || len(o.Tools) > 0 || sys {
		b.WriteString("<|turn>system\n")
		if thinking {
			b.WriteString("<|think|>\n")
		}
		if sys {
			b.WriteString(strings.TrimSpace(msgs[0].Content))
			msgs = msgs[1:]
		}
		for i, raw := range o.Tools {
			v, err := jv.decode(raw)
			if err != nil {
				return "", fmt.Errorf("chat: tools[%d]: %w", i, err)
			}
			var d strings.Builder
			if err := g4Declaration(&d, v); err != nil {
				return "", fmt.Errorf("chat: tools[%d]: %w", i, err)
			}
			b.WriteString("<|tool>" + strings.TrimSpace(d.String()) + "<tool|>")
		}
		b.WriteString("<turn|>\n")
	}
	last := "" // what the last message ended with: "", "call" (no results) or "response"
	prevRole := ""
	for i, m := range msgs {
		if m.Role == "tool" {
			continue
		}
		last = ""
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		if !(role == "model" && prevRole == "assistant") {
			b.WriteString("<|turn>" + role + "\n")
		}
		prevRole = m.Role
		for _, c := range m.ToolCalls {
			args, err := jv.callArgs(c)
			if err != nil {
				return "", fmt.Errorf("chat: messages[%d]: %w", i, err)
			}
			b.WriteString("<|tool_call>call:" + c.Name + "{")
			if obj, ok := args.(map[string]any); ok {
				for k, key := range g4SortedKeys(obj) {
					if k > 0 {
						b.WriteString(",")
					}
					b.WriteString(key + ":")
					if err := g4Argument(&b, obj[key], false, 0); err != nil {
						return "", err
					}
				}
			}
			b.WriteString("}<tool_call|>")
			last = "call"
		}
		responded := false
		if len(m.ToolCalls) > 0 {
			for k := i + 1; k < len(msgs) && msgs[k].Role == "tool"; k++ {
				name := g4ResponseName(m.ToolCalls, msgs[k], k-i-1)
				b.WriteString("<|tool_response>response:" + name + "{value:")
				if err := g4Argument(&b, msgs[k].Content, false, 0); err != nil {
					return "", err
				}
				b.WriteString("}<tool_response|>")
				responded, last = true, "response"
			}
		}
		if role == "model" {
			b.WriteString(stripGemma4Thinking(m.Content))
		} else {
			b.WriteString(strings.TrimSpace(m.Content))
		}
		switch {
		case last == "call":
			b.WriteString("<|tool_response>")
		case !(responded && m.Content == ""):
			b.WriteString("<turn|>\n")
		}
	}
	if o.AddGenerationPrompt {
		switch {
		case last == "":
			b.WriteString("<|turn>model\n")
			if !thinking {
				b.WriteString("<|channel>thought\n<channel|>")
			}
		case strings.HasSuffix(b.String(), "<turn|>\n"):
			b.WriteString("<|turn>model\n") // llama.cpp's addition
		}
	}
	return b.String(), nil
}

// g4ResponseName is the tool name of the n-th tool message after a model
// message with calls: the call its tool_call_id names, else the message's
// own name, else the n-th call's, else "unknown". (The template takes the
// id's call, else the name; the last two are Woolly's, for clients that
// send neither.)
func g4ResponseName(calls []ToolCall, m Message, n int) string {
	if m.ToolCallID != "" {
		for _, c := range calls {
			if c.ID == m.ToolCallID {
				return c.Name
			}
		}
	}
	switch {
	case m.ToolName != "":
		return m.ToolName
	case n < len(calls):
		return calls[n].Name
	}
	return "unknown"
}

// stripGemma4Thinking drops every "<|channel>…<channel|>" span of a model
// message (the text of each <channel|>-separated part before its
// <|channel>) and trims the rest.
func stripGemma4Thinking(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "<channel|>") {
		if i := strings.Index(part, "<|channel>"); i >= 0 {
			part = part[:i]
		}
		b.WriteString(part)
	}
	return strings.TrimSpace(b.String())
}

// Gemma 4 writes values in its own notation: strings between <|"|>
// marks, objects {key:value,...} with bare keys sorted (case-insensitively,
// as Jinja's dictsort), lists [a,b], other scalars as Python prints them.

const g4Quote = `<|"|>`

// g4Argument writes v as the template's format_argument macro does
// (escapeKeys: keys between quote marks too).
func g4Argument(b *strings.Builder, v any, escapeKeys bool, depth int) error {
	if depth > 100 {
		return fmt.Errorf("chat: a tool value nested more than 100 deep")
	}
	switch x := v.(type) {
	case string:
		b.WriteString(g4Quote + x + g4Quote)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case map[string]any:
		b.WriteString("{")
		for i, k := range g4SortedKeys(x) {
			if i > 0 {
				b.WriteString(",")
			}
			if escapeKeys {
				b.WriteString(g4Quote + k + g4Quote)
			} else {
				b.WriteString(k)
			}
			b.WriteString(":")
			if err := g4Argument(b, x[k], escapeKeys, depth+1); err != nil {
				return err
			}
		}
		b.WriteString("}")
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",")
			}
			if err := g4Argument(b, e, escapeKeys, depth+1); err != nil {
				return err
			}
		}
		b.WriteString("]")
	default:
		b.WriteString(pyStr(v))
	}
	return nil
}

// g4SortedKeys is m's keys as dictsort orders them: case-insensitively,
// equal ones in the order the JSON text had.
func g4SortedKeys(m map[string]any) []string {
	var keys []string
	if o, ok := keyOrder.Load(reflect.ValueOf(m).Pointer()); ok && len(o.([]string)) == len(m) {
		keys = append(keys, o.([]string)...)
	} else {
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	sort.SliceStable(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	return keys
}

// pyStr is v as Python's str() prints it (what {{ v }} gives in the
// template): None, True/False, numbers as repr, lists and dicts as repr.
func pyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		case math.IsNaN(x):
			return "nan"
		}
		var b strings.Builder
		pyJSON(&b, x, -1, 0)
		return b.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		var parts []string
		o, _ := keyOrder.Load(reflect.ValueOf(x).Pointer())
		keys, _ := o.([]string)
		if len(keys) != len(x) {
			keys = g4SortedKeys(x)
		}
		for _, k := range keys {
			parts = append(parts, pyRepr(k)+": "+pyRepr(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// pyRepr is Python's repr(): strings quoted (single quotes unless the
// text has one and no double quote).
func pyRepr(v any) string {
	s, ok := v.(string)
	if !ok {
		return pyStr(v)
	}
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`, q, `\`+q)
	return q + r.Replace(s) + q
}

// g4Get is m[k] when m is an object (nil otherwise, as Jinja's undefined).
func g4Get(m any, k string) any {
	if o, ok := m.(map[string]any); ok {
		return o[k]
	}
	return nil
}

// g4Truthy is Python's truth value of v (nil for undefined).
func g4Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// g4Upper is v | upper (undefined gives "").
func g4Upper(v any) string {
	if v == nil {
		return ""
	}
	return strings.ToUpper(pyStr(v))
}

// g4Declaration writes a tool as the template's format_function_declaration.
func g4Declaration(b *strings.Builder, tool any) error {
	fn := g4Get(tool, "function")
	b.WriteString("declaration:" + g4Text(g4Get(fn, "name")) + "{description:" + g4Quote + g4Text(g4Get(fn, "description")) + g4Quote)
	if params := g4Get(fn, "parameters"); g4Truthy(params) {
		b.WriteString(",parameters:{")
		if props := g4Get(params, "properties"); g4Truthy(props) {
			b.WriteString("properties:{")
			if err := g4Parameters(b, props, 0); err != nil {
				return err
			}
			b.WriteString("},")
		}
		if req := g4Get(params, "required"); g4Truthy(req) {
			b.WriteString("required:[")
			g4QuotedList(b, req)
			b.WriteString("],")
		}
		if t := g4Get(params, "type"); g4Truthy(t) {
			b.WriteString("type:" + g4Quote + g4Upper(t) + g4Quote + "}")
		}
	}
	if o, ok := fn.(map[string]any); ok {
		if resp, ok := o["response"]; ok {
			b.WriteString(",response:{")
			if d := g4Get(resp, "description"); g4Truthy(d) {
				b.WriteString("description:" + g4Quote + g4Text(d) + g4Quote + ",")
			}
			if g4Upper(g4Get(resp, "type")) == "OBJECT" {
				b.WriteString("type:" + g4Quote + "OBJECT" + g4Quote + "}")
			}
		}
	}
	b.WriteString("}")
	return nil
}

// g4Text is {{ v }}: undefined prints nothing.
func g4Text(v any) string {
	if v == nil {
		return ""
	}
	return pyStr(v)
}

// g4QuotedList writes the items of a list between quote marks, comma-separated.
func g4QuotedList(b *strings.Builder, v any) {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case string: // a string iterates by characters
		for _, r := range x {
			items = append(items, string(r))
		}
	case map[string]any:
		for _, k := range g4SortedKeys(x) {
			items = append(items, k)
		}
	}
	for i, it := range items {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(g4Quote + g4Text(it) + g4Quote)
	}
}

// g4StandardKeys are the schema keys format_parameters does not list as
// properties.
var g4StandardKeys = map[string]bool{"description": true, "type": true, "properties": true, "required": true, "nullable": true}

// g4Parameters writes an object's properties as the template's
// format_parameters macro does.
func g4Parameters(b *strings.Builder, props any, depth int) error {
	if depth > 50 {
		return fmt.Errorf("chat: a tool's parameters are nested more than 50 deep")
	}
	obj, ok := props.(map[string]any)
	if !ok {
		return nil
	}
	first := true
	for _, key := range g4SortedKeys(obj) {
		if g4StandardKeys[key] {
			continue
		}
		value := obj[key]
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(key + ":{")
		comma := false
		sep := func() {
			if comma {
				b.WriteString(",")
			}
			comma = true
		}
		if d := g4Get(value, "description"); g4Truthy(d) {
			b.WriteString("description:" + g4Quote + g4Text(d) + g4Quote)
			comma = true
		}
		typ := g4Upper(g4Get(value, "type"))
		switch typ {
		case "STRING":
			if e := g4Get(value, "enum"); g4Truthy(e) {
				sep()
				b.WriteString("enum:")
				if err := g4Argument(b, e, true, 0); err != nil {
					return err
				}
			}
		case "ARRAY":
			if items, ok := g4Get(value, "items").(map[string]any); ok && len(items) > 0 {
				sep()
				b.WriteString("items:{")
				firstItem := true
				for _, ik := range g4SortedKeys(items) {
					iv := items[ik]
					if iv == nil {
						continue
					}
					if !firstItem {
						b.WriteString(",")
					}
					firstItem = false
					switch ik {
					case "properties":
						b.WriteString("properties:{")
						if _, ok := iv.(map[string]any); ok {
							if err := g4Parameters(b, iv, depth+1); err != nil {
								return err
							}
						}
						b.WriteString("}")
					case "required":
						b.WriteString("required:[")
						g4QuotedList(b, iv)
						b.WriteString("]")
					case "type":
						b.WriteString("type:")
						var t any
						if s, ok := iv.(string); ok {
							t = strings.ToUpper(s)
						} else if l, ok := iv.([]any); ok {
							up := make([]any, len(l))
							for i, e := range l {
								up[i] = g4Upper(e)
							}
							t = up
						} else {
							t = g4Upper(iv)
						}
						if err := g4Argument(b, t, true, 0); err != nil {
							return err
						}
					default:
						b.WriteString(ik + ":")
						if err := g4Argument(b, iv, true, 0); err != nil {
							return err
						}
					}
				}
				b.WriteString("}")
			}
		}
		if g4Truthy(g4Get(value, "nullable")) {
			sep()
			b.WriteString("nullable:true")
		}
		if typ == "OBJECT" {
			sub := value
			if p, ok := g4Get(value, "properties").(map[string]any); ok {
				sub = p
			}
			if _, ok := sub.(map[string]any); ok {
				sep()
				b.WriteString("properties:{")
				if err := g4Parameters(b, sub, depth+1); err != nil {
					return err
				}
				b.WriteString("}")
			}
			if req := g4Get(value, "required"); g4Truthy(req) {
				sep()
				b.WriteString("required:[")
				g4QuotedList(b, req)
				b.WriteString("]")
			}
		}
		sep()
		b.WriteString("type:" + g4Quote + typ + g4Quote + "}")
	}
	return nil
}

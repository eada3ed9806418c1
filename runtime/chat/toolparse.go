package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// ToolParser reads a model's answer, streamed piece by piece, into its
// text content and the tool calls it makes, in one family's format
// (ToolFormat). Text that may be the start of a call marker is held back
// until the next piece decides it; a call is given out once it is
// complete (formats hermes: at its closing tag; llama3, mistral, granite,
// whose calls run to the end of the answer: at Flush).
//
// Whitespace between content and a call is dropped. A call whose JSON does
// not parse is left in the content as the model wrote it (as llama.cpp
// does), so nothing the model wrote is lost.
type ToolParser struct {
	format    string
	state     int    // 0: content, 1: inside a hermes block, 2: calls to the end
	buf       string // text not yet decided
	ws        string // trailing whitespace of the content, held back
	markWS    string // the whitespace held when a marker was seen
	marker    string // the marker that opened the current call text
	atStart   bool   // only whitespace so far (llama3: a leading "{" is a call)
	afterCall bool   // drop whitespace that follows a call
	callName  string // NewForcedArgsParser: the answer is this tool's arguments
}

// NewForcedArgsParser returns the parser of an answer that is only the
// arguments object of a call of the tool name (the harmony format's
// forced call: the prompt already names the recipient).
func NewForcedArgsParser(name string) *ToolParser {
	return &ToolParser{format: ToolsForced, atStart: true, callName: name}
}

// NewToolParser returns a parser for format (see ToolFormat).
func NewToolParser(format string) *ToolParser {
	return &ToolParser{format: format, atStart: true}
}

// ParseToolCalls splits a whole answer.
func ParseToolCalls(format, text string) (content string, calls []ToolCall) {
	p := NewToolParser(format)
	c1, k1 := p.Feed(text)
	c2, k2 := p.Flush()
	return c1 + c2, append(k1, k2...)
}

func (p *ToolParser) markers() []string {
	switch p.format {
	case ToolsHermes, ToolsHarmony, ToolsGemma4:
		return []string{"<tool_call>"}
	case ToolsMistral:
		return []string{"[TOOL_CALLS]"}
	case ToolsGranite:
		return []string{"<|tool_call|>"}
	case ToolsLlama3:
		return []string{"<|python_tag|>"}
	}
	return nil
}

const hermesClose = "</tool_call>"

// content adds text to the content given out, holding back trailing
// whitespace (dropped if a call follows).
func (p *ToolParser) content(out *strings.Builder, text string) {
	if p.afterCall {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			return
		}
		p.afterCall = false
	}
	body := strings.TrimRight(text, " \t\r\n")
	if body == "" {
		p.ws += text
		return
	}
	out.WriteString(p.ws + body)
	p.ws = text[len(body):]
}

// Feed takes the next piece of the answer.
func (p *ToolParser) Feed(s string) (content string, calls []ToolCall) {
	p.buf += s
	var out strings.Builder
	for {
		switch p.state {
		case 0:
			if p.format == ToolsForced { // the whole answer is the call
				p.state = 2
				continue
			}
			if p.format == ToolsLlama3 && p.atStart {
				rest := strings.TrimLeft(p.buf, " \t\r\n")
				if rest == "" {
					return out.String(), calls
				}
				p.atStart = false
				if rest[0] == '{' {
					p.markWS, p.ws = p.ws+p.buf[:len(p.buf)-len(rest)], ""
					p.state, p.marker, p.buf = 2, "", rest
					continue
				}
			}
			at, mk := -1, ""
			for _, m := range p.markers() {
				if i := strings.Index(p.buf, m); i >= 0 && (at < 0 || i < at) {
					at, mk = i, m
				}
			}
			if at >= 0 {
				p.content(&out, p.buf[:at])
				p.markWS, p.ws = p.ws, ""
				p.marker, p.buf = mk, p.buf[at+len(mk):]
				p.state = 2
				if p.format == ToolsHermes || p.format == ToolsHarmony || p.format == ToolsGemma4 {
					p.state = 1
				}
				continue
			}
			keep := 0
			for _, m := range p.markers() {
				keep = max(keep, HeldBack(p.buf, m))
			}
			p.content(&out, p.buf[:len(p.buf)-keep])
			p.buf = p.buf[len(p.buf)-keep:]
			return out.String(), calls
		case 1:
			i := strings.Index(p.buf, hermesClose)
			if i < 0 {
				return out.String(), calls
			}
			body := p.buf[:i]
			p.buf = p.buf[i+len(hermesClose):]
			p.state = 0
			if c, err := p.parseHermes(body); err == nil {
				c.ID = NewToolCallID(p.format)
				calls = append(calls, c)
				p.afterCall = true
			} else {
				p.content(&out, p.markWS+p.marker+body+hermesClose)
			}
		default:
			return out.String(), calls // the calls run to the end: decided at Flush
		}
	}
}

// Flush ends the answer: what was held back is decided.
func (p *ToolParser) Flush() (content string, calls []ToolCall) {
	var out strings.Builder
	rest := p.buf
	p.buf = ""
	switch p.state {
	case 0:
		if p.afterCall {
			rest = strings.TrimLeft(rest, " \t\r\n")
		}
		out.WriteString(p.ws + rest)
	case 1: // an unclosed block (the answer was cut): a call if its JSON is whole
		if c, err := p.parseHermes(rest); err == nil {
			calls = append(calls, c)
		} else {
			out.WriteString(p.ws + p.markWS + p.marker + rest)
		}
	case 2:
		var err error
		var text string
		switch p.format {
		case ToolsMistral:
			calls, text, err = parseMistral(rest)
		case ToolsGranite:
			calls, text, err = parseJSONCalls(rest, "arguments", true)
		case ToolsLlama3:
			calls, text, err = parseJSONCalls(rest, "parameters", false)
		case ToolsForced:
			if p.callName != "" {
				q, _ := json.Marshal(p.callName)
				calls, text, err = parseJSONCalls(`{"name": `+string(q)+`, "arguments": `+rest+`}`, "arguments", false)
				if err == nil && text != "" {
					calls, err = nil, errors.New("text beside the arguments")
				}
				break
			}
			calls, text, err = parseJSONCalls(rest, "arguments", false)
		default:
			err = errors.New("no format")
		}
		if err != nil || len(calls) == 0 {
			calls = nil
			out.WriteString(p.ws + p.markWS + p.marker + rest)
		} else if text != "" {
			out.WriteString(p.ws + text)
		}
	}
	p.ws, p.state = "", 0
	for i := range calls { // only Mistral's models write ids (9 letters and digits)
		if calls[i].ID == "" || p.format != ToolsMistral {
			calls[i].ID = NewToolCallID(p.format)
		}
	}
	return out.String(), calls
}

// callJSON is one call as the models write it.
type callJSON struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
	ID         string          `json:"id"`
}

// toCall checks a decoded call: a name, and arguments that are an object
// (or a string holding one, as some models write).
func (c callJSON) toCall() (ToolCall, error) {
	if c.Name == "" {
		return ToolCall{}, errors.New("tool call without a name")
	}
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(strings.TrimSpace(s))
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return ToolCall{}, errors.New("tool call arguments are not a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return ToolCall{}, err
	}
	return ToolCall{ID: c.ID, Name: c.Name, Arguments: b.Bytes()}, nil
}

func (p *ToolParser) parseHermes(body string) (ToolCall, error) {
	var c callJSON
	d := json.NewDecoder(strings.NewReader(body))
	if err := d.Decode(&c); err != nil {
		return ToolCall{}, err
	}
	if _, err := d.Token(); err != io.EOF {
		return ToolCall{}, errors.New("text after the call's JSON")
	}
	tc, err := c.toCall()
	tc.ID = ""
	return tc, err
}

// parseJSONCalls reads calls written as JSON: a list of call objects when
// list, else one or more call objects separated by whitespace or ";".
// Text after the calls is returned apart.
func parseJSONCalls(s, argKey string, list bool) (calls []ToolCall, rest string, err error) {
	d := json.NewDecoder(strings.NewReader(s))
	if list {
		var cs []callJSON
		if err := d.Decode(&cs); err != nil {
			return nil, "", err
		}
		for _, c := range cs {
			tc, err := c.toCall()
			if err != nil {
				return nil, "", err
			}
			calls = append(calls, tc)
		}
		return calls, strings.TrimSpace(s[d.InputOffset():]), nil
	}
	for {
		var c callJSON
		if err := d.Decode(&c); err != nil {
			return nil, "", err
		}
		if argKey == "parameters" && c.Parameters == nil && c.Arguments == nil {
			return nil, "", errors.New("not a call: no parameters")
		}
		tc, err := c.toCall()
		if err != nil {
			return nil, "", err
		}
		calls = append(calls, tc)
		next := strings.TrimLeft(s[d.InputOffset():], " \t\r\n;")
		if !strings.HasPrefix(next, "{") {
			return calls, strings.TrimSpace(next), nil
		}
		s = next
		d = json.NewDecoder(strings.NewReader(s))
	}
}

// parseMistral reads what follows [TOOL_CALLS]: a JSON list of calls
// (Mistral Nemo, v0.3), or name[ARGS]{...} (later models), calls
// separated by further [TOOL_CALLS] markers.
func parseMistral(s string) (calls []ToolCall, rest string, err error) {
	for _, part := range strings.Split(s, "[TOOL_CALLS]") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part[0] == '[' {
			cs, r, err := parseJSONCalls(part, "arguments", true)
			if err != nil {
				return nil, "", err
			}
			calls, rest = append(calls, cs...), r
			continue
		}
		name, args, ok := strings.Cut(part, "[ARGS]")
		if !ok {
			return nil, "", errors.New("[TOOL_CALLS] without a call")
		}
		d := json.NewDecoder(strings.NewReader(args))
		var a json.RawMessage
		if err := d.Decode(&a); err != nil {
			return nil, "", err
		}
		tc, err := callJSON{Name: strings.TrimSpace(name), Arguments: a}.toCall()
		if err != nil {
			return nil, "", err
		}
		calls = append(calls, tc)
		rest = strings.TrimSpace(args[d.InputOffset():])
	}
	return calls, rest, nil
}

// HeldBack is the length of the longest suffix of s that is a proper prefix
// of tag (it may become the tag with the next piece).
func HeldBack(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

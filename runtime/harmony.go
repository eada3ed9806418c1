package runtime

import (
	"encoding/json"
	"strings"

	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// gpt-oss writes its replies in OpenAI's harmony format: messages framed by
// control tokens, each on a channel, e.g.
//
//	<|channel|>analysis<|message|>REASONING<|end|><|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//	<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//
// Control tokens print nothing, which would leave "analysisREASONING
// assistantfinalANSWER". harmonyOut rewrites the stream the way the
// server's thinking models already look: the analysis channel between
// <think> and </think>, a message to functions.NAME (a tool call; the
// recipient is in the role header or after the channel name) as
// <tool_call>{"name": "NAME", "arguments": ARGS}</tool_call>, which the
// server reads as Qwen3's calls (chat.ToolsHarmony), the other channels'
// messages as they are, the headers (role, channel name) dropped. Text
// before any channel token passes unchanged (a model that does not use the
// format), except a leading recipient (" to=functions.NAME", when the
// prompt ended with <|start|>assistant), held until its channel token.
type harmonyOut struct {
	channel, message, end, start int32
	call                         int32 // <|call|>, -1 when the vocabulary has none
	state                        int   // 0: plain text, 1: header, 2: channel name, 3: message body
	header                       strings.Builder
	pre                          string // leading text that may be a recipient (state 0)
	started                      bool   // plain text was given out
	inAnalysis, inCall           bool
}

// newHarmonyOut returns the rewriter for a vocabulary with harmony's special
// tokens (<|channel|>, <|message|>, <|end|>, <|start|>), else nil. In
// gpt-oss's own vocabulary these are user-defined, not control tokens
// (the tokenizer marks them so, as llama.cpp does, for they print their
// text; <|end|> too, as it does not end generation there): the rewriter
// goes by their ids, so their text never reaches the output.
func newHarmonyOut(tok *tokenizer.Tokenizer) *harmonyOut {
	h := &harmonyOut{call: -1}
	for _, p := range []struct {
		text string
		id   *int32
	}{{"<|channel|>", &h.channel}, {"<|message|>", &h.message}, {"<|end|>", &h.end}, {"<|start|>", &h.start}} {
		id, ok := tok.ID(p.text)
		if !ok {
			return nil
		}
		*p.id = id
	}
	if id, ok := tok.ID("<|call|>"); ok {
		h.call = id
	}
	return h
}

// piece returns the text to emit for generated token id, whose decoded
// text (empty for control tokens) is text. It is also called for the
// token that ends generation (<|call|>, <|return|>), to close a call.
func (h *harmonyOut) piece(id int32, text string) string {
	switch id {
	case h.channel:
		if h.state == 0 {
			h.header.Reset()
			h.header.WriteString(h.pre)
			h.pre = ""
		}
		h.header.WriteString("<|channel|>")
		h.state = 2
		return ""
	case h.message:
		if h.state != 2 {
			return ""
		}
		h.state = 3
		hdr := h.header.String()
		h.header.Reset()
		if name, ok := harmonyRecipient(hdr); ok {
			h.inCall = true
			q, _ := json.Marshal(name)
			return `<tool_call>{"name": ` + string(q) + `, "arguments": `
		}
		ch := hdr[strings.Index(hdr, "<|channel|>")+len("<|channel|>"):]
		if strings.HasPrefix(strings.TrimSpace(ch), "analysis") {
			h.inAnalysis = true
			return "<think>"
		}
		return ""
	case h.end, h.start, h.call:
		out := h.pre
		h.pre = ""
		h.state = 1
		h.header.Reset()
		if h.inAnalysis {
			h.inAnalysis = false
			out += "</think>"
		}
		if h.inCall {
			h.inCall = false
			out += "}</tool_call>"
		}
		return out
	}
	switch h.state {
	case 0:
		if h.started {
			return text
		}
		h.pre += text
		if t := strings.TrimLeft(h.pre, " "); strings.HasPrefix("to=", t) || strings.HasPrefix(t, "to=") {
			return "" // perhaps a recipient: decided at the channel token
		}
		h.started = true
		out := h.pre
		h.pre = ""
		return out
	case 1, 2:
		h.header.WriteString(text)
		return ""
	}
	return text
}

// flush gives out leading text still held when generation ends.
func (h *harmonyOut) flush() string {
	out := h.pre
	h.pre = ""
	return out
}

// harmonyRecipient finds "to=functions.NAME" in a message header.
func harmonyRecipient(hdr string) (string, bool) {
	i := strings.Index(hdr, "to=functions.")
	if i < 0 {
		return "", false
	}
	name := hdr[i+len("to=functions."):]
	if j := strings.IndexAny(name, " <\t\n"); j >= 0 {
		name = name[:j]
	}
	return name, name != ""
}

package runtime

import (
	"strings"

	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// gpt-oss writes its replies in OpenAI's harmony format: messages framed by
// control tokens, each on a channel, e.g.
//
//	<|channel|>analysis<|message|>REASONING<|end|><|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//
// Control tokens print nothing, which would leave "analysisREASONING
// assistantfinalANSWER". harmonyOut rewrites the stream the way the
// server's thinking models already look: the analysis channel between
// <think> and </think>, the other channels' messages as they are, the
// headers (role, channel name) dropped. Text before any channel token
// passes unchanged (a model that does not use the format).
type harmonyOut struct {
	channel, message, end, start int32
	state                        int // 0: plain text, 1: header, 2: channel name, 3: message body
	name                         strings.Builder
	inAnalysis                   bool
}

// newHarmonyOut returns the rewriter for a vocabulary with harmony's control
// tokens (<|channel|>, <|message|>, <|end|>, <|start|>), else nil.
func newHarmonyOut(tok *tokenizer.Tokenizer) *harmonyOut {
	h := &harmonyOut{}
	for _, p := range []struct {
		text string
		id   *int32
	}{{"<|channel|>", &h.channel}, {"<|message|>", &h.message}, {"<|end|>", &h.end}, {"<|start|>", &h.start}} {
		id, ok := tok.ID(p.text)
		if !ok || !tok.IsControl(id) {
			return nil
		}
		*p.id = id
	}
	return h
}

// piece returns the text to emit for generated token id, whose decoded
// text (empty for control tokens) is text.
func (h *harmonyOut) piece(id int32, text string) string {
	switch id {
	case h.channel:
		h.state = 2
		h.name.Reset()
		return ""
	case h.message:
		if h.state != 2 {
			return ""
		}
		h.state = 3
		if strings.HasPrefix(strings.TrimSpace(h.name.String()), "analysis") {
			h.inAnalysis = true
			return "<think>"
		}
		return ""
	case h.end, h.start:
		h.state = 1
		if h.inAnalysis {
			h.inAnalysis = false
			return "</think>"
		}
		return ""
	}
	switch h.state {
	case 1:
		return ""
	case 2:
		h.name.WriteString(text)
		return ""
	}
	return text
}

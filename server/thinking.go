package server

import (
	"encoding/json"
	"strings"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// Thinking models (Qwen3 and others whose template has an enable_thinking
// switch) write their reasoning first, between <think> and </think>. With
// Ollama's "think": true the server returns it apart from the answer, in
// "thinking"; with "think": false the template is rendered with
// enable_thinking false, so the model answers at once.

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// parseThink reads Ollama's "think" field: a boolean, or an effort level
// ("high", "medium", "low"), which means on. Absent or null: nil.
func parseThink(raw json.RawMessage) (*bool, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return &b, nil
	}
	var level string
	if err := json.Unmarshal(raw, &level); err == nil {
		switch level {
		case "high", "medium", "low":
			on := true
			return &on, nil
		}
	}
	return nil, badRequest("think must be true, false, \"high\", \"medium\" or \"low\", not %s", s)
}

// thinkSplitter separates a streamed answer into its reasoning (a leading
// <think>...</think> block) and the rest. Text that may be the start of a
// tag is held back until the next piece decides it.
type thinkSplitter struct {
	state   int    // 0: before any text, 1: inside <think>, 2: the answer
	buf     string // text not yet given out
	trimmed bool   // leading whitespace of the current part dropped
}

// feed takes the next piece and returns what is now known of each part.
func (t *thinkSplitter) feed(s string) (thinking, content string) {
	t.buf += s
	for {
		switch t.state {
		case 0:
			rest := strings.TrimLeft(t.buf, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, thinkOpen):
				t.buf, t.state, t.trimmed = rest[len(thinkOpen):], 1, false
				continue
			case strings.HasPrefix(thinkOpen, rest): // maybe the tag, not complete yet
				return "", ""
			}
			t.state = 2
			continue
		case 1:
			if !t.trimmed {
				t.buf = strings.TrimLeft(t.buf, " \t\r\n")
				if t.buf == "" {
					return "", ""
				}
				t.trimmed = true
			}
			if i := strings.Index(t.buf, thinkClose); i >= 0 {
				thinking = strings.TrimRight(t.buf[:i], " \t\r\n")
				t.buf, t.state, t.trimmed = t.buf[i+len(thinkClose):], 2, false
				_, c := t.feed("")
				return thinking, c
			}
			// Hold back what may start the closing tag, and trailing
			// whitespace (dropped if the tag follows it).
			keep := chat.HeldBack(t.buf, thinkClose)
			n := len(strings.TrimRight(t.buf[:len(t.buf)-keep], " \t\r\n"))
			thinking, t.buf = t.buf[:n], t.buf[n:]
			return thinking, ""
		default:
			if !t.trimmed {
				t.buf = strings.TrimLeft(t.buf, " \t\r\n")
				if t.buf == "" {
					return "", ""
				}
				t.trimmed = true
			}
			content, t.buf = t.buf, ""
			return "", content
		}
	}
}

// flush returns what is held back at the end of the answer: an unfinished
// reasoning block counts as reasoning.
// take feeds s and, at the end of the answer (last), flushes what is held
// back: the reasoning and the answer text this piece gives out.
func (t *thinkSplitter) take(s string, last bool) (thinking, content string) {
	thinking, content = t.feed(s)
	if last {
		th, c := t.flush()
		thinking, content = thinking+th, content+c
	}
	return thinking, content
}

func (t *thinkSplitter) flush() (thinking, content string) {
	rest := t.buf
	t.buf = ""
	if t.state == 1 {
		return strings.TrimSpace(rest), ""
	}
	if t.state == 0 {
		return "", strings.TrimLeft(rest, " \t\r\n")
	}
	return "", rest
}

// split separates a whole answer.
func splitThinking(text string) (thinking, content string) {
	var t thinkSplitter
	th, c := t.feed(text)
	th2, c2 := t.flush()
	return th + th2, c + c2
}

// thinkLevel is the effort level of Ollama's think field ("" for a
// boolean or no field); parseThink has checked it.
func thinkLevel(raw json.RawMessage) string {
	var level string
	if json.Unmarshal(raw, &level) == nil {
		return level
	}
	return ""
}

// openaiEffort reads OpenAI's reasoning effort (field names the request
// field): none turns a template's thinking off, the others on; for
// gpt-oss it is the effort of its system message, minimal read as low and
// xhigh as high.
func openaiEffort(j *job, field, e string) error {
	switch e {
	case "none":
		j.effort = ""
	case "minimal", "low":
		j.effort = "low"
	case "medium":
		j.effort = "medium"
	case "high", "xhigh":
		j.effort = "high"
	default:
		return badRequest("%s must be none, minimal, low, medium, high or xhigh, not %s", field, quoteShort(e))
	}
	on := e != "none"
	j.think, j.effortField = &on, field
	return nil
}

// budgetEffort maps an Anthropic thinking budget to gpt-oss's effort:
// below 4096 tokens low, below 16384 medium, else high.
func budgetEffort(budget int) string {
	switch {
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

package chat

import "strings"

// renderGemma4 follows Gemma 4's template without tools (its Jinja text
// needs recursive macros, which the engine does not run): BOS; a system turn
// "<|turn>system\n…<turn|>\n" when the first message is a system (or
// developer) message or thinking is on, "<|think|>\n" at its top when it is;
// then "<|turn>ROLE\n" + content + "<turn|>\n" per message (assistant is
// "model"; a model message right after another one continues its turn
// without a new header), the content trimmed, a model message's thinking
// channels (<|channel>…<channel|>) removed; the generation prompt is
// "<|turn>model\n", followed by an empty thought channel unless thinking is
// on.
func renderGemma4(msgs []Message, o Options, bos string) (string, error) {
	thinking := o.EnableThinking != nil && *o.EnableThinking
	var b strings.Builder
	b.WriteString(bos)
	if thinking || msgs[0].Role == "system" || msgs[0].Role == "developer" {
		b.WriteString("<|turn>system\n")
		if thinking {
			b.WriteString("<|think|>\n")
		}
		if msgs[0].Role == "system" || msgs[0].Role == "developer" {
			b.WriteString(strings.TrimSpace(msgs[0].Content))
			msgs = msgs[1:]
		}
		b.WriteString("<turn|>\n")
	}
	prev := ""
	for _, m := range msgs {
		if m.Role == "tool" {
			continue
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		if !(role == "model" && prev == "assistant") {
			b.WriteString("<|turn>" + role + "\n")
		}
		if role == "model" {
			b.WriteString(stripGemma4Thinking(m.Content))
		} else {
			b.WriteString(strings.TrimSpace(m.Content))
		}
		b.WriteString("<turn|>\n")
		prev = m.Role
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|turn>model\n")
		if !thinking {
			b.WriteString("<|channel>thought\n<channel|>")
		}
	}
	return b.String(), nil
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

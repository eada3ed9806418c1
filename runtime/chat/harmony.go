package chat

import (
	"strings"
	"time"
)

// renderHarmony follows OpenAI's gpt-oss template (the "harmony" format)
// without tools: a system turn (model identity, knowledge cutoff, today's
// date, reasoning effort medium, the valid channels), the first system or
// developer message as the developer turn's instructions, user turns, and
// earlier assistant answers on the final channel (their reasoning is not
// rendered, as the template drops it). The generation prompt opens an
// assistant turn; the model then writes its reasoning on the analysis
// channel and its answer on the final one (SplitHarmony).
func renderHarmony(msgs []Message, addGen bool, _, _ string) (string, error) {
	var b strings.Builder
	b.WriteString("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n")
	b.WriteString("Knowledge cutoff: 2024-06\n")
	b.WriteString("Current date: " + time.Now().Format("2006-01-02") + "\n\n")
	b.WriteString("Reasoning: medium\n\n")
	b.WriteString("# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>")
	if len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer") {
		if msgs[0].Content != "" {
			b.WriteString("<|start|>developer<|message|># Instructions\n\n" + msgs[0].Content + "\n\n<|end|>")
		}
		msgs = msgs[1:]
	}
	for i, m := range msgs {
		switch m.Role {
		case "user":
			b.WriteString("<|start|>user<|message|>" + m.Content + "<|end|>")
		case "assistant":
			if strings.Contains(m.Content, "<|channel|>analysis<|message|>") || strings.Contains(m.Content, "<|channel|>final<|message|>") {
				return "", &templateError{"You have passed a message containing <|channel|> tags in the content field."}
			}
			end := "<|end|>"
			if i == len(msgs)-1 && !addGen {
				end = "<|return|>"
			}
			b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + end)
		default:
			return "", &templateError{"harmony: role " + m.Role + " is not supported here (user, assistant, and a first system/developer message)"}
		}
	}
	if addGen {
		b.WriteString("<|start|>assistant")
	}
	return b.String(), nil
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

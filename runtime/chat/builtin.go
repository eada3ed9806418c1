package chat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Built-in renderers: Go equivalents of the common templates, used when the
// Jinja engine cannot render a model's template. Each follows the semantics
// of the reference template of its family (the texts are in chat_test.go).

type renderFunc func(msgs []Message, addGen bool, bos, eos string) (string, error)

var builtins_ = map[string]renderFunc{
	"chatml": renderChatML,
	"qwen3":  renderQwen3,
	"gemma3": renderGemma3,
	"gemma4": func(msgs []Message, addGen bool, bos, _ string) (string, error) {
		return renderGemma4(msgs, Options{AddGenerationPrompt: addGen}, bos)
	},
	"llama2":  renderLlama2,
	"llama3":  renderLlama3,
	"mistral": renderMistral,
	"granite": renderGranite,
	"phi3":    renderPhi3,
	"gemma":   renderGemma,
	"zephyr":  renderZephyr,
	"harmony": renderHarmony, // gpt-oss (harmony.go)
}

// BuiltinNames lists the built-in formats (Builtin's kinds), sorted.
func BuiltinNames() []string {
	names := slices.Sorted(maps.Keys(builtins_))
	return names
}

func errAlternate() error {
	return &templateError{"Conversation roles must alternate user/assistant/user/assistant/..."}
}

// alternates checks that msgs go user, assistant, user, ...
func alternates(msgs []Message) error {
	for i, m := range msgs {
		if (m.Role == "user") != (i%2 == 0) {
			return errAlternate()
		}
	}
	return nil
}

func renderChatML(msgs []Message, addGen bool, _, _ string) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	if addGen {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// renderLlama2 follows meta-llama/Llama-2-*-chat: the system message is folded
// into the first user turn inside <<SYS>>; every user turn opens with BOS.
func renderLlama2(msgs []Message, _ bool, bos, eos string) (string, error) {
	system, hasSystem := "", false
	if msgs[0].Role == "system" {
		system, hasSystem, msgs = msgs[0].Content, true, msgs[1:]
	}
	if err := alternates(msgs); err != nil {
		return "", err
	}
	var b strings.Builder
	for i, m := range msgs {
		content := m.Content
		if i == 0 && hasSystem {
			content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content
		}
		switch m.Role {
		case "user":
			b.WriteString(bos + "[INST] " + strings.TrimSpace(content) + " [/INST]")
		case "assistant":
			b.WriteString(" " + strings.TrimSpace(content) + " " + eos)
		}
	}
	return b.String(), nil
}

func renderLlama3(msgs []Message, addGen bool, bos, _ string) (string, error) {
	var b strings.Builder
	b.WriteString(bos)
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if addGen {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

// renderMistral follows Mistral-7B-Instruct v0.1/v0.2: user and assistant
// only, alternating.
func renderMistral(msgs []Message, _ bool, bos, eos string) (string, error) {
	if err := alternates(msgs); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(bos)
	for _, m := range msgs {
		switch m.Role {
		case "user":
			b.WriteString("[INST] " + m.Content + " [/INST]")
		case "assistant":
			b.WriteString(m.Content + eos)
		default:
			return "", &templateError{"Only user and assistant roles are supported!"}
		}
	}
	return b.String(), nil
}

func renderGranite(msgs []Message, addGen bool, _, _ string) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool_response":
			b.WriteString("<|start_of_role|>" + m.Role + "<|end_of_role|>" + m.Content + "<|end_of_text|>\n")
		case "assistant_tool_call":
			b.WriteString("<|start_of_role|>assistant<|end_of_role|><|tool_call|>" + m.Content + "<|end_of_text|>\n")
		}
	}
	if addGen {
		b.WriteString("<|start_of_role|>assistant<|end_of_role|>")
	}
	return b.String(), nil
}

func renderPhi3(msgs []Message, addGen bool, _, eos string) (string, error) {
	s := roleTagTurns(msgs, "<|end|>", addGen)
	if !addGen {
		s += eos
	}
	return s, nil
}

func renderZephyr(msgs []Message, addGen bool, _, eos string) (string, error) {
	return roleTagTurns(msgs, eos, addGen), nil
}

// roleTagTurns writes the turns Phi-3 and Zephyr share: "<|role|>\n", the
// content, end and a newline for each system, user and assistant message
// (others are left out), then the generation prompt with addGen.
func roleTagTurns(msgs []Message, end string, addGen bool) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant":
			b.WriteString("<|" + m.Role + "|>\n" + m.Content + end + "\n")
		}
	}
	if addGen {
		b.WriteString("<|assistant|>\n")
	}
	return b.String()
}

func renderGemma(msgs []Message, addGen bool, bos, _ string) (string, error) {
	if msgs[0].Role == "system" {
		return "", &templateError{"System role not supported"}
	}
	return gemmaTurns(msgs, "", addGen, bos)
}

// gemmaTurns writes Gemma's alternating user/model turns, prefix put at the
// start of the first one.
func gemmaTurns(msgs []Message, prefix string, addGen bool, bos string) (string, error) {
	if err := alternates(msgs); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(bos)
	for i, m := range msgs {
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		if i > 0 {
			prefix = ""
		}
		b.WriteString("<start_of_turn>" + role + "\n" + prefix + strings.TrimSpace(m.Content) + "<end_of_turn>\n")
	}
	if addGen {
		b.WriteString("<start_of_turn>model\n")
	}
	return b.String(), nil
}

// renderQwen3 follows Qwen3's template without tools: ChatML, and an
// assistant turn's reasoning (<think>...</think>) is dropped from every
// assistant message before the last user message; after it, the reasoning is
// kept, re-wrapped as "<think>\nR\n</think>\n\n" (on the final turn, also
// when empty). The enable_thinking switch is applied by RenderOptions.
func renderQwen3(msgs []Message, addGen bool, _, _ string) (string, error) {
	last := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			last = i
			break
		}
	}
	var b strings.Builder
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "system":
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, ""
			if j := strings.LastIndex(content, "</think>"); j >= 0 {
				before := content[:strings.Index(content, "</think>")]
				if k := strings.LastIndex(before, "<think>"); k >= 0 {
					before = before[k+len("<think>"):]
				}
				reasoning = strings.TrimLeft(strings.TrimRight(before, "\n"), "\n")
				content = strings.TrimLeft(content[j+len("</think>"):], "\n")
			}
			if i > last && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + content)
			} else {
				b.WriteString("<|im_start|>assistant\n" + content)
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if addGen {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// renderGemma3 follows Gemma 3's template: like Gemma 2's, but a system
// message is put at the start of the first user turn, followed by a blank line.
func renderGemma3(msgs []Message, addGen bool, bos, _ string) (string, error) {
	prefix := ""
	if msgs[0].Role == "system" {
		prefix, msgs = msgs[0].Content+"\n\n", msgs[1:]
	}
	return gemmaTurns(msgs, prefix, addGen, bos)
}

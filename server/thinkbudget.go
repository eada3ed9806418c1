package server

import (
	"context"
	"strings"
)

// A thinking budget (Anthropic's thinking.budget_tokens) bounds the
// reasoning a thinking model writes before its answer. generate counts the
// tokens of the reasoning block (<think>...</think> at the start of the
// answer); at the budget it ends the generation, closes the block itself
// and continues with a second generation whose prompt is the first's plus
// everything generated and the closing tag, so the model answers. The
// first generation ends by cancellation, which keeps what it evaluated
// cached (its session, the prefix cache), so the second evaluates little
// more than the closing tag. max_tokens bounds both together.

// generate runs req for j on m (see above); without a budget, one Generate.
func generate(ctx context.Context, m Model, j *job, req GenerateRequest, onText func(string) error) (*GenerateResult, error) {
	if j.thinkBudget <= 0 || !j.thinking {
		return m.Generate(ctx, req, onText)
	}
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	var raw strings.Builder
	tokens, hit := 0, false
	state := 0 // 0: not known yet, 1: in the reasoning block, 2: past it (or none)
	res, err := m.Generate(first, req, func(t string) error {
		tokens++ // onText is called once per generated token
		raw.WriteString(t)
		if state < 2 {
			s := strings.TrimLeft(raw.String(), " \t\r\n")
			switch {
			case strings.HasPrefix(s, thinkOpen):
				state = 1
				if strings.Contains(s[len(thinkOpen):], thinkClose) {
					state = 2
				}
			case !strings.HasPrefix(thinkOpen, s): // "" and a partial tag are not known yet
				state = 2
			}
		}
		if err := onText(t); err != nil {
			return err
		}
		if state == 1 && tokens >= j.thinkBudget && !hit {
			hit = true
			cancel()
		}
		return nil
	})
	if err != nil || res == nil || !hit || ctx.Err() != nil {
		return res, err
	}
	closing := "\n" + thinkClose + "\n\n"
	next := req
	next.Prompt = req.Prompt + raw.String() + closing
	reasoning := strings.TrimPrefix(strings.TrimLeft(raw.String(), " \t\r\n"), thinkOpen)
	switch j.kind {
	case "harmony":
		// gpt-oss: the runtime wrote its analysis channel as <think>...;
		// the continuation closes that message in the model's own format
		// and opens the final channel.
		closing = thinkClose
		next.Prompt = req.Prompt + "<|channel|>analysis<|message|>" + reasoning + "<|end|><|start|>assistant<|channel|>final<|message|>"
	case "gemma4":
		// Gemma 4: its thought channel, written as <think>... by the
		// runtime (gemma4out.go), closed in its own tags.
		closing = thinkClose
		next.Prompt = req.Prompt + "<|channel>thought\n" + reasoning + "<channel|>"
	}
	if err := onText(closing); err != nil {
		return res, err
	}
	if req.MaxTokens > 0 {
		next.MaxTokens = req.MaxTokens - res.Tokens
		if next.MaxTokens <= 0 {
			res.StopReason = "length"
			return res, nil
		}
	}
	res2, err := m.Generate(ctx, next, onText)
	if res2 == nil {
		return res, err
	}
	out := *res2
	out.PromptTokens, out.CachedTokens = res.PromptTokens, res.CachedTokens
	out.Tokens += res.Tokens
	out.PromptDuration += res.PromptDuration
	out.GenDuration += res.GenDuration
	return &out, err
}

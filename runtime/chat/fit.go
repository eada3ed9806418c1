package chat

import (
	"context"
	"fmt"
	"strings"
)

// Fit renders msgs like RenderOptions, dropping the oldest turns until the
// prompt's token count (count) is below limit, as Ollama does with a chat
// longer than the context: system messages stay, and so does the last
// message; turns go from the oldest on. Once any is dropped, what is kept
// of the history starts at a user message (or is the last message alone):
// whole exchanges go, so no assistant reply or tool result is left without
// the message it answers, and templates that require user/assistant
// alternation (Mistral's, Llama 2's, Gemma's) still render. It returns the
// prompt and the messages it kept. If even the system messages and the
// last message do not fit, the error says so.
func (t *Template) Fit(msgs []Message, o Options, count func(string) (int, error), limit int) (string, []Message, error) {
	return t.FitContext(context.Background(), msgs, o, count, limit, 0)
}

// FitContext is Fit in time linear in the conversation (up to a logarithmic
// factor), stopping with ctx's error when ctx ends between its steps.
//
// When maxTokenBytes > 0 (no token stands for more input bytes: see
// tokenizer.MaxTokenBytes), the turns that cannot fit by their bytes alone
// are dropped before anything is rendered or tokenized. The remaining
// messages' contents are tokenized once each to estimate how many turns to
// drop; the estimate is then corrected by rendering and counting whole
// prompts, a binary search in the worst case, so the result is the one
// Fit's definition asks for: the fewest oldest turns dropped (as long as
// dropping more never makes a prompt longer).
func (t *Template) FitContext(ctx context.Context, msgs []Message, o Options, count func(string) (int, error), limit, maxTokenBytes int) (string, []Message, error) {
	// drop: the indices of the turns that may go, oldest first.
	var drop []int
	for i := 0; i+1 < len(msgs); i++ {
		if msgs[i].Role != "system" {
			drop = append(drop, i)
		}
	}
	// valid: dropping the k oldest turns keeps a history that starts at a
	// user message (or nothing dropped, or only the last message kept).
	valid := func(k int) bool { return k == 0 || k == len(drop) || msgs[drop[k]].Role == "user" }
	up := func(k int) int { // the fewest valid drops >= k
		for !valid(k) {
			k++
		}
		return k
	}
	kept := func(k int) []Message { // msgs without the k oldest turns
		if k == 0 {
			return msgs
		}
		out := make([]Message, 0, len(msgs)-k)
		j := 0
		for i, m := range msgs {
			if j < k && drop[j] == i {
				j++
				continue
			}
			out = append(out, m)
		}
		return out
	}
	try := func(k int) (string, int, error) {
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		p, err := t.RenderOptions(kept(k), o)
		if err != nil {
			return "", 0, err
		}
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		n, err := count(p)
		return p, n, err
	}

	// Turns that cannot fit by their bytes: the kept messages need at least
	// ceil(bytes / maxTokenBytes) tokens each.
	lo := 0 // fewer than lo dropped cannot fit
	if maxTokenBytes > 0 && len(drop) > 0 {
		atLeast := func(m Message) int { return (MinContentBytes(m) + maxTokenBytes - 1) / maxTokenBytes }
		need := 0
		j := len(drop) - 1
		for i := len(msgs) - 1; i >= 0; i-- {
			if j >= 0 && drop[j] == i {
				j--
				continue
			}
			need += atLeast(msgs[i])
		}
		for j := len(drop) - 1; j >= 0; j-- {
			if need += atLeast(msgs[drop[j]]); need >= limit {
				lo = j + 1
				break
			}
		}
	}
	lo = up(lo)
	p, n, err := try(lo)
	if err != nil {
		return "", nil, err
	}
	if n < limit {
		return p, kept(lo), nil
	}
	tooLong := func(n int) error {
		return fmt.Errorf("the prompt has %d tokens even with only the system messages and the last message; the context holds %d", n, limit)
	}
	if lo == len(drop) {
		return "", nil, tooLong(n)
	}

	// Estimate each turn's tokens: its content's, plus an even share of
	// the template's own tokens in the prompt just counted.
	base, err := count("")
	if err != nil {
		return "", nil, err
	}
	cost := make([]int, len(drop))
	contents := 0
	for k := lo; k < len(drop); k++ {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		c, err := count(msgs[drop[k]].Content)
		if err != nil {
			return "", nil, err
		}
		cost[k] = max(c-base, 0)
		contents += cost[k]
	}
	if keptN := len(msgs) - lo; n > contents {
		share := (n - contents) / keptN
		for k := lo; k < len(drop); k++ {
			cost[k] += share
		}
	}
	for k := lo; k < len(drop); k++ {
		cost[k] = max(cost[k], 1)
	}

	// fail: a count known not to fit; fit: one known to fit (with its prompt).
	fail, fit := lo, -1
	var fitP string
	for fit < 0 {
		// Drop turns until their estimated tokens cover the excess.
		k, excess := fail, n-limit+1
		for k < len(drop) && excess > 0 {
			excess -= cost[k]
			k++
		}
		k = up(max(k, fail+1))
		if p, n, err = try(k); err != nil {
			return "", nil, err
		}
		switch {
		case n < limit:
			fit, fitP = k, p
		case k == len(drop):
			return "", nil, tooLong(n)
		default:
			fail = k
		}
	}
	for { // the fewest turns dropped between the two
		var between []int
		for k := fail + 1; k < fit; k++ {
			if valid(k) {
				between = append(between, k)
			}
		}
		if len(between) == 0 {
			break
		}
		mid := between[len(between)/2]
		p, n, err := try(mid)
		if err != nil {
			return "", nil, err
		}
		if n < limit {
			fit, fitP = mid, p
		} else {
			fail = mid
		}
	}
	return fitP, kept(fit), nil
}

// MinContentBytes is a lower bound of the bytes a message adds to a
// rendered prompt: its content without surrounding whitespace (templates
// may trim it) and without a reasoning part ended by "</think>" (thinking
// models' templates drop the reasoning of earlier turns).
func MinContentBytes(m Message) int {
	c := m.Content
	if i := strings.LastIndex(c, "</think>"); i >= 0 {
		c = c[i+len("</think>"):]
	}
	return len(strings.TrimSpace(c))
}

package chat

import "fmt"

// Fit renders msgs like RenderOptions, dropping the oldest turns until the
// prompt's token count (count) is below limit, as Ollama does with a chat
// longer than the context: system messages stay, and so does the last
// message; turns go from the oldest on. It returns the prompt and the
// messages it kept. If even the system messages and the last message do
// not fit, the error says so.
func (t *Template) Fit(msgs []Message, o Options, count func(string) (int, error), limit int) (string, []Message, error) {
	kept := msgs
	for {
		p, err := t.RenderOptions(kept, o)
		if err != nil {
			return "", nil, err
		}
		n, err := count(p)
		if err != nil {
			return "", nil, err
		}
		if n < limit {
			return p, kept, nil
		}
		drop := -1
		for i, m := range kept[:len(kept)-1] {
			if m.Role != "system" {
				drop = i
				break
			}
		}
		if drop < 0 {
			return "", nil, fmt.Errorf("the prompt has %d tokens even with only the system messages and the last message; the context holds %d", n, limit)
		}
		next := make([]Message, 0, len(kept)-1)
		next = append(next, kept[:drop]...)
		kept = append(next, kept[drop+1:]...)
	}
}

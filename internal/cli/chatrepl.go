package cli

// The chat REPL's loop: internal/repl reads the input and runs the slash
// commands; this file renders the conversation and generates the answers.

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/woolly-llm/woolly/internal/repl"
	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// chatter is one chat: the model, its session and the REPL's state.
type chatter struct {
	m                   *runtime.Model
	sess                *runtime.Session
	tmpl                *chat.Template
	st                  *repl.State
	showPrompt, verbose bool
	ctrlC               *interruptWatcher
	stdout, stderr      io.Writer
	stops               []string // --stop: each turn ends at the first of these
}

// loop reads inputs until /bye or the end of the input.
func (c *chatter) loop(in repl.LineReader) error {
	for {
		line, err := repl.ReadInput(in)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, repl.ErrInterrupt):
			fmt.Fprintln(c.stdout, "(Ctrl-C stops an answer; to leave, type /bye or press Ctrl-D)")
			continue
		case err != nil:
			return err
		}
		text := strings.TrimSpace(line)
		switch {
		case text == "":
			continue
		case repl.IsCommand(text):
			if c.st.Command(text, c.stdout, c.stderr) == repl.Quit {
				return nil
			}
			continue
		}
		if err := c.answer(text); err != nil {
			return err
		}
	}
}

// answer renders the conversation with the user's message and streams the
// model's answer. A conversation longer than the context drops its oldest
// turns (the system message and this message stay), as Ollama does.
func (c *chatter) answer(message string) error {
	tok := c.m.Tokenizer()
	bos := ""
	if id := tok.BOS(); id >= 0 {
		bos = tok.TokenText(id)
	}
	trimBOS := func(p string) string {
		if tok.AddBOS() && bos != "" {
			return strings.TrimPrefix(p, bos)
		}
		return p
	}
	count := func(p string) (int, error) {
		ids, err := tok.Encode(trimBOS(p), tok.AddBOS(), true)
		return len(ids), err
	}
	turn := append(c.st.Messages(), chat.Message{Role: "user", Content: message})
	prompt, kept, err := c.tmpl.Fit(turn, chat.Options{AddGenerationPrompt: true, EnableThinking: c.st.Think}, count, c.sess.NCtx())
	if err != nil {
		fmt.Fprintf(c.stderr, "woolly chat: %v\n", err)
		return nil
	}
	if dropped := len(turn) - len(kept); dropped > 0 {
		fmt.Fprintf(c.stderr, "woolly chat: the conversation is longer than the context (%d); dropped the %d oldest messages\n", c.sess.NCtx(), dropped)
	}
	prompt = trimBOS(prompt)
	if c.showPrompt {
		fmt.Fprintf(c.stderr, "[prompt] %q\n", prompt)
	}
	p := c.st.Params
	opts := runtime.GenerateOptions{MaxTokens: p.NumPredict, PromptOnly: p.NumPredict == 0, Sampler: p.Sampler, Stop: c.stops}
	answer, reason, err := chatTurn(c.sess, opts, prompt, c.ctrlC, c.stdout)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	if c.verbose {
		printCacheStats(c.stderr, c.m)
	}
	switch reason {
	case "cancel":
		fmt.Fprintln(c.stderr, "woolly chat: answer stopped")
	case "length":
		if c.sess.Pos() >= c.sess.NCtx() {
			fmt.Fprintln(c.stderr, "woolly chat: the context is full; the next turn drops the oldest messages")
		}
	}
	c.st.SetMessages(append(kept, chat.Message{Role: "assistant", Content: answer}))
	return nil
}

// chatModelInfo is what /show info prints.
func chatModelInfo(m *runtime.Model, path string) []string {
	inf := m.Info()
	return []string{
		fmt.Sprintf("%-16s %s", "model", path),
		fmt.Sprintf("%-16s %s", "architecture", inf.Architecture),
		fmt.Sprintf("%-16s %s", "parameters", countShort(int64(inf.NParams))),
		fmt.Sprintf("%-16s %s", "quantization", inf.FileType),
		fmt.Sprintf("%-16s %d", "context length", inf.ContextLength),
		fmt.Sprintf("%-16s %d", "context in use", inf.DefaultCtx),
		fmt.Sprintf("%-16s %d", "threads", inf.Threads),
	}
}

// dropsSystem returns a check of whether the template leaves a system
// message out of the prompt (the Phi-3 mini's template renders only user
// and assistant turns): a conversation of that system message and one user
// message is rendered and searched for it. A template that refuses a
// system message drops it too.
func dropsSystem(t *chat.Template) func(string) bool {
	return func(system string) bool {
		p, err := t.Render([]chat.Message{{Role: "system", Content: system}, {Role: "user", Content: "?"}}, true)
		return err != nil || !strings.Contains(p, strings.TrimSpace(system))
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// chatInput is where chat reads the user's lines (tests replace it).
var chatInput io.Reader = os.Stdin

func runChat(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", stderr)
	g, err := addGenerateFlags(fs, "tokens per answer at most (-1: until end of turn or the context is full)")
	if err != nil {
		return err
	}
	system := fs.String("system", "", "system `message`")
	showPrompt := fs.Bool("show-prompt", false, "print each rendered prompt to stderr")
	verbose := fs.Bool("verbose", false, "print timings and cache statistics to stderr after each answer")
	var think triBool
	fs.Var(&think, "think", "thinking models (Qwen3): --think=false answers without reasoning (the template's enable_thinking); default: the template's")
	sampler, err := g.parse(fs, args)
	if err != nil {
		return err
	}
	m, err := g.load(stderr, runtime.AttentionDefault)
	if err != nil {
		return err
	}
	defer m.Close()
	tok := m.Tokenizer()
	bos, eos := "", ""
	if id := tok.BOS(); id >= 0 {
		bos = tok.TokenText(id)
	}
	if id := tok.EOS(); id >= 0 {
		eos = tok.TokenText(id)
	}
	tmpl, err := chat.New(m.Info().ChatTemplate, bos, eos)
	if err != nil {
		return err
	}
	if tmpl.Default {
		fmt.Fprintln(stderr, "woolly chat: the model has no chat template; using ChatML")
	}
	sess, err := m.NewSession(0) // one session: each turn reuses the cache of the conversation so far
	if err != nil {
		return err
	}
	opts := runtime.GenerateOptions{MaxTokens: *g.n, PromptOnly: *g.n == 0, Sampler: sampler, Stop: g.stops}

	// Ctrl-C stops the answer being written, not the program; at the
	// prompt it says how to leave.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	ctrlC := newInterruptWatcher(stdout)
	go ctrlC.watch(interrupts)

	var history []chat.Message
	if *system != "" {
		history = append(history, chat.Message{Role: "system", Content: *system})
	}
	fmt.Fprintln(stderr, "woolly chat: /bye ends the chat; Ctrl-C stops an answer")
	in := bufio.NewScanner(chatInput)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for {
		fmt.Fprint(stdout, ">>> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch {
		case line == "":
			continue
		case line == "/bye":
			return nil
		}
		turn := append(history, chat.Message{Role: "user", Content: line})
		// A conversation longer than the context drops its oldest turns
		// (the system message and this message stay), as Ollama does.
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
		prompt, kept, err := tmpl.Fit(turn, chat.Options{AddGenerationPrompt: true, EnableThinking: think.v}, count, sess.NCtx())
		if err != nil {
			fmt.Fprintf(stderr, "woolly chat: %v\n", err)
			continue
		}
		if dropped := len(turn) - len(kept); dropped > 0 {
			fmt.Fprintf(stderr, "woolly chat: the conversation is longer than the context (%d); dropped the %d oldest messages\n", sess.NCtx(), dropped)
		}
		turn = kept
		prompt = trimBOS(prompt)
		if *showPrompt {
			fmt.Fprintf(stderr, "[prompt] %q\n", prompt)
		}
		answer, reason, err := chatTurn(sess, opts, prompt, ctrlC, stdout)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		if *verbose {
			printCacheStats(stderr, m)
		}
		switch reason {
		case "cancel":
			fmt.Fprintln(stderr, "woolly chat: answer stopped")
		case "length":
			if sess.Pos() >= sess.NCtx() {
				fmt.Fprintln(stderr, "woolly chat: the context is full; the next turn drops the oldest messages")
			}
		}
		history = append(turn, chat.Message{Role: "assistant", Content: answer})
	}
}

// chatTurn generates one answer, streaming it to out; an interrupt cancels it.
func chatTurn(sess *runtime.Session, o runtime.GenerateOptions, prompt string, ctrlC *interruptWatcher, out io.Writer) (string, string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrlC.answering(cancel)
	defer ctrlC.answering(nil)
	o.Prompt = prompt
	res, err := sess.Generate(ctx, o, func(t runtime.Token) error {
		_, err := io.WriteString(out, t.Text)
		return err
	})
	if err != nil {
		return "", "", err
	}
	return res.Text, res.StopReason, nil
}

// interruptWatcher routes Ctrl-C: during an answer it cancels the answer;
// at the prompt it prints how to leave (the program keeps running).
type interruptWatcher struct {
	mu     sync.Mutex
	cancel context.CancelFunc // non-nil while an answer is written
	out    io.Writer
}

func newInterruptWatcher(out io.Writer) *interruptWatcher { return &interruptWatcher{out: out} }

func (w *interruptWatcher) answering(cancel context.CancelFunc) {
	w.mu.Lock()
	w.cancel = cancel
	w.mu.Unlock()
}

func (w *interruptWatcher) watch(interrupts <-chan os.Signal) {
	for range interrupts {
		w.interrupt()
	}
}

func (w *interruptWatcher) interrupt() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
		return
	}
	fmt.Fprint(w.out, "\n(Ctrl-C stops an answer; to leave, type /bye or press Ctrl-D)\n>>> ")
}

// triBool is a boolean flag that can also be unset (v nil).
type triBool struct{ v *bool }

func (b *triBool) String() string {
	if b == nil || b.v == nil {
		return ""
	}
	return strconv.FormatBool(*b.v)
}

func (b *triBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	b.v = &v
	return nil
}

func (b *triBool) IsBoolFlag() bool { return true }

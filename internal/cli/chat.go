package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"

	"github.com/woolly-llm/woolly/internal/repl"
	"github.com/woolly-llm/woolly/runtime"
)

// chatInput is where chat reads the user's lines (tests replace it).
var chatInput io.Reader = os.Stdin

func runChat(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", stderr,
		"usage: woolly chat [flags] MODEL   (or -m MODEL)", "MODEL is a name of the models directory or a GGUF path. In the chat, /? lists the commands.")
	g := addGenerateFlags(fs, "tokens per answer at most (-1: until end of turn or the context is full)")
	system := fs.String("system", "", "system `message`")
	showPrompt := fs.Bool("show-prompt", false, "print each rendered prompt to stderr")
	verbose := fs.Bool("verbose", false, "print timings and cache statistics to stderr after each answer")
	tf := addTemplateFlags(fs)
	var think triBool
	fs.Var(&think, "think", "thinking models (Qwen3): --think=false answers without reasoning (the template's enable_thinking); default: the template's")
	sampler, _, err := g.parseNamed(fs, args, false)
	if err != nil {
		return err
	}
	if *g.model, err = resolveModel(*g.model); err != nil {
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
	tmplSrc, tmpl, err := tf.template(fs, m.Info().ChatTemplate, bos, eos)
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

	// Ctrl-C stops the answer being written, not the program; at the
	// prompt it says how to leave.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	ctrlC := newInterruptWatcher(stdout)
	go ctrlC.watch(interrupts)

	st := &repl.State{Model: *g.model, System: *system, Params: repl.Params{Sampler: sampler, NumPredict: *g.n},
		Think: think.v, Template: tmplSrc, Info: chatModelInfo(m, *g.model), DropsSystem: dropsSystem(tmpl),
		NoThinkSwitch: !tmpl.SupportsThinking()}
	if st.ConversationsDir, err = repl.ConversationsDir(); err != nil {
		return err
	}
	st.WarnSystem(stderr)
	st.WarnThink(stderr)
	fmt.Fprintln(stderr, "woolly chat: /? lists the commands, /bye ends the chat; Ctrl-C stops an answer")
	in, err := repl.NewLineReader(chatInput, stdout, repl.HistoryFile())
	if err != nil {
		return err
	}
	defer in.Close()
	c := &chatter{m: m, sess: sess, tmpl: tmpl, st: st, showPrompt: *showPrompt, verbose: *verbose,
		ctrlC: ctrlC, stdout: stdout, stderr: stderr, stops: g.stops}
	return c.loop(in)
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

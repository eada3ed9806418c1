package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/woolly-llm/woolly/bench"
	"github.com/woolly-llm/woolly/runtime"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", stderr,
		"usage: woolly run [flags] MODEL [PROMPT...]   (or -m MODEL, -p PROMPT, -f FILE)", "MODEL is a name of the models directory or a GGUF path; with no prompt, on a terminal, it is woolly chat.")
	g := addGenerateFlags(fs, "tokens to generate (-1: until end of generation or the context is full; 0: evaluate the prompt only)")
	prompt := fs.String("p", "", "prompt `text`")
	promptFile := fs.String("f", "", "read the prompt from `file`")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("verbose", false, "print model details and cache statistics to stderr")
	profile := fs.Bool("profile", false, "with --verbose: print the time per token by op class to stderr")
	attn := attentionFlag(fs)
	structured := addSchemaFlags(fs)
	promptCache := fs.String("prompt-cache", "", "load the evaluated prompt's state from `file` and reuse its shared prefix; save it there after the prompt")
	promptCacheRO := fs.Bool("prompt-cache-ro", false, "with --prompt-cache: only read the file, never write it")
	sampler, positional, err := g.parseNamed(fs, args, true)
	if err != nil {
		return err
	}
	gram, err := structured.grammar(fs)
	if err != nil {
		return err
	}
	gb, err := structured.gbnf(fs)
	if err != nil {
		return err
	}
	text, err := readPrompt(fs, *prompt, *promptFile)
	if err != nil {
		return err
	}
	if positional != "" {
		if text != "" || flagGiven(fs, "p") {
			return usageError(fs, "the prompt is given twice (after the model and with -p/-f): pass it one way")
		}
		text = positional
	}
	if text == "" {
		if !flagGiven(fs, "p") && *promptFile == "" && stdinIsTerminal() { // `woolly run NAME` as Ollama's: a chat
			return runChat(args, stdout, stderr)
		}
		switch {
		case *promptFile != "":
			return usageError(fs, "-f %s: the file is empty", *promptFile)
		case flagGiven(fs, "p"):
			return usageError(fs, "-p is empty: give the prompt text (or -f FILE)")
		}
		return usageError(fs, "a prompt is required: woolly run MODEL PROMPT, or -p TEXT, or -f FILE")
	}
	if *promptCacheRO && *promptCache == "" {
		return usageError(fs, "--prompt-cache-ro goes with --prompt-cache FILE")
	}
	mode, err := parseAttention(*attn)
	if err != nil {
		return err
	}
	if g.prefix.v == nil { // one generation per process: nothing to reuse unless asked
		g.prefix.v = runtime.Ptr(int64(0))
	}
	if *g.model, err = resolveModel(*g.model); err != nil {
		return err
	}
	t0 := time.Now()
	m, err := g.load(stderr, mode)
	if err != nil {
		return err
	}
	defer m.Close()
	if *verbose {
		inf := m.Info()
		fmt.Fprintf(stderr, "model: %s (%s, %s, %d params, %d layers, vocab %d), context %d, %d threads, loaded in %v\n",
			inf.Name, inf.Architecture, inf.FileType, inf.NParams, inf.NLayer, inf.NVocab, inf.DefaultCtx, inf.Threads,
			time.Since(t0).Round(time.Millisecond))
	}
	if *profile {
		if !*verbose {
			return errors.New("--profile goes with --verbose (it prints to stderr with the other details)")
		}
		m.SetProfiling(true)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := runtime.GenerateOptions{
		Prompt:     text,
		MaxTokens:  *g.n,
		PromptOnly: *g.n == 0,
		Stop:       g.stops,
		Sampler:    sampler,
		Grammar:    gram,
		GBNF:       gb,
	}
	var onTok func(runtime.Token) error
	if !*asJSON {
		onTok = func(t runtime.Token) error {
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
	}
	var res *runtime.GenerateResult
	if *promptCache != "" {
		res, err = generateWithPromptCache(ctx, m, opts, onTok, *promptCache, *promptCacheRO)
	} else {
		res, err = m.Generate(ctx, opts, onTok)
	}
	if err != nil {
		return err
	}
	if *verbose {
		defer printCacheStats(stderr, m)
	}
	if *profile {
		bench.WriteProfile(stderr, "run (prompt and generation)", m.Profile())
	}
	pps := perSecond(len(res.PromptTokens)-res.CachedTokens, res.PromptDuration)
	gps := perSecond(len(res.Tokens), res.GenDuration)
	if *asJSON {
		ids := res.Tokens
		if ids == nil {
			ids = []int32{}
		}
		out := struct {
			PromptTokens []int32 `json:"prompt_tokens"` // the prompt's ids (docs/commands.md)
			PromptCount  int     `json:"prompt_count"`
			CachedTokens int     `json:"cached_tokens"` // prompt tokens reused (--prompt-cache), not evaluated
			Tokens       []int32 `json:"tokens"`
			Text         string  `json:"text"`
			StopReason   string  `json:"stop_reason"`
			Timings      struct {
				PromptPerSecond float64 `json:"prompt_per_second"`
				GenPerSecond    float64 `json:"gen_per_second"`
			} `json:"timings"`
		}{PromptTokens: res.PromptTokens, PromptCount: len(res.PromptTokens), CachedTokens: res.CachedTokens, Tokens: ids, Text: res.Text, StopReason: res.StopReason}
		out.Timings.PromptPerSecond, out.Timings.GenPerSecond = pps, gps
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return errInterrupted
		}
		return nil
	}
	if res.CachedTokens > 0 {
		fmt.Fprintf(stderr, "\nprompt cache: %d of the prompt's %d tokens reused, %d evaluated", res.CachedTokens, len(res.PromptTokens), len(res.PromptTokens)-res.CachedTokens)
	}
	fmt.Fprintf(stderr, "\nprompt: %d tokens in %v (%.2f tokens/s); generated: %d tokens in %v (%.2f tokens/s); stop: %s\n",
		len(res.PromptTokens), res.PromptDuration.Round(time.Microsecond), pps,
		len(res.Tokens), res.GenDuration.Round(time.Microsecond), gps, res.StopReason)
	if ctx.Err() != nil {
		return errInterrupted // Ctrl-C: exit 130, as llama-cli
	}
	return nil
}

func perSecond(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// loadForEval loads a model for logits and perplexity: --threads and
// --attention as given, the other options at their defaults.
func loadForEval(path string, threads int, attention string) (*runtime.Model, error) {
	mode, err := parseAttention(attention)
	if err != nil {
		return nil, err
	}
	return runtime.Load(path, runtime.LoadOptions{Threads: threads, Attention: mode})
}

// attentionFlag registers --attention (parsed by parseAttention).
func attentionFlag(fs *flag.FlagSet) *string {
	return fs.String("attention", "default", "attention numerics: default, or exact (the same: llama.cpp's bits)")
}

// parseAttention maps --attention to a runtime.AttentionMode.
func parseAttention(s string) (runtime.AttentionMode, error) {
	switch s {
	case "default", "":
		return runtime.AttentionDefault, nil
	case "exact":
		return runtime.AttentionExact, nil
	}
	return 0, fmt.Errorf("--attention %q: want default or exact", s)
}

// generateWithPromptCache is run's generation with --prompt-cache FILE:
// the session starts from FILE when it exists (Generate keeps the prefix
// it shares with the prompt and evaluates the rest) and, unless readOnly,
// FILE is replaced by the state after the prompt.
func generateWithPromptCache(ctx context.Context, m *runtime.Model, opts runtime.GenerateOptions,
	onTok func(runtime.Token) error, file string, readOnly bool) (*runtime.GenerateResult, error) {
	sess, err := m.NewSession(opts.NCtx)
	if err != nil {
		return nil, err
	}
	if err := sess.PromptCacheSupported(); err != nil {
		return nil, fmt.Errorf("--prompt-cache: %w", err)
	}
	f, err := os.Open(file)
	switch {
	case errors.Is(err, os.ErrNotExist): // the first run makes it
	case err != nil:
		return nil, fmt.Errorf("--prompt-cache: %w", err)
	default:
		fi, err := f.Stat()
		if err == nil {
			err = sess.ReadPromptCache(f, fi.Size())
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--prompt-cache %s: %w", file, err)
		}
	}
	res, err := sess.Generate(ctx, opts, onTok)
	if err != nil || readOnly || res.StopReason == "cancel" {
		return res, err
	}
	// Write a new file and rename it over the old one: an interrupted
	// write never leaves a half file under the name.
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("--prompt-cache: %w", err)
	}
	werr := sess.WritePromptCache(tmp, len(res.PromptTokens))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("--prompt-cache %s: %w", file, werr)
	}
	return res, nil
}

package cli

// Flags shared by the subcommands: parsing with one-line errors, llama.cpp's
// spellings, and the sampling and generation flags run and chat both take.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/woolly-llm/woolly/runtime"
)

// parseFlags parses args into fs. -h prints the usage and returns
// flag.ErrHelp; any other problem (an unknown flag, a bad value) is one line
// naming it and pointing at -h, and returns errUsage (exit code 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // flag would print the error and the whole usage
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	}
	fmt.Fprintf(out, "%s: %v (see '%s -h')\n", fs.Name(), err, fs.Name())
	return errUsage
}

// usageError is a bad flag value found after parsing (a range, a
// combination): one line, exit code 2, like parseFlags' errors.
// parseModelFlags parses args for a command that needs -m MODEL and takes
// no positional arguments: a missing -m or an extra argument is a usage
// error naming it.
func parseModelFlags(fs *flag.FlagSet, args []string, model *string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *model == "" {
		return usageError(fs, "-m MODEL is required")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments %q", fs.Args())
	}
	return nil
}

func usageError(fs *flag.FlagSet, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(fs.Output(), "%s: %s (see '%s -h')\n", fs.Name(), msg, fs.Name())
	return fmt.Errorf("%s: %w", msg, errUsage) // printed already: main only sets the exit code
}

// llamaAliases registers llama.cpp's spellings of the flags fs already has
// (--model for -m, --n-predict for -n, -s for --seed, ...): the same value
// under a second name, so users' llama-cli habits work. --temp, --top-k,
// --top-p, --min-p, --seed and --repeat-penalty are spelled as llama.cpp
// spells them already (Go's flag package takes -x and --x alike).
func llamaAliases(fs *flag.FlagSet) {
	for alias, name := range map[string]string{
		"model": "m", "prompt": "p", "file": "f", "n-predict": "n", "threads": "t", "ctx-size": "c", "s": "seed",
	} {
		if f := fs.Lookup(name); f != nil && fs.Lookup(alias) == nil {
			fs.Var(f.Value, alias, "same as -"+name)
		}
	}
}

// samplerFlags are the sampling flags of run and chat (one set, one
// validation: runtime.SamplerOptions.Validate).
type samplerFlags struct {
	temp, topP, minP, rep, freq, pres *float64
	topK, repN                        *int
	seed                              *int64
	more                              *moreSamplerFlags
}

func addSamplerFlags(fs *flag.FlagSet) *samplerFlags {
	def := runtime.DefaultSamplerOptions()
	return &samplerFlags{
		temp: fs.Float64("temp", shortF64(def.Temperature), "temperature (0: greedy)"),
		topK: fs.Int("top-k", def.TopK, "top-k sampling (0: off)"),
		topP: fs.Float64("top-p", shortF64(def.TopP), "top-p sampling, in [0, 1] (1: off)"),
		minP: fs.Float64("min-p", shortF64(def.MinP), "min-p sampling, in [0, 1] (0: off)"),
		rep:  fs.Float64("repeat-penalty", shortF64(def.RepeatPenalty), "repetition penalty (1: off)"),
		repN: fs.Int("repeat-last-n", def.RepeatLastN, "tokens the penalties look back on (-1: all)"),
		freq: fs.Float64("frequency-penalty", 0, "frequency penalty, in [-2, 2] (0: off)"),
		pres: fs.Float64("presence-penalty", 0, "presence penalty, in [-2, 2] (0: off)"),
		seed: fs.Int64("seed", def.Seed, "random seed (-1: random)"),
		more: addMoreSamplerFlags(fs),
	}
}

// samplerFlagNames maps runtime's setting names to the flags that set them.
var samplerFlagNames = map[string]string{
	"temperature": "--temp", "top_p": "--top-p", "min_p": "--min-p", "top_k": "--top-k",
	"repeat_penalty": "--repeat-penalty", "frequency_penalty": "--frequency-penalty",
	"presence_penalty": "--presence-penalty", "repeat_last_n": "--repeat-last-n",
}

// options returns the validated sampler settings; a value out of range is a
// usage error naming the flag.
func (s *samplerFlags) options(fs *flag.FlagSet) (runtime.SamplerOptions, error) {
	o := runtime.SamplerOptions{
		Temperature: float32(*s.temp), TopK: *s.topK, TopP: float32(*s.topP), MinP: float32(*s.minP),
		RepeatPenalty: float32(*s.rep), RepeatLastN: *s.repN, FrequencyPenalty: float32(*s.freq),
		PresencePenalty: float32(*s.pres), Seed: *s.seed,
	}
	s.more.apply(&o)
	if err := o.Validate(); err != nil {
		var re *runtime.SamplerRangeError
		if errors.As(err, &re) {
			name := samplerFlagNames[re.Field]
			if name == "" {
				name = moreSamplerFlagNames[re.Field]
			}
			return o, usageError(fs, "%s %g is out of range: must be %s", name, re.Value, re.Want)
		}
		return o, usageError(fs, "%v", err)
	}
	return o, nil
}

// generateFlags are the flags run and chat both take: the model, -n, the
// sampler, threads, context length and the two caches.
type generateFlags struct {
	model         *string
	n             *int
	sampler       *samplerFlags
	threads, nctx *int
	prefix        *optional[int64]
	kvTypes       *kvTypeFlags
	stops         stringList
}

// load loads the model the flags name with their threads, context length,
// prefix cache and attention mode, and warns on stderr
// when -c is beyond the model's training context.
func (g *generateFlags) load(stderr io.Writer, mode runtime.AttentionMode) (*runtime.Model, error) {
	lo := runtime.LoadOptions{Threads: *g.threads, ContextLength: *g.nctx, Attention: mode, PrefixCache: g.prefix.v,
		CacheTypeK: *g.kvTypes.k, CacheTypeV: *g.kvTypes.v}
	m, err := runtime.Load(*g.model, lo)
	if err != nil {
		return nil, err
	}
	warnContext(stderr, m, *g.nctx)
	return m, nil
}

// addGenerateFlags registers run's and chat's shared flags; nUsage is -n's
// help, which says what a token budget means for the command.
func addGenerateFlags(fs *flag.FlagSet, nUsage string) *generateFlags {
	g := &generateFlags{
		model:   modelFlag(fs),
		n:       fs.Int("n", -1, nUsage),
		sampler: addSamplerFlags(fs),
		threads: threadsFlag(fs),
		nctx:    ctxFlag(fs),
		kvTypes: addKVTypeFlags(fs),
	}
	removedFlag(fs, "dequant-cache", "")
	fs.Var(&g.stops, "stop", "stop `string` (repeatable)")
	// With no environment variable to read, prefixFlag cannot fail.
	g.prefix, _ = prefixFlag(fs, "")
	return g
}

// checkOutputDir reports a missing output directory by name before any
// work (the writer's own error would name its hidden temporary file).
func checkOutputDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// checkThreads validates -t: 0 (the physical cores) up to the machine's
// logical cores (more threads than cores only slow a model down).
func checkThreads(fs *flag.FlagSet, n int) error {
	if cores := goruntime.NumCPU(); n < 0 || n > cores {
		return usageError(fs, "-t %d: want 0 (the physical cores) to %d (this machine's logical cores)", n, cores)
	}
	return nil
}

// checkPredict validates -n: -1 (until the end), 0 (nothing) or a count.
func checkPredict(fs *flag.FlagSet, n int) error {
	if n < -1 {
		return usageError(fs, "-n %d: want -1 (until end of generation), 0 (nothing) or a token count", n)
	}
	return nil
}

// readPrompt resolves -p and -f (one of them, not both).
func readPrompt(fs *flag.FlagSet, prompt, file string) (string, error) {
	if flagGiven(fs, "p") && file != "" {
		return "", usageError(fs, "-p and -f both given: pass the prompt one way")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return prompt, nil
}

// flagGiven reports whether flag name was set on the command line (an empty
// value counts).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// warnContext prints a warning when -c asks for more positions than the
// model was trained on (as llama.cpp does); the context is still used.
func warnContext(w io.Writer, m *runtime.Model, nctx int) {
	if train := m.Info().ContextLength; nctx > 0 && train > 0 && nctx > train {
		fmt.Fprintf(w, "warning: -c %d is more than the model's training context (%d); quality may drop past %d tokens\n", nctx, train, train)
	}
}

// optional is a flag that stays unset (nil) unless given on the command
// line or in its environment variable, so the library's default applies
// and is written in one place (runtime.DefaultPrefixCache,
// server.DefaultMaxQueue, server.DefaultKeepAlive); a given 0 is a value.
type optional[T any] struct {
	v     *T
	parse func(string) (T, error)
}

func (o *optional[T]) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optional[T]) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	o.v = &v
	return nil
}

// addOptional registers an optional flag, first set from env when that
// variable is non-empty (a bad value there is an error naming it).
func addOptional[T any](fs *flag.FlagSet, name, env, usage string, parse func(string) (T, error)) (*optional[T], error) {
	o := &optional[T]{parse: parse}
	if env != "" {
		if s := os.Getenv(env); s != "" {
			if err := o.Set(s); err != nil {
				return nil, fmt.Errorf("%s=%q: %v", env, s, err)
			}
		}
	}
	fs.Var(o, name, usage)
	return o, nil
}

// modelFlag is -m as the model commands spell it.
func modelFlag(fs *flag.FlagSet) *string { return fs.String("m", "", "model `path` (GGUF)") }

// threadsFlag is -t as the model commands spell it.
func threadsFlag(fs *flag.FlagSet) *int { return fs.Int("t", 0, "threads (0: physical cores)") }

// ctxFlag is -c as run and chat spell it.
func ctxFlag(fs *flag.FlagSet) *int {
	return fs.Int("c", 0, "context length (0: the model's, at most 4096)")
}

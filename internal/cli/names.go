package cli

// Model names on the command line: `woolly run NAME [PROMPT]` and `woolly
// chat NAME` beside -m PATH. The names live in internal/models.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/runtime"
	"golang.org/x/term"
)

// parseNamed parses run's and chat's arguments: the flags (anywhere), then
// the model as -m PATH|NAME or the first positional argument, then, when
// takesPrompt, the prompt: the remaining positional arguments joined by
// spaces. Like parse, -n, -t, -c and the sampler options are checked. The model is resolved to its file
// (resolveModel) after the other usage checks, just before loading.
func (g *generateFlags) parseNamed(fs *flag.FlagSet, args []string, takesPrompt bool) (runtime.SamplerOptions, string, error) {
	if f := fs.Lookup("m"); f != nil {
		f.Usage = "the model: a `NAME` of the models directory (woolly list) or a GGUF file's path"
	}
	llamaAliases(fs)
	args = stripIgnored(fs.Output(), fs.Name(), args)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return runtime.SamplerOptions{}, "", err
	}
	if *g.model == "" {
		if len(pos) == 0 {
			return runtime.SamplerOptions{}, "", usageError(fs, "a model is required: a NAME of the models directory or -m PATH")
		}
		*g.model, pos = pos[0], pos[1:]
	}
	if len(pos) > 0 && !takesPrompt {
		return runtime.SamplerOptions{}, "", usageError(fs, "unexpected arguments %q", pos)
	}
	if err := checkPredict(fs, *g.n); err != nil {
		return runtime.SamplerOptions{}, "", err
	}
	if err := checkThreads(fs, *g.threads); err != nil {
		return runtime.SamplerOptions{}, "", err
	}
	if *g.nctx < 0 {
		return runtime.SamplerOptions{}, "", usageError(fs, "-c %d: want 0 (the model's context) or a context length", *g.nctx)
	}
	if err := g.kvTypes.check(fs); err != nil {
		return runtime.SamplerOptions{}, "", err
	}
	o, err := g.sampler.options(fs)
	return o, strings.Join(pos, " "), err
}

// resolveModel maps a model argument to its file: a path (a separator, or
// an existing *.gguf, or any existing file) is taken as it is; anything
// else is a name in the models directory.
func resolveModel(arg string) (string, error) {
	if models.LooksLikePath(arg) {
		return arg, nil
	}
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		return arg, nil
	}
	dir, err := models.DirPath()
	if err != nil {
		return "", err
	}
	_, p, err := models.Resolve(dir, arg)
	var nf *models.NotFoundError
	if errors.As(err, &nf) && strings.HasSuffix(arg, models.Ext) {
		return "", fmt.Errorf("%s: no such file (nor a model of that name in %s)", arg, dir)
	}
	return p, err
}

// stdinIsTerminal reports whether the standard input is a terminal (a
// person typing, not a pipe or file).
func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

// defaultModelsDir is serve's models directory when --models and
// WOOLLY_MODELS are absent: the one run and list use (created).
func defaultModelsDir() (string, error) { return models.Dir() }

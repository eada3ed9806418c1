// Package cli is the woolly command (cmd/woolly is its entry point): each
// subcommand lives in its own file (run.go, serve.go, ...), the commands
// table in main.go lists them, and Main dispatches. Subcommands return
// errors; Main turns them into an exit code, and only cmd/woolly exits.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	goruntime "runtime"
	"slices"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/server"
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is every subcommand: name, one-line summary, and its entry point.
var commands = map[string]command{}

func init() {
	for _, c := range []command{
		{"bench", "measure prompt processing and generation speed (like llama-bench)", runBench},
		{"chat", "chat with a model in the terminal", runChat},
		{"info", "describe a GGUF file: metadata, hyperparameters, tensors", runInfo},
		{"logits", "print the top logits at every position", runLogits},
		{"perplexity", "perplexity of a text file (llama-perplexity's method)", runPerplexity},
		{"quantize", "quantize a GGUF model (q4_k_m, q5_k_m, q6_k, q8_0, q3_k_m, iq4_xs, ...) like llama-quantize", runQuantize},
		{"run", "generate text from a prompt", runRun},
		{"serve", "serve the Ollama, OpenAI and Ole HTTP APIs", runServe},
		{"synth", "write a random-weight model with a real model's shapes (for benchmarks)", runSynth},
		{"tokenize", "print the token ids of a text", runTokenize},
		// The models directory and a running server (models.go).
		{"list", "list the models of the models directory (WOOLLY_MODELS, default ~/.woolly/models)", runList},
		{"ls", "same as list", runList},
		{"show", "show a model's details, capabilities, parameters and chat template", runShow},
		{"rm", "remove models from the models directory", runRm},
		{"cp", "copy a model under a second name", runCp},
		{"import", "copy (or --link) a GGUF file into the models directory", runImport},
		{"ps", "list the models a running 'woolly serve' has loaded", runPs},
		{"stop", "unload a model from a running 'woolly serve'", runStop},
		{"pull", "not supported: Woolly downloads nothing (use import)", runPull},
	} {
		commands[c.name] = c
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: woolly <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := slices.Sorted(maps.Keys(commands))
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'woolly <command> -h' for a command's flags.")
}

// errUsage marks an error that was already explained by a flag set.
var errUsage = errors.New("usage")

// errInterrupted ends a command stopped by Ctrl-C: exit code 130 (128 +
// SIGINT), as shells and llama-cli report it.
var errInterrupted = errors.New("interrupted")

// Main runs the woolly command line args (without the program name) and
// returns the process's exit code: 0, 1 for an error, 2 for a usage error,
// 130 after Ctrl-C.
func Main(args []string, stdout, stderr io.Writer) int { return realMain(args, stdout, stderr) }

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintf(stdout, "woolly %s (%s, kernels %s)\n", server.Version, goruntime.Version(), kernels.Impl())
		return 0
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "woolly: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		if errors.Is(err, errInterrupted) {
			return 130
		}
		fmt.Fprintf(stderr, "woolly %s: %v\n", cmd.name, err)
		return 1
	}
	return 0
}

// newFlagSet returns a flag set for a subcommand that reports errors instead
// of exiting, and prints its usage to stderr: the usage lines given (a
// synopsis, notes), if any, then the flags.
func newFlagSet(name string, stderr io.Writer, usage ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("woolly "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if len(usage) > 0 {
		fs.Usage = func() {
			for _, line := range usage {
				fmt.Fprintln(fs.Output(), line)
			}
			fs.PrintDefaults()
		}
	}
	return fs
}

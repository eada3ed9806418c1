package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func runPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perplexity", stderr)
	model := modelFlag(fs)
	file := fs.String("f", "", "text `file`")
	nctx := fs.Int("c", 128, "tokens per chunk")
	threads := threadsFlag(fs)
	attn := attentionFlag(fs)
	asJSON := fs.Bool("json", false, "print {\"ppl\":...,\"chunks\":...}")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *model == "" || *file == "" {
		return usageError(fs, "-m MODEL and -f FILE are required")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments %q", fs.Args())
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	if *nctx < 4 {
		return usageError(fs, "-c %d: want at least 4 tokens per chunk", *nctx)
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	// Like llama.cpp's -f: drop one trailing newline.
	text := strings.TrimSuffix(string(b), "\n")
	m, err := loadForEval(*model, *threads, *attn)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := m.Perplexity(ctx, text, *nctx, func(c int, ppl float64) {
		fmt.Fprintf(stderr, "[%d]%.4f,", c, ppl)
	})
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			PPL    float64 `json:"ppl"`
			Chunks int     `json:"chunks"`
		}{res.PPL, res.Chunks})
	}
	fmt.Fprintf(stdout, "PPL = %.4f over %d chunks of %d tokens (%d tokens scored)\n", res.PPL, res.Chunks, *nctx, res.Scored)
	return nil
}

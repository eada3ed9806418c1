// Command woolly-soak runs the soak of package soak against a running
// server: many concurrent clients over the Ollama and OpenAI routes,
// streaming and not, with mid-stream disconnects, malformed and oversized
// bodies and model unloads, then prints what went wrong, latencies, and the
// server's goroutines and RSS before, during and after. It exits 1 when
// anything unexpected happened, the server's goroutines did not come back
// to the baseline, its RSS stayed more than -rss-slack above it, or a
// probe disconnect was followed by more than -max-excess tokens (default 1).
//
//	woolly-soak -url http://127.0.0.1:8080 -models stories260K-Q4_K_M,synth-llama-mini-Q4_K_M
//
// scripts/soak.sh starts `woolly serve` on loopback and runs this against it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/soak"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "woolly-soak:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg soak.Config
	fs := flag.NewFlagSet("woolly-soak", flag.ContinueOnError)
	fs.StringVar(&cfg.URL, "url", "", "the server's base `URL` (loopback), e.g. http://127.0.0.1:8080")
	models := fs.String("models", "", "comma-separated model `names` (two or more)")
	fs.IntVar(&cfg.Clients, "clients", 64, "concurrent clients")
	fs.IntVar(&cfg.Requests, "requests", 500, "requests per client")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 8, "tokens asked by an ordinary request")
	fs.IntVar(&cfg.DisconnectTokens, "disconnect-tokens", 64, "tokens asked by a request that disconnects after 1 to 3")
	fs.Float64Var(&cfg.DisconnectRate, "disconnect", 0.10, "share of requests disconnecting mid-stream")
	fs.Float64Var(&cfg.BadRate, "bad", 0.05, "share of requests with a malformed or oversized body")
	fs.Int64Var(&cfg.OversizeBytes, "oversize", 8<<20+1024, "`bytes` of an oversized body (above the server's limit; 0: none)")
	unloadAt := fs.String("unload-at", "0.5", "comma-separated points of progress (0..1) at which every model is unloaded with keep_alive 0")
	fs.IntVar(&cfg.Probes, "probes", 10, "sequential disconnect probes per model after the load")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.DurationVar(&cfg.Settle, "settle", 30*time.Second, "longest wait for the goroutines to come back down")
	timeout := fs.Duration("timeout", 30*time.Minute, "bound on the whole run")
	maxExcess := fs.Int("max-excess", 1, "most tokens a probe disconnect may be followed by")
	rssSlack := fs.Int64("rss-slack", 64, "`MiB` the server's RSS may stay above the baseline after the soak")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("q", false, "no progress lines")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Models = append(cfg.Models, m)
		}
	}
	for _, a := range strings.Split(*unloadAt, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		x, err := strconv.ParseFloat(a, 64)
		if err != nil || x < 0 || x > 1 {
			return fmt.Errorf("-unload-at: %q is not a number from 0 to 1", a)
		}
		cfg.UnloadAt = append(cfg.UnloadAt, x)
	}
	if cfg.URL == "" || len(cfg.Models) == 0 {
		return fmt.Errorf("-url and -models are required")
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := soak.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Println(string(b))
	} else {
		fmt.Print(rep)
	}
	if err := rep.Check(*maxExcess, *rssSlack<<20, 0); err != nil {
		return err
	}
	return nil
}

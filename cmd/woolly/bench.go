package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/woolly-llm/woolly/bench"
	"github.com/woolly-llm/woolly/kernels"
	wrt "github.com/woolly-llm/woolly/runtime"
)

// benchReport is bench.Report with the caches' statistics after the last
// thread count's tests.
type benchReport struct {
	bench.Report
	Caches *cacheJSON `json:"caches,omitempty"`
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr,
		"usage: woolly bench -m MODEL [-p 128] [-n 64] [-d 0] [-t LIST] [-r 3] [--json]",
		"       woolly bench --bandwidth [-t THREADS] [--bw-size MiB] [--json]",
		"       woolly bench -m MODEL --clients 1,8 [-n 64] [-t THREADS] [-r 3] [--parallel N] [--json]",
		"ppN: N random prompt tokens in one batch; tgN: N single-token steps; both at depth D (-d: tokens already in the context),",
		"after one unrecorded warm-up; tokens/s is the mean over -r runs ± the sample standard deviation.")
	model := fs.String("m", "", "model GGUF file")
	pList := fs.String("p", "128", "prompt lengths (comma list; 0 skips prompt processing)")
	nList := fs.String("n", "64", "generation lengths (comma list; 0 skips generation)")
	dList := fs.String("d", "0", "context depths (comma list): tokens already in the cache before each test, like llama-bench -d")
	tList := fs.String("t", "", "thread counts (comma list; default: physical cores)")
	reps := fs.Int("r", 3, "repetitions per test")
	asJSON := fs.Bool("json", false, "print one JSON object")
	bandwidth := fs.Bool("bandwidth", false, "measure memory read bandwidth instead (all threads stream-read a buffer)")
	bwMiB := fs.Int("bw-size", 1024, "buffer size for --bandwidth, MiB")
	seed := fs.Uint64("seed", 1, "seed of the random prompt tokens")
	clientsS := fs.String("clients", "", "serving benchmark instead: client counts (comma list, e.g. 1,8): that many clients at once each stream -n tokens from woolly serve on loopback")
	profile := fs.Bool("profile", false, "print each test's time per token by op class (matrix products by weight type, attention, activation quantization, other; pool wait)")
	parallel := fs.Int("parallel", 0, "with --clients: the server's --parallel (0: serve's default, chosen from the KV budget)")
	dequantS := dequantFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "woolly bench: unexpected argument %q\n", pos[0])
		return errUsage
	}
	threads, err := parseIntList(*tList, "-t", 1)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	for _, t := range threads {
		if err := checkThreads(fs, t); err != nil {
			return err
		}
	}
	if *bandwidth {
		t := runtime.NumCPU()
		if len(threads) > 0 {
			t = threads[0]
		}
		if *bwMiB < 1 || *bwMiB > 1<<20 {
			return usageError(fs, "--bw-size %d: want 1 to %d MiB", *bwMiB, 1<<20)
		}
		return benchBandwidth(stdout, t, int64(*bwMiB)<<20, *asJSON)
	}
	if *model == "" {
		fs.Usage()
		return errUsage
	}
	// list parses a comma list; the first bad one is listErr.
	var listErr error
	list := func(s, name string, min int) []int {
		v, err := parseIntList(s, name, min)
		if listErr == nil {
			listErr = err
		}
		return v
	}
	if *clientsS != "" {
		clients, gens := list(*clientsS, "--clients", 1), list(*nList, "-n", 1)
		if listErr != nil {
			return usageError(fs, "%v", listErr)
		}
		nt := 0
		if len(threads) > 0 {
			nt = threads[0]
		}
		return benchServe(stdout, bench.ServeOptions{Model: *model, Clients: clients, Gen: gens[0], Threads: nt,
			Parallel: *parallel, Reps: *reps}, *asJSON)
	}
	prompts, gens, depths := list(*pList, "-p", 0), list(*nList, "-n", 0), list(*dList, "-d", 0)
	if listErr != nil {
		return usageError(fs, "%v", listErr)
	}
	dq, err := parseDequantCache(*dequantS)
	if err != nil {
		return err
	}
	if *reps < 1 {
		return usageError(fs, "-r %d: need at least 1 repetition", *reps)
	}
	var caches *cacheJSON
	// The table's header comes with its first row, so that a model that
	// fails to load prints its error alone.
	header := !*asJSON
	rep, err := bench.Run(bench.Options{
		Model: *model, Prompts: prompts, Gens: gens, Depths: depths, Threads: threads, Reps: *reps, Seed: *seed, Profile: *profile,
		Prepare: func(m *wrt.Model) (int64, error) {
			if err := dq.apply(m); err != nil {
				return 0, err
			}
			return dq.budget(m), nil
		},
		OnResult: func(info wrt.ModelInfo, res bench.Result) {
			if *asJSON {
				return
			}
			if header {
				header = false
				fmt.Fprintf(stdout, "| %-28s | %10s | %8s | %-12s | %7s | %14s | %16s |\n", "model", "size", "params", "kernels", "threads", "test", "t/s")
				fmt.Fprintf(stdout, "| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", strings.Repeat("-", 28), strings.Repeat("-", 9), strings.Repeat("-", 7), strings.Repeat("-", 12), strings.Repeat("-", 6), strings.Repeat("-", 13), strings.Repeat("-", 15))
			}
			name := fmt.Sprintf("%s %s %s", info.Architecture, paramsLabel(info.NParams), info.FileType)
			fmt.Fprintf(stdout, "| %-28s | %6.2f MiB | %6.2f B | %-12s | %7d | %14s | %8.2f ± %5.2f |\n",
				name, float64(info.SizeBytes)/(1<<20), float64(info.NParams)/1e9, kernels.Impl(), res.Threads, res.Name(), res.TokensPerS, res.Stddev)
			if res.Profile != nil {
				printProfile(stdout, res.Name(), *res.Profile)
			}
		},
		Done: func(m *wrt.Model) {
			cj := cacheStatsJSON(m)
			caches = &cj
			if info := m.Info(); !*asJSON && info.PackedBytes > 0 {
				fmt.Fprintf(stdout, "packed weights: %.2f MiB repacked at load in %.3f s (WOOLLY_PACK=1)\n",
					float64(info.PackedBytes)/(1<<20), info.PackTime.Seconds())
			}
			if !*asJSON && dq.budget(m) > 0 {
				printCacheStats(stdout, m)
			}
		},
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(benchReport{Report: *rep, Caches: caches})
	}
	fmt.Fprintf(stdout, "\nmodel: %s\n", filepath.Base(*model))
	return nil
}

func paramsLabel(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.0fB", math.Round(float64(n)/1e9))
	}
	return fmt.Sprintf("%.0fM", math.Round(float64(n)/1e6))
}

// parseIntList parses "1,2,4"; every value must be ≥ minVal.
func parseIntList(s, flagName string, minVal int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < minVal {
			return nil, fmt.Errorf("%s %q: want a comma-separated list of integers ≥ %d", flagName, s, minVal)
		}
		out = append(out, v)
	}
	return out, nil
}

// benchBandwidth streams through a buffer of size bytes with t goroutines
// (each summing its own contiguous part) and reports the best of 5 passes.
func benchBandwidth(stdout io.Writer, t int, size int64, asJSON bool) error {
	if size < 1<<20 {
		return fmt.Errorf("--bw-size must be at least 1 MiB")
	}
	buf := make([]uint64, size/8)
	var wg sync.WaitGroup
	part := (len(buf) + t - 1) / t
	each := func(f func(lo, hi, g int)) {
		for g := 0; g < t; g++ {
			lo, hi := g*part, min(len(buf), (g+1)*part)
			wg.Add(1)
			go func() { defer wg.Done(); f(lo, hi, g) }()
		}
		wg.Wait()
	}
	each(func(lo, hi, g int) { // touch every page from the thread that will read it
		for i := lo; i < hi; i++ {
			buf[i] = uint64(i)
		}
	})
	sums := make([]uint64, t)
	best := math.Inf(1)
	for pass := 0; pass < 5; pass++ {
		start := time.Now()
		each(func(lo, hi, g int) {
			var a, b, c, d uint64
			x := buf[lo:hi]
			for len(x) >= 4 {
				a += x[0]
				b += x[1]
				c += x[2]
				d += x[3]
				x = x[4:]
			}
			for _, v := range x {
				a += v
			}
			sums[g] += a + b + c + d
		})
		best = min(best, time.Since(start).Seconds())
	}
	var check uint64
	for _, s := range sums {
		check += s
	}
	gbps := float64(size) / best / 1e9
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"bandwidth_gbps": gbps, "threads": t, "bytes": size, "checksum": check})
	}
	fmt.Fprintf(stdout, "memory read bandwidth: %.2f GB/s (%d threads, %d MiB buffer, best of 5)\n", gbps, t, size>>20)
	return nil
}

// benchServe prints the serving benchmark: per client count, aggregate
// generated tokens/s and its ratio to the first count's, time to first
// token, and the mean stream's generation rate.
func benchServe(stdout io.Writer, o bench.ServeOptions, asJSON bool) error {
	res, err := bench.Serve(context.Background(), o)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"model": filepath.Base(o.Model), "gen": o.Gen, "results": res})
	}
	fmt.Fprintf(stdout, "| %7s | %12s | %8s | %12s | %13s | %13s |\n", "clients", "total t/s", "vs first", "stream t/s", "TTFT median s", "TTFT max s")
	fmt.Fprintf(stdout, "| ------: | -----------: | -------: | -----------: | ------------: | ------------: |\n")
	for _, r := range res {
		fmt.Fprintf(stdout, "| %7d | %12.2f | %7.2fx | %12.2f | %13.3f | %13.3f |\n",
			r.Clients, r.TokensPerS, r.TokensPerS/res[0].TokensPerS, r.StreamTPS, r.TTFTMedian, r.TTFTMax)
	}
	fmt.Fprintf(stdout, "\nmodel: %s, %d tokens per request, median of %d rounds\n", filepath.Base(o.Model), o.Gen, o.Reps)
	return nil
}

// printProfile prints a runtime.Profile as time per token by op class.
func printProfile(w io.Writer, label string, p wrt.Profile) {
	if p.Tokens == 0 {
		return
	}
	perTok := func(d time.Duration) float64 { return float64(d) / 1e6 / float64(p.Tokens) }
	fmt.Fprintf(w, "  profile %s: %d tokens in %d passes, %.3f ms/token\n", label, p.Tokens, p.Passes, perTok(p.Total))
	for _, op := range p.Ops {
		fmt.Fprintf(w, "    %-16s %9.3f ms/token %6.1f%%\n", op.Class, perTok(op.Time), 100*float64(op.Time)/float64(p.Total))
	}
	fmt.Fprintf(w, "    %-16s %9.3f ms/token %6.1f%% (waiting for workers; included above)\n", "pool wait", perTok(p.PoolWait), 100*float64(p.PoolWait)/float64(p.Total))
}

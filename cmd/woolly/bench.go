package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	wrt "github.com/woolly-llm/woolly/runtime"
)

func init() {
	register("bench", "measure prompt processing and generation speed (like llama-bench)", runBench)
}

type benchResult struct {
	Threads    int       `json:"threads"`
	Test       string    `json:"test"`
	TokensPerS float64   `json:"tokens_per_s"`
	Stddev     float64   `json:"stddev"`
	Samples    []float64 `json:"samples"`
	// DequantCacheBudget repeats the report's --dequant-cache budget (bytes, 0: off).
	DequantCacheBudget int64 `json:"dequant_cache_budget"`
}

type benchReport struct {
	Model     string   `json:"model"`
	FileType  string   `json:"file_type"`
	SizeBytes int64    `json:"size_bytes"`
	Params    int64    `json:"params"`
	Kernels   string   `json:"kernels"`
	Available []string `json:"kernels_available"`
	// BytesPerToken is the weight data one generated token reads: every
	// tensor except the token embedding (of which one row is read), unless
	// the embedding is also the output matrix.
	BytesPerToken int64         `json:"bytes_per_token"`
	Results       []benchResult `json:"results"`
	// DequantCacheBudget is the --dequant-cache budget in bytes (0: off);
	// Caches the caches' statistics after the last thread count's tests.
	DequantCacheBudget int64      `json:"dequant_cache_budget"`
	Caches             *cacheJSON `json:"caches,omitempty"`
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	model := fs.String("m", "", "model GGUF file")
	pList := fs.String("p", "128", "prompt lengths (comma list; 0 skips prompt processing)")
	nList := fs.String("n", "64", "generation lengths (comma list; 0 skips generation)")
	tList := fs.String("t", "", "thread counts (comma list; default: physical cores)")
	reps := fs.Int("r", 3, "repetitions per test")
	asJSON := fs.Bool("json", false, "print one JSON object")
	bandwidth := fs.Bool("bandwidth", false, "measure memory read bandwidth instead (all threads stream-read a buffer)")
	bwMiB := fs.Int("bw-size", 1024, "buffer size for --bandwidth, MiB")
	seed := fs.Uint64("seed", 1, "seed of the random prompt tokens")
	dequantS := dequantFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: woolly bench -m MODEL [-p 128] [-n 64] [-t LIST] [-r 3] [--json]")
		fmt.Fprintln(fs.Output(), "       woolly bench --bandwidth [-t THREADS] [--bw-size MiB] [--json]")
		fmt.Fprintln(fs.Output(), "ppN: N random prompt tokens in one batch; tgN: N single-token steps; both from an empty context,")
		fmt.Fprintln(fs.Output(), "after one unrecorded warm-up; tokens/s is the mean over -r runs ± the sample standard deviation.")
		fs.PrintDefaults()
	}
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
		return err
	}
	if *bandwidth {
		t := runtime.NumCPU()
		if len(threads) > 0 {
			t = threads[0]
		}
		return benchBandwidth(stdout, t, int64(*bwMiB)<<20, *asJSON)
	}
	if *model == "" {
		fs.Usage()
		return errUsage
	}
	prompts, err := parseIntList(*pList, "-p", 0)
	if err != nil {
		return err
	}
	gens, err := parseIntList(*nList, "-n", 0)
	if err != nil {
		return err
	}
	dq, err := parseDequantCache(*dequantS)
	if err != nil {
		return err
	}
	if *reps < 1 {
		return fmt.Errorf("-r %d: need at least 1 repetition", *reps)
	}
	if len(threads) == 0 {
		threads = []int{0} // the runtime's default: physical cores
	}
	maxP, maxN := 0, 0
	for _, p := range prompts {
		maxP = max(maxP, p)
	}
	for _, n := range gens {
		maxN = max(maxN, n)
	}
	if maxP == 0 && maxN == 0 {
		return fmt.Errorf("nothing to measure: -p and -n are both 0")
	}

	rep := benchReport{Kernels: kernels.Impl(), Available: kernels.Available()}
	if rep.BytesPerToken, err = weightBytesPerToken(*model); err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "| %-28s | %10s | %8s | %-12s | %7s | %8s | %16s |\n", "model", "size", "params", "kernels", "threads", "test", "t/s")
		fmt.Fprintf(stdout, "| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", strings.Repeat("-", 28), strings.Repeat("-", 9), strings.Repeat("-", 7), strings.Repeat("-", 12), strings.Repeat("-", 6), strings.Repeat("-", 7), strings.Repeat("-", 15))
	}
	for _, nt := range threads {
		m, err := wrt.Load(*model, wrt.LoadOptions{Threads: nt, PrefixCache: wrt.Ptr(int64(0))})
		if err != nil {
			return err
		}
		if err := dq.apply(m); err != nil {
			m.Close()
			return err
		}
		rep.DequantCacheBudget = dq.budget(m)
		info := m.Info()
		rep.Model, rep.FileType, rep.SizeBytes, rep.Params = info.Name, info.FileType, info.SizeBytes, info.NParams
		// One session sized for the longest test; Reset empties it between runs.
		s, err := m.NewSession(max(maxP, maxN) + 1)
		if err != nil {
			m.Close()
			return err
		}
		bos := int32(-1)
		if tok := m.Tokenizer(); tok != nil && tok.AddBOS() {
			bos = tok.BOS()
		}
		rng := rand.New(rand.NewPCG(*seed, 0))
		randTokens := func(n int) []int32 {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(rng.IntN(info.NVocab))
			}
			if bos >= 0 {
				ids[0] = bos
			}
			return ids
		}
		var tests []struct {
			name string
			run  func() (int, error)
		}
		for _, p := range prompts {
			if p <= 0 {
				continue
			}
			tests = append(tests, struct {
				name string
				run  func() (int, error)
			}{fmt.Sprintf("pp%d", p), func() (int, error) {
				toks := randTokens(p)
				s.Reset()
				start := time.Now()
				if _, err := s.Eval(toks, false); err != nil {
					return 0, err
				}
				return int(time.Since(start)), nil
			}})
		}
		for _, n := range gens {
			if n <= 0 {
				continue
			}
			tests = append(tests, struct {
				name string
				run  func() (int, error)
			}{fmt.Sprintf("tg%d", n), func() (int, error) {
				first := randTokens(1)[0]
				s.Reset()
				start := time.Now()
				tok := []int32{first}
				for i := 0; i < n; i++ {
					logits, err := s.Eval(tok, false)
					if err != nil {
						return 0, err
					}
					tok[0] = argmax(logits)
				}
				return int(time.Since(start)), nil
			}})
		}
		for _, tc := range tests {
			ntok, _ := strconv.Atoi(tc.name[2:])
			if _, err := tc.run(); err != nil { // warm-up, not recorded
				m.Close()
				return fmt.Errorf("%s: %w", tc.name, err)
			}
			var samples []float64
			for r := 0; r < *reps; r++ {
				ns, err := tc.run()
				if err != nil {
					m.Close()
					return fmt.Errorf("%s: %w", tc.name, err)
				}
				samples = append(samples, float64(ntok)/(float64(ns)/1e9))
			}
			mean, sd := meanStddev(samples)
			res := benchResult{Threads: info.Threads, Test: tc.name, TokensPerS: mean, Stddev: sd, Samples: samples, DequantCacheBudget: rep.DequantCacheBudget}
			rep.Results = append(rep.Results, res)
			if !*asJSON {
				name := fmt.Sprintf("%s %s %s", info.Architecture, paramsLabel(info.NParams), info.FileType)
				fmt.Fprintf(stdout, "| %-28s | %6.2f MiB | %6.2f B | %-12s | %7d | %8s | %8.2f ± %5.2f |\n",
					name, float64(info.SizeBytes)/(1<<20), float64(info.NParams)/1e9, rep.Kernels, res.Threads, tc.name, mean, sd)
			}
		}
		cj := cacheStatsJSON(m)
		rep.Caches = &cj
		if !*asJSON && rep.DequantCacheBudget > 0 {
			printCacheStats(stdout, m)
		}
		m.Close()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "\nmodel: %s\n", filepath.Base(*model))
	return nil
}

// weightBytesPerToken sums the tensor bytes a single-token forward pass
// reads: of a mixture-of-experts stack (ffn_*_exps) only the used experts'
// share, expert_used_count / expert_count.
func weightBytesPerToken(path string) (int64, error) {
	f, err := loader.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, hasOutput := f.Tensor("output.weight")
	arch := f.Architecture()
	nExp, _ := f.Uint(arch + ".expert_count")
	nUsed, _ := f.Uint(arch + ".expert_used_count")
	var n int64
	for _, t := range f.Tensors {
		switch {
		case t.Name == "token_embd.weight" && hasOutput:
			n += t.RowBytes()
		case strings.HasSuffix(t.Name, "_exps.weight") && nExp > 0 && nUsed <= nExp:
			n += t.Size / int64(nExp) * int64(nUsed)
		default:
			n += t.Size
		}
	}
	return n, nil
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

func paramsLabel(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.0fB", math.Round(float64(n)/1e9))
	}
	return fmt.Sprintf("%.0fM", math.Round(float64(n)/1e6))
}

// meanStddev returns the mean and the sample standard deviation (n−1).
func meanStddev(x []float64) (float64, float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	mean := s / float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
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

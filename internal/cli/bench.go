package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/woolly-llm/woolly/bench"
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
	removedFlag(fs, "dequant-cache", "")
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
		return bench.Bandwidth(stdout, t, int64(*bwMiB)<<20, *asJSON)
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
		return bench.WriteServe(stdout, bench.ServeOptions{Model: *model, Clients: clients, Gen: gens[0], Threads: nt,
			Parallel: *parallel, Reps: *reps}, *asJSON)
	}
	prompts, gens, depths := list(*pList, "-p", 0), list(*nList, "-n", 0), list(*dList, "-d", 0)
	if listErr != nil {
		return usageError(fs, "%v", listErr)
	}
	if *reps < 1 {
		return usageError(fs, "-r %d: need at least 1 repetition", *reps)
	}
	var caches *cacheJSON
	table := bench.NewTable(stdout)
	rep, err := bench.Run(bench.Options{
		Model: *model, Prompts: prompts, Gens: gens, Depths: depths, Threads: threads, Reps: *reps, Seed: *seed, Profile: *profile,
		OnResult: func(info wrt.ModelInfo, res bench.Result) {
			if *asJSON {
				return
			}
			table.Row(info, res)
		},
		Done: func(m *wrt.Model) {
			cj := cacheStatsJSON(m)
			caches = &cj
			if info := m.Info(); !*asJSON && info.PackedBytes > 0 {
				fmt.Fprintf(stdout, "packed weights: %.2f MiB repacked at load in %.3f s (WOOLLY_PACK=1)\n",
					float64(info.PackedBytes)/(1<<20), info.PackTime.Seconds())
			}
		},
	})
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "woolly bench: note: %s\n", n)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(benchReport{Report: *rep, Caches: caches})
	}
	fmt.Fprintf(stdout, "\nmodel: %s\n", filepath.Base(*model))
	return nil
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

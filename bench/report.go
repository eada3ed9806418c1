package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/runtime"
)

// Table writes Run's results as llama-bench's markdown table, its header
// with the first row (so that a model that fails to load prints its error
// alone), each row's profile under it.
type Table struct {
	w       io.Writer
	started bool
}

// NewTable is a Table on w.
func NewTable(w io.Writer) *Table { return &Table{w: w} }

// Row writes one result of the model described by info.
func (t *Table) Row(info runtime.ModelInfo, res Result) {
	if !t.started {
		t.started = true
		fmt.Fprintf(t.w, "| %-28s | %10s | %8s | %-12s | %7s | %14s | %16s |\n", "model", "size", "params", "kernels", "threads", "test", "t/s")
		fmt.Fprintf(t.w, "| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", strings.Repeat("-", 28), strings.Repeat("-", 9), strings.Repeat("-", 7), strings.Repeat("-", 12), strings.Repeat("-", 6), strings.Repeat("-", 13), strings.Repeat("-", 15))
	}
	name := fmt.Sprintf("%s %s %s", info.Architecture, paramsLabel(info.NParams), info.FileType)
	fmt.Fprintf(t.w, "| %-28s | %6.2f MiB | %6.2f B | %-12s | %7d | %14s | %8.2f ± %5.2f |\n",
		name, float64(info.SizeBytes)/(1<<20), float64(info.NParams)/1e9, kernels.Impl(), res.Threads, res.Name(), res.TokensPerS, res.Stddev)
	if res.Profile != nil {
		WriteProfile(t.w, res.Name(), *res.Profile)
	}
}

func paramsLabel(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.0fB", math.Round(float64(n)/1e9))
	}
	return fmt.Sprintf("%.0fM", math.Round(float64(n)/1e6))
}

// WriteProfile prints a runtime.Profile as time per token by op class.
func WriteProfile(w io.Writer, label string, p runtime.Profile) {
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

// Bandwidth (woolly bench --bandwidth) streams through a buffer of size bytes with t goroutines
// (each summing its own contiguous part) and reports the best of 5 passes
// on stdout (one JSON object with asJSON).
func Bandwidth(stdout io.Writer, t int, size int64, asJSON bool) error {
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

// WriteServe runs Serve and prints the serving benchmark (one JSON object
// with asJSON): per client count, aggregate
// generated tokens/s and its ratio to the first count's, time to first
// token, and the mean stream's generation rate.
func WriteServe(stdout io.Writer, o ServeOptions, asJSON bool) error {
	res, err := Serve(context.Background(), o)
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

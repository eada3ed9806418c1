package cli

// Cache flags shared by run, chat, bench and serve: --prefix-cache and
// --dequant-cache, and the statistics --verbose prints.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/cache"
	"github.com/woolly-llm/woolly/runtime"
)

// prefixFlag adds --prefix-cache (env: its environment variable, "" for
// none); unset, the runtime's default applies (runtime.DefaultPrefixCache).
func prefixFlag(fs *flag.FlagSet, env string) (*optional[int64], error) {
	usage := fmt.Sprintf("prefix KV cache `SIZE` per model (e.g. 256M, 1G; 0: off; default %dM): requests sharing a prefix with an earlier one evaluate only their new tokens",
		runtime.DefaultPrefixCache>>20)
	if env != "" {
		usage += " (env " + env + ")"
	}
	return addOptional(fs, "prefix-cache", env, usage, parseSize)
}

// parseSize reads a byte size (256M, 1G, 0).
func parseSize(s string) (int64, error) { return cache.ParseSize(s) }

// dequantFlag adds --dequant-cache (default off).
func dequantFlag(fs *flag.FlagSet) *string {
	return fs.String("dequant-cache", "0",
		"dequantized-weight cache `SIZE` per model (e.g. 512M, or 100% of the f32 size of the layer weights; 0: off) for prompt batches ≥ 32 tokens")
}

// dequantSize is a parsed --dequant-cache: bytes, or a fraction of the
// model's dequant working set ("25%").
type dequantSize struct {
	bytes int64
	frac  float64 // > 0: a fraction of Model.DequantWorkingSet
}

// pack is the packing a model with this cache loads with: off, unless
// WOOLLY_PACK=1 asks for both (Load then names the conflict).
func (d dequantSize) pack() runtime.PackMode {
	if os.Getenv("WOOLLY_PACK") == "1" {
		return runtime.PackDefault
	}
	return runtime.PackOff
}

func parseDequantCache(s string) (dequantSize, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || v > 1e6 {
			return dequantSize{}, fmt.Errorf("--dequant-cache %q: want a size (512M) or a percentage (25%%)", s)
		}
		return dequantSize{frac: v / 100}, nil
	}
	n, err := cache.ParseSize(t)
	if err != nil {
		return dequantSize{}, fmt.Errorf("--dequant-cache: %v", err)
	}
	return dequantSize{bytes: n}, nil
}

// budget is the cache budget in bytes for model m.
func (d dequantSize) budget(m *runtime.Model) int64 {
	if d.frac > 0 {
		return int64(d.frac * float64(m.DequantWorkingSet()))
	}
	return d.bytes
}

// apply sets m's dequant cache (a no-op when off).
func (d dequantSize) apply(m *runtime.Model) error {
	b := d.budget(m)
	if b == 0 {
		return nil
	}
	return m.SetDequantCache(b)
}

// printCacheStats writes one line per cache to w.
func printCacheStats(w io.Writer, m *runtime.Model) {
	cs := m.CacheStats()
	if !cs.PrefixEnabled {
		fmt.Fprintln(w, "prefix cache: off")
	} else {
		p := cs.Prefix
		fmt.Fprintf(w, "prefix cache: hits %d, misses %d (%.1f%% hit rate), tokens reused %d of %d looked up, evictions %d, entries %d, bytes %s of %s, time saved ~%v (estimate)\n",
			p.Hits, p.Misses, 100*p.HitRate(), p.TokensReused, p.TokensLookedUp, p.Evictions, p.Entries,
			mib(p.Bytes), mib(p.Budget), p.TimeSaved.Round(time.Millisecond))
	}
	if !cs.DequantEnabled {
		fmt.Fprintf(w, "dequant cache: off (f32 working set %s)\n", mib(m.DequantWorkingSet()))
		return
	}
	d := cs.Dequant
	fmt.Fprintf(w, "dequant cache: hits %d, misses %d (%.1f%% hit rate), tensors dequantized %d (%d of them by prefetch), rejected %d, evictions %d, entries %d, bytes %s of %s (f32 working set %s), dequant time %v, time saved %v\n",
		d.Hits, d.Misses, 100*d.HitRate(), d.Loads, d.Prefetched, d.Rejected, d.Evictions, d.Entries,
		mib(d.Bytes), mib(d.Budget), mib(m.DequantWorkingSet()), d.LoadTime.Round(time.Millisecond), d.TimeSaved.Round(time.Millisecond))
	if d.LastPrefetchError != "" {
		fmt.Fprintf(w, "dequant cache: last prefetch error: %s\n", d.LastPrefetchError)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// cacheJSON is the caches' part of --json outputs.
type cacheJSON struct {
	Prefix  *cache.PrefixStats  `json:"prefix_cache,omitempty"`
	Dequant *cache.DequantStats `json:"dequant_cache,omitempty"`
	// DequantWorkingSet is the f32 size of the weights the dequant cache can hold.
	DequantWorkingSet int64 `json:"dequant_working_set_bytes"`
}

func cacheStatsJSON(m *runtime.Model) cacheJSON {
	cs := m.CacheStats()
	out := cacheJSON{DequantWorkingSet: m.DequantWorkingSet()}
	if cs.PrefixEnabled {
		out.Prefix = &cs.Prefix
	}
	if cs.DequantEnabled {
		out.Dequant = &cs.Dequant
	}
	return out
}

// kvTypeFlags are --cache-type-k/-ctk and --cache-type-v/-ctv (run, chat,
// serve): the KV cache's types, as llama.cpp spells them.
type kvTypeFlags struct{ k, v *string }

func addKVTypeFlags(fs *flag.FlagSet) *kvTypeFlags {
	f := &kvTypeFlags{
		k: fs.String("cache-type-k", "f16", "KV cache `type` of K: f16, q8_0 (about half the memory) or q4_0 (a quarter); docs/kv-cache.md"),
		v: fs.String("cache-type-v", "f16", "KV cache `type` of V: f16, q8_0 or q4_0"),
	}
	fs.Var(fs.Lookup("cache-type-k").Value, "ctk", "same as -cache-type-k")
	fs.Var(fs.Lookup("cache-type-v").Value, "ctv", "same as -cache-type-v")
	return f
}

// check refuses an unknown type with a usage error naming the flag.
func (f *kvTypeFlags) check(fs *flag.FlagSet) error {
	if _, err := runtime.ParseCacheType(*f.k); err != nil {
		return usageError(fs, "--cache-type-k: %v", err)
	}
	if _, err := runtime.ParseCacheType(*f.v); err != nil {
		return usageError(fs, "--cache-type-v: %v", err)
	}
	return nil
}

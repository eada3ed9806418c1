package cli

// Cache flags shared by run, chat, bench and serve: --prefix-cache (and the
// removed --dequant-cache), and the statistics --verbose prints.

import (
	"flag"
	"fmt"
	"io"
	"os"
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

// errDequantRemoved says why --dequant-cache is gone.
const errDequantRemoved = "the dequantized-weight cache was removed: keeping the weights quantized was faster (docs/caches.md)"

// removedFlag adds --NAME as a flag that is an error whatever its value,
// naming that it was removed (env: its former environment variable, "" for
// none; removedEnv checks it).
func removedFlag(fs *flag.FlagSet, name, env string) {
	usage := "removed: an error if given (docs/caches.md)"
	if env != "" {
		usage += "; so is env " + env
	}
	fs.Func(name, usage, func(string) error { return fmt.Errorf("%s", errDequantRemoved) })
}

// removedEnv is removedFlag's check of its former environment variable.
func removedEnv(env string) error {
	if v, ok := os.LookupEnv(env); ok {
		return fmt.Errorf("%s=%q: %s", env, v, errDequantRemoved)
	}
	return nil
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
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// cacheJSON is the caches' part of --json outputs.
type cacheJSON struct {
	Prefix *cache.PrefixStats `json:"prefix_cache,omitempty"`
}

func cacheStatsJSON(m *runtime.Model) cacheJSON {
	cs := m.CacheStats()
	var out cacheJSON
	if cs.PrefixEnabled {
		out.Prefix = &cs.Prefix
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

package server

import (
	"strings"
	"testing"
)

// TestCacheStatsMetrics: the runtime backend's caches show on /metrics, a
// request that shares a prefix with another conversation reuses it, and the
// counters survive the model being unloaded.
func TestCacheStatsMetrics(t *testing.T) {
	dir := realModelsDir(t)
	cs := NewCacheStats()
	s, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{Caches: cs})
	s.RegisterStats("prefix_cache", cs.Prefix)

	story := strings.Repeat("Once upon a time there was a little girl named Lily. She liked to play in the park with her dog. ", 3)
	gen := func(prompt string) {
		st, b := post(t, ts.URL+"/api/generate", `{"model":"`+realModel+`","prompt":"`+prompt+`","stream":false,"options":{"temperature":0,"num_predict":4}}`)
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
	}
	gen(story + "One day")         // conversation A
	gen("The sun was hot and Tom") // B replaces the server's session
	gen(story + "The next day")    // shares A's prefix: served by the prefix cache

	m := string(do(t, ts, "GET", "/metrics", "").body)
	for _, want := range []string{"woolly_prefix_cache_hits ", "woolly_prefix_cache_tokens_reused", "woolly_prefix_cache_bytes",
		"woolly_prefix_cache_models 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	p := cs.Prefix()
	hits := p["hits"]
	if hits < 1 || p["tokens_reused"] < 40 || p["entries"] < 2 {
		t.Errorf("prefix stats %v", p)
	}

	// Unloading keeps the counters, drops what was held.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p = cs.Prefix()
	if p["hits"] != hits || p["models"] != 0 || p["bytes"] != 0 {
		t.Errorf("after unloading: %v", p)
	}
}

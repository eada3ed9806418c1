package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/runtime"
)

// scrape reads /metrics and returns the value of every unlabelled series
// plus vllm:cache_config_info's num_gpu_blocks label (as "num_gpu_blocks").
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	st, body := get(t, url+"/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "vllm:cache_config_info{") {
			i := strings.Index(line, `num_gpu_blocks="`)
			rest := line[i+len(`num_gpu_blocks="`):]
			v, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			out["num_gpu_blocks"] = v
			continue
		}
		f := strings.Fields(line)
		if len(f) == 2 && !strings.Contains(f[0], "{") {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			out[f[0]] = v
		}
	}
	return out
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b := new(strings.Builder)
	if _, err := bufio.NewReader(r.Body).WriteTo(b); err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, []byte(b.String())
}

// waitFor polls /metrics until ok holds, failing after 5 s with the last scrape.
func waitFor(t *testing.T, url, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	var m map[string]float64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if m = scrape(t, url); ok(m) {
			return m
		}
	}
	t.Fatalf("waiting for %s: last scrape waiting=%v running=%v kv=%v", what,
		m["vllm:num_requests_waiting"], m["vllm:num_requests_running"], m["vllm:kv_cache_usage_perc"])
	return nil
}

func readyz(t *testing.T, url string) int {
	t.Helper()
	st, _ := get(t, url+"/readyz")
	return st
}

func words(n int) string { return strings.TrimSpace(strings.Repeat("x ", n)) }

// TestGatewayMetrics drives the server under load with a fake backend whose
// loads and generations block, and checks the model server protocol's
// gauges (queued, running, KV-cache utilization) and /readyz against what
// the server is doing.
func TestGatewayMetrics(t *testing.T) {
	b := newFakeBackend()
	b.gate = make(chan struct{})
	b.delay = 20 * time.Millisecond // per generated token, once past the gate
	b.loadGate = make(chan struct{})
	const par, queue = 2, 2
	_, ts := newTestServer(t, Config{Parallel: runtime.Ptr(par), MaxQueue: runtime.Ptr(queue)}, b)
	url := ts.URL
	// On failure, unblock every load and generation so the server can close.
	t.Cleanup(func() {
		close(b.gate)
		close(b.loadGate)
	})

	if st := readyz(t, url); st != 200 {
		t.Fatalf("idle /readyz %d, want 200", st)
	}
	if st, _ := get(t, url+"/livez"); st != 200 {
		t.Fatalf("/livez %d", st)
	}
	m := scrape(t, url)
	for _, k := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"} {
		if v, ok := m[k]; !ok || v != 0 {
			t.Errorf("idle %s = %v (present %v), want 0", k, v, ok)
		}
	}
	if _, ok := m["woolly_queue_depth"]; !ok {
		t.Error("woolly_queue_depth is gone")
	}

	var wg sync.WaitGroup
	codes := make(chan int, 8)
	send := func(prompt string, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body := post(t, url+"/api/generate", fmt.Sprintf(`{"model":"tiny","prompt":%q,"raw":true,"stream":false,"options":{"num_predict":%d}}`, prompt, n))
			if st != 200 && st != 503 {
				t.Errorf("generate: %d %s", st, body)
			}
			codes <- st
		}()
	}

	// The first request loads the model: not ready, one waiting, none running.
	send(words(100), 40)
	waitFor(t, url, "the loading request to queue", func(m map[string]float64) bool { return m["vllm:num_requests_waiting"] == 1 })
	if st := readyz(t, url); st != 503 {
		t.Errorf("/readyz while loading: %d, want 503", st)
	}
	if m := scrape(t, url); m["vllm:num_requests_running"] != 0 || m["woolly_ready"] != 0 {
		t.Errorf("while loading: running %v ready %v", m["vllm:num_requests_running"], m["woolly_ready"])
	}
	b.loadGate <- struct{}{}

	// Two run (held at the gate), two queue: the gauges read 2 and 2, the
	// queue is full so /readyz says 503, and the KV holds both prompts.
	waitFor(t, url, "one running", func(m map[string]float64) bool { return m["vllm:num_requests_running"] == 1 })
	if st := readyz(t, url); st != 200 {
		t.Errorf("/readyz with a free slot: %d, want 200", st)
	}
	send(words(28), 40)
	waitFor(t, url, "two running", func(m map[string]float64) bool { return m["vllm:num_requests_running"] == 2 })
	send(words(10), 5)
	send(words(10), 5)
	m = waitFor(t, url, "2 running, 2 waiting", func(m map[string]float64) bool {
		return m["vllm:num_requests_running"] == par && m["vllm:num_requests_waiting"] == queue
	})
	capTokens := float64(par * 512) // Parallel x the fake's DefaultCtx
	if got, want := m["vllm:kv_cache_usage_perc"], 128/capTokens; got != want || m["vllm:gpu_cache_usage_perc"] != want || m["woolly_kv_cache_usage_ratio"] != want {
		t.Errorf("KV utilization %v (gpu_cache %v), want %v", got, m["vllm:gpu_cache_usage_perc"], want)
	}
	if m["num_gpu_blocks"] != capTokens/kvBlockTokens {
		t.Errorf("num_gpu_blocks %v, want %v", m["num_gpu_blocks"], capTokens/kvBlockTokens)
	}
	if m["woolly_queue_depth"] != queue {
		t.Errorf("woolly_queue_depth %v", m["woolly_queue_depth"])
	}
	if st := readyz(t, url); st != 503 {
		t.Errorf("/readyz with the queue full: %d, want 503", st)
	}
	if st, _ := get(t, url+"/livez"); st != 200 {
		t.Errorf("/livez with the queue full: %d, want 200", st)
	}
	send(words(5), 5) // refused: the queue is full
	if st := <-codes; st != 503 {
		t.Errorf("request past the full queue: %d, want 503", st)
	}

	// Let one generation run slowly: the KV fills with its tokens.
	before := m["vllm:kv_cache_usage_perc"]
	b.gate <- struct{}{}
	waitFor(t, url, "KV to grow with generated tokens", func(m map[string]float64) bool {
		return m["vllm:kv_cache_usage_perc"] > before+5/capTokens
	})

	// Release everything: back to 0, 0, 0 and ready.
	for range 3 {
		b.gate <- struct{}{}
	}
	wg.Wait()
	m = scrape(t, url)
	for _, k := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"} {
		if m[k] != 0 {
			t.Errorf("after the load %s = %v, want 0", k, m[k])
		}
	}
	if st := readyz(t, url); st != 200 || m["woolly_ready"] != 1 {
		t.Errorf("after the load /readyz %d woolly_ready %v, want 200 and 1", st, m["woolly_ready"])
	}
}

// TestRuntimeKVTokens: the runtime backend's KV count holds the prompt's
// tokens plus one per generated token while a generation runs, and nothing
// once it ended.
func TestRuntimeKVTokens(t *testing.T) {
	dir := realModelsDir(t)
	m, err := RuntimeBackend{}.Load(filepath.Join(dir, realModel+".gguf"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	k, ok := m.(KVReporter)
	if !ok {
		t.Fatal("the runtime model does not implement KVReporter")
	}
	var seen []int64
	req := GenerateRequest{Prompt: "Once upon a time there was a little girl", MaxTokens: 12}
	req.Temperature = 0 // greedy
	res, err := m.Generate(context.Background(), req, func(string) error {
		seen = append(seen, k.KVTokens())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || len(seen) != res.Tokens {
		t.Fatalf("%d callbacks for %d tokens", len(seen), res.Tokens)
	}
	for i, v := range seen {
		if want := int64(res.PromptTokens + i + 1); v != want {
			t.Errorf("token %d: KV holds %d positions, want %d (prompt %d + generated)", i, v, want, res.PromptTokens)
		}
	}
	if v := k.KVTokens(); v != 0 {
		t.Errorf("after the generation the KV count is %d, want 0", v)
	}
}

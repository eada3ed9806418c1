package server

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wantRefusal checks a 400 whose message names every one of words.
func wantRefusal(t *testing.T, r resp, words ...string) {
	t.Helper()
	wantStatus(t, r, 400)
	for _, w := range words {
		if !strings.Contains(string(r.body), w) {
			t.Errorf("400 %s: does not name %q", r.body, w)
		}
	}
}

// num_ctx past the model's largest context is a 400 naming the field and
// the limit on every route that takes it, before any session is made (the
// issue: 2147483647 was a fatal out-of-memory).
func TestNumCtxBounded(t *testing.T) {
	b, ts := fakeServer(t)
	huge := `"options":{"num_ctx":2147483647}`
	for _, c := range []struct{ path, body string }{
		{"/api/generate", `{"model":"tiny","prompt":"hi","stream":false,` + huge + `}`},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stream":false,` + huge + `}`},
		{"/api/embed", `{"model":"tiny","input":"hi",` + huge + `}`},
		{"/api/embeddings", `{"model":"tiny","prompt":"hi",` + huge + `}`},
		{"/api/generate", `{"model":"tiny","prompt":"hi","stream":true,"options":{"num_ctx":513}}`},
	} {
		wantRefusal(t, do(t, ts, "POST", c.path, c.body), "num_ctx", "512")
	}
	// At the limit it is served.
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"options":{"num_ctx":512}}`)
	wantStatus(t, r, 200)
	if got := b.last().lastReq().NumCtx; got != 512 {
		t.Errorf("num_ctx 512 reached the model as %d", got)
	}
}

// The same over the runtime: a request cannot make a KV cache larger than
// serve -c (RuntimeBackend.ContextLength) or the model's training context.
func TestNumCtxBoundedRealModel(t *testing.T) {
	dir := realModelsDir(t)
	for _, c := range []struct {
		cap, numCtx int
		limit       string
	}{{0, 2147483647, "128"}, {0, 129, "128"}, {64, 65, "64"}} {
		_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{ContextLength: c.cap})
		for _, path := range []string{"/api/generate", "/api/chat", "/api/embed"} {
			body := `{"model":"` + realModel + `","prompt":"Once","input":"Once","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_ctx":` + itoa(c.numCtx) + `,"num_predict":2}}`
			wantRefusal(t, do(t, ts, "POST", path, body), "num_ctx", c.limit)
		}
		ok := `{"model":"` + realModel + `","prompt":"Once","stream":false,"options":{"num_ctx":` + c.limit + `,"num_predict":2}}`
		wantStatus(t, do(t, ts, "POST", "/api/generate", ok), 200)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// newHTTPTestServer serves a Server of cfg and b over httptest, both closed
// after the test.
func newHTTPTestServer(t *testing.T, cfg Config, b Backend) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// A prompt longer in bytes than the context could hold (the fake's tokens
// are at most 16 bytes: 512 × 16 = 8192) is refused before the model sees
// it, on every route; an embedding input with truncate on is cut instead.
func TestPromptBytesBounded(t *testing.T) {
	b, ts := fakeServer(t)
	long := strings.Repeat("a", 8193)
	for _, c := range []struct{ path, body, field string }{
		{"/api/generate", `{"model":"tiny","stream":false,"prompt":"` + long + `"}`, "prompt has 8193 bytes"},
		{"/api/generate", `{"model":"tiny","stream":false,"prompt":"` + long[:8000] + `","system":"` + long[:200] + `"}`, "prompt has 8200 bytes"},
		{"/v1/completions", `{"model":"tiny","prompt":"` + long + `"}`, "prompt has 8193 bytes"},
		{"/api/v1/inference/complete", `{"model":"tiny","prompt":"` + long + `"}`, "prompt has 8193 bytes"},
		{"/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"hi"},{"role":"user","content":"` + long + `"}]}`, "messages"},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"system","content":"` + long[:5000] + `"},{"role":"user","content":"` + long[:5000] + `"}]}`, "messages"},
		{"/v1/embeddings", `{"model":"tiny","input":["hi","` + long + `"]}`, "input[1] has 8193 bytes"},
		{"/api/embed", `{"model":"tiny","truncate":false,"input":"` + long + `"}`, "input[0] has 8193 bytes"},
		{"/api/embeddings", `{"model":"tiny","prompt":"` + long + `"}`, "input[0] has 8193 bytes"},
	} {
		r := do(t, ts, "POST", c.path, c.body)
		wantRefusal(t, r, c.field, "8192")
	}
	if n := len(b.last().reqs); n != 0 {
		t.Errorf("the model generated for %d refused requests", n)
	}
	// At the bound: served; an old turn past it is dropped, not refused.
	wantStatus(t, do(t, ts, "POST", "/api/generate", `{"model":"tiny","stream":false,"prompt":"`+long[:8192]+`"}`), 200)
	// truncate on (Ollama's default): the input is cut to twice the bound.
	r := do(t, ts, "POST", "/api/embed", `{"model":"tiny","input":"`+strings.Repeat("é", 20000)+`"}`)
	wantStatus(t, r, 200)
	var e struct{ Embeddings [][]float64 }
	json.Unmarshal(r.body, &e)
	if len(e.Embeddings) != 1 || math.Round(e.Embeddings[0][0]/e.Embeddings[0][1]) != 16384 {
		t.Errorf("truncated input: %s", r.body)
	}
}

// Over the runtime: a 7.6 MB prompt is refused without being tokenized
// (the issue: 8-12 s and RSS 27 MiB -> 1.17 GB). Allocation is measured
// in-process: reading and decoding the body costs a few copies of it,
// tokenizing it cost over a gigabyte.
func TestHugePromptRefusedCheaply(t *testing.T) {
	dir := realModelsDir(t)
	_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{})
	big := strings.Repeat("Once upon a time ", 7_600_000/17)
	for _, c := range []struct{ path, body string }{
		{"/api/generate", `{"model":"` + realModel + `","stream":false,"prompt":"` + big + `"}`},
		{"/api/chat", `{"model":"` + realModel + `","stream":false,"messages":[{"role":"user","content":"` + big + `"}]}`},
		{"/v1/embeddings", `{"model":"` + realModel + `","input":"` + big + `"}`},
		{"/api/embed", `{"model":"` + realModel + `","input":"` + big + `","truncate":false}`},
	} {
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		start := time.Now()
		r := do(t, ts, "POST", c.path, c.body)
		d := time.Since(start)
		goruntime.ReadMemStats(&after)
		wantRefusal(t, r, "bytes")
		if alloc := (after.TotalAlloc - before.TotalAlloc) >> 20; alloc > 200 || d > 5*time.Second {
			t.Errorf("%s: refused after %v and %d MiB allocated", c.path, d, alloc)
		}
	}
}

// A long history is trimmed in time linear in it (the issue: 2,000
// messages took 58-69 s of re-rendering and re-tokenizing).
func TestLongChatTrimmedFast(t *testing.T) {
	dir := realModelsDir(t)
	_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{})
	var msgs []map[string]string
	for i := 0; i < 2000; i++ {
		msgs = append(msgs, map[string]string{"role": []string{"user", "assistant"}[i%2], "content": "the cat sat on the mat and then it ran"})
	}
	body, _ := json.Marshal(map[string]any{"model": realModel, "messages": msgs, "stream": false, "options": map[string]any{"num_predict": 2}})
	start := time.Now()
	r := do(t, ts, "POST", "/api/chat", string(body))
	wantStatus(t, r, 200)
	var res struct {
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	json.Unmarshal(r.body, &res)
	if d := time.Since(start); d > 3*time.Second || res.PromptEvalCount >= 128 || res.PromptEvalCount < 64 {
		t.Errorf("2000 messages: %v, %d prompt tokens (context 128)", d, res.PromptEvalCount)
	}
}

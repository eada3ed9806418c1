package server

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
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
	b := newFakeBackend()
	_, ts := newTestServer(t, Config{}, b)
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
		s, err := New(Config{ModelsDir: dir, Threads: 1}, RuntimeBackend{ContextLength: c.cap})
		if err != nil {
			t.Fatal(err)
		}
		ts := newHTTPTestServer(t, s)
		for _, path := range []string{"/api/generate", "/api/chat", "/api/embed"} {
			body := `{"model":"` + realModel + `","prompt":"Once","input":"Once","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_ctx":` + itoa(c.numCtx) + `,"num_predict":2}}`
			wantRefusal(t, do(t, ts, "POST", path, body), "num_ctx", c.limit)
		}
		ok := `{"model":"` + realModel + `","prompt":"Once","stream":false,"options":{"num_ctx":` + c.limit + `,"num_predict":2}}`
		wantStatus(t, do(t, ts, "POST", "/api/generate", ok), 200)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// newHTTPTestServer serves s over httptest, closed after the test.
func newHTTPTestServer(t *testing.T, s *Server) *httptest.Server {
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return ts
}

package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzRoutes are the POST routes whose bodies the server decodes.
var fuzzRoutes = []string{"/api/generate", "/api/chat", "/api/show", "/v1/chat/completions", "/v1/completions",
	"/api/v1/inference/complete", "/api/v1/inference/chat", "/api/v1/models/tiny/load",
	"/api/embed", "/api/embeddings", "/v1/embeddings",
	"/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/rerank", "/completion", "/tokenize", "/detokenize"}

// FuzzServerRequests sends any body to every route that decodes one,
// through the real handlers (over the fake backend, so it is fast). The
// server must not panic, must answer within the request timeout, and every
// error must be JSON in its route family's shape:
//
//	go test ./server -run '^$' -fuzz FuzzServerRequests -fuzztime 60s
func FuzzServerRequests(f *testing.F) {
	for _, b := range []string{
		`{"model":"tiny","prompt":"hi","stream":false}`,
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stream":true,"options":{"num_predict":3}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"logprobs":true,"top_logprobs":2}`,
		`{"model":"tiny","prompt":["a"],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"tiny","prompt":"x","options":{"temperature":-1}}`,
		`{"model":"tiny","think":"high","keep_alive":"5m","format":"json"}`,
		`{"name":"tiny"}`, `[]`, `null`, `{`, ``, `{"model":1}`,
		// issue 25: sizes that once crashed or stalled the server
		`{"model":"tiny","prompt":"hi","input":"hi","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":2147483647}}`,
		`{"model":"tiny","prompt":"hi","options":{"num_ctx":-1,"num_thread":100000,"top_k":1099511627776}}`,
		`{"model":"tiny","messages":[{"role":"root","content":"x"}],"stop":["a","b"],"format":{"enum":[1,2,3]}}`,
		`{"model":"tiny","messages":[` + strings.Repeat(`{"role":"user","content":"a b c"},`, 300) + `{"role":"user","content":"hi"}]}`,
		`{"model":"tiny","prompt":"` + strings.Repeat("x", 9000) + `","input":["` + strings.Repeat("y", 9000) + `"],"truncate":false}`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), b)
		}
	}
	dir := f.TempDir()
	for name, data := range map[string]string{"tiny.gguf": "GGUF tiny", "broken.gguf": "broken"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	s, err := New(Config{ModelsDir: dir, Timeout: 500 * time.Millisecond, MaxBodyBytes: 1 << 16}, newFakeBackend())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req) // a panic here fails the fuzz run
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s %q took %v", path, body, d)
		}
		out := rec.Body.Bytes()
		if rec.Code == http.StatusInternalServerError && bytes.Contains(out, []byte("internal error: ")) {
			t.Fatalf("%s %q: a handler panicked (recovered as a 500): %s", path, body, out)
		}
		if rec.Code >= 400 {
			var e map[string]any
			if err := json.Unmarshal(out, &e); err != nil {
				t.Fatalf("%s %q: %d with a body that is not JSON: %q", path, body, rec.Code, out)
			}
			if strings.HasPrefix(path, "/api/v1/") { // Ole: {"success": false, "message": ...}
				if _, ok := e["message"].(string); !ok && e["error"] == nil {
					t.Fatalf("%s: Ole error shape expected, got %q", path, out)
				}
				return
			}
			if e["error"] == nil {
				t.Fatalf("%s %q: %d without an error field: %q", path, body, rec.Code, out)
			}
			if strings.HasPrefix(path, "/v1/messages") { // Anthropic: {"type": "error", "error": {...}}
				return
			}
			if strings.HasPrefix(path, "/v1/") {
				if m, ok := e["error"].(map[string]any); !ok || m["message"] == nil {
					t.Fatalf("%s: OpenAI error shape expected, got %q", path, out)
				}
			}
			if path == "/api/generate" || path == "/api/chat" || path == "/api/show" {
				if _, ok := e["error"].(string); !ok {
					t.Fatalf("%s: Ollama error shape expected, got %q", path, out)
				}
			}
			return
		}
		// A success is one JSON value, NDJSON lines or SSE frames of JSON.
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimPrefix(sc.Text(), "data: ")
			if line == "" || line == "[DONE]" {
				continue
			}
			if !json.Valid([]byte(line)) {
				t.Fatalf("%s %q: %d with a line that is not JSON: %q", path, body, rec.Code, line)
			}
		}
	})
}

package server

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
)

// Only JSON bodies are taken: a web page can POST text/plain or a form
// cross-site without a CORS preflight (the issue: both were served).
func TestPostBodiesMustBeJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	gen := `{"model":"tiny","prompt":"hi","stream":false}`
	for _, c := range []struct{ path, ct string }{
		{"/api/generate", "text/plain"}, {"/api/chat", "application/x-www-form-urlencoded"},
		{"/v1/chat/completions", "multipart/form-data; boundary=x"}, {"/api/embed", ""}, {"/api/v1/inference/complete", "text/json"},
	} {
		r := do(t, ts, "POST", c.path, gen, "Content-Type", c.ct)
		wantStatus(t, r, 415)
		if !strings.Contains(string(r.body), "application/json") {
			t.Errorf("%s %q: %s", c.path, c.ct, r.body)
		}
	}
	wantStatus(t, do(t, ts, "POST", "/api/generate", gen, "Content-Type", "application/json; charset=utf-8"), 200)
	// A POST without a body needs no type (Ole's load).
	wantStatus(t, do(t, ts, "POST", "/api/v1/models/tiny/load", "", "Content-Type", ""), 200)
}

// Bound to loopback, the server answers only requests for a local host
// name (the issue: any Host was accepted, so DNS rebinding read answers).
func TestLocalOnlyHost(t *testing.T) {
	_, ts := newTestServer(t, Config{LocalOnly: true, AllowedHosts: []string{"box.lan"}}, newFakeBackend())
	for _, h := range []string{"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1"} {
		r := do(t, ts, "GET", "/api/tags", "", "Host", h)
		wantStatus(t, r, 403)
		if !strings.Contains(string(r.body), `"error":"host \"`+h) {
			t.Errorf("host %s: %s", h, r.body)
		}
	}
	r := do(t, ts, "GET", "/v1/models", "", "Host", "evil.example")
	wantStatus(t, r, 403)
	if !strings.Contains(string(r.body), `"type":"invalid_request_error"`) {
		t.Errorf("OpenAI shape: %s", r.body)
	}
	long := strings.Repeat("x", 5000) + ".example"
	if r := do(t, ts, "GET", "/api/tags", "", "Host", long); r.status != 403 || len(r.body) > 400 {
		t.Errorf("long host: %d, %d bytes", r.status, len(r.body))
	}
	for _, h := range []string{"localhost", "LOCALHOST:8080", "127.0.0.1:1", "127.9.9.9", "[::1]:8080", "app.localhost", "box.lan:80", "localhost."} {
		wantStatus(t, do(t, ts, "GET", "/api/tags", "", "Host", h), 200)
	}
	// Not bound to loopback: any host (an API key is the guard there).
	_, open := newTestServer(t, Config{}, newFakeBackend())
	wantStatus(t, do(t, open, "GET", "/api/tags", "", "Host", "evil.example"), 200)
}

// Errors name no absolute path and quote no file bytes; names sent back
// are cut (the issue: 500s carried the models directory and the first
// bytes of a non-GGUF file; a 4 MiB name came back whole).
func TestErrorsScrubbed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.gguf"), []byte("SECRETDATA and more of it"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ts := newHTTPTestServer(t, Config{ModelsDir: dir, MaxBodyBytes: 16 << 20}, RuntimeBackend{})
	for _, c := range []struct{ path, body string }{
		{"/api/generate", `{"model":"bad","prompt":"hi"}`},
		{"/api/show", `{"model":"bad"}`},
		{"/v1/chat/completions", `{"model":"bad","messages":[{"role":"user","content":"hi"}]}`},
	} {
		r := do(t, ts, "POST", c.path, c.body)
		if r.status < 400 || strings.Contains(string(r.body), dir) || strings.Contains(string(r.body), "SECR") {
			t.Errorf("%s: %d %s", c.path, r.status, r.body)
		}
		if !strings.Contains(string(r.body), "bad") {
			t.Errorf("%s: the error does not name the model: %s", c.path, r.body)
		}
	}
	name := strings.Repeat("n", 4<<20)
	r := do(t, ts, "POST", "/api/generate", `{"model":"`+name+`","prompt":"hi"}`)
	if r.status != 404 || len(r.body) > 300 || !strings.Contains(string(r.body), "4194304 bytes") {
		t.Errorf("4 MiB name: %d, %d bytes: %.300s", r.status, len(r.body), r.body)
	}
	r = do(t, ts, "POST", "/api/generate", `{"model":"../`+name+`","prompt":"hi"}`)
	if r.status != 400 || len(r.body) > 300 {
		t.Errorf("4 MiB path: %d, %d bytes", r.status, len(r.body))
	}
}

// The sizes of the point 6 are refused with the field and limit.
func TestRequestBounds(t *testing.T) {
	_, ts := newTestServer(t, Config{MaxBodyBytes: 16 << 20}, newFakeBackend())
	msg := func(role string) string { return `{"role":"` + role + `","content":"hi"}` }
	many := strings.Repeat(msg("user")+",", 10_000) + msg("user")
	bigEnum := `{"type":"string","enum":[` + strings.Repeat(`"v",`, 100_000) + `"v"]}`
	cores := strconv.Itoa(goruntime.NumCPU())
	for _, c := range []struct {
		path, body string
		words      []string
	}{
		{"/api/generate", `{"model":"tiny","prompt":"hi","options":{"num_thread":100000}}`, []string{"num_thread 100000", cores + " cores"}},
		{"/api/embed", `{"model":"tiny","input":"hi","options":{"num_thread":100000}}`, []string{"num_thread 100000", cores + " cores"}},
		{"/api/generate", `{"model":"tiny","options":{"num_thread":100000}}`, []string{"num_thread"}}, // load only
		{"/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"options":{"top_k":1099511627776}}`, []string{"top_k 1099511627776", "1000 tokens"}},
		{"/v1/chat/completions", `{"model":"tiny","messages":[` + msg("user") + `],"top_k":1001}`, []string{"top_k 1001", "1000"}},
		{"/api/generate", `{"model":"tiny","prompt":"hi","options":{"stop":["` + strings.Repeat("s", 4<<20) + `"]}}`, []string{"stop[0] has 4194304 bytes", "1024"}},
		{"/api/generate", `{"model":"tiny","prompt":"hi","options":{"stop":[` + strings.Repeat(`"a",`, 16) + `"b"]}}`, []string{"stop: 17", "16"}},
		{"/api/chat", `{"model":"tiny","messages":[` + msg("root") + `]}`, []string{`messages[0].role \"root\"`}},
		{"/v1/chat/completions", `{"model":"tiny","messages":[` + msg("user") + `,` + msg("sudo") + `]}`, []string{`messages[1].role \"sudo\"`}},
		{"/api/v1/inference/chat", `{"model":"tiny","messages":[` + msg("root") + `]}`, []string{"role"}},
		{"/api/chat", `{"model":"tiny","messages":[` + many + `]}`, []string{"10001 messages", "10000"}},
		{"/api/generate", `{"model":"tiny","prompt":"hi","format":` + bigEnum + `}`, []string{"format", "65536"}},
		{"/api/generate", `{"model":"tiny","prompt":"hi","format":{"type":"string","enum":[` + strings.Repeat(`"v",`, 2000) + `"v"]}}`, []string{"enum has 2001 values", "1024"}},
		{"/v1/chat/completions", `{"model":"tiny","messages":[` + msg("user") + `],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"enum":[` + strings.Repeat(`1,`, 1100) + `1]}}}}}}`, []string{"enum has 1101 values"}},
	} {
		r := do(t, ts, "POST", c.path, c.body)
		wantRefusal(t, r, c.words...)
	}
	// At the bounds: served.
	for _, body := range []string{
		`{"model":"tiny","prompt":"hi","stream":false,"options":{"num_thread":` + cores + `,"top_k":1000,"stop":["` + strings.Repeat("s", 1024) + `"]}}`,
		`{"model":"tiny","prompt":"hi","stream":false,"format":{"type":"string","enum":[` + strings.Repeat(`"v",`, 1023) + `"v"]}}`,
	} {
		wantStatus(t, do(t, ts, "POST", "/api/generate", body), 200)
	}
	wantStatus(t, do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"messages":[`+msg("system")+`,`+msg("user")+`,`+msg("assistant")+`,`+msg("tool")+`,`+msg("user")+`]}`), 200)
}

// /metrics is open by default, even with an API key (contracts.md);
// --metrics-key protects it.
func TestMetricsKey(t *testing.T) {
	_, open := newTestServer(t, Config{APIKey: "k1"}, newFakeBackend())
	wantStatus(t, do(t, open, "GET", "/metrics", ""), 200)
	_, ts := newTestServer(t, Config{APIKey: "k1", MetricsKey: "m1"}, newFakeBackend())
	wantStatus(t, do(t, ts, "GET", "/metrics", ""), 401)
	wantStatus(t, do(t, ts, "GET", "/metrics", "", "Authorization", "Bearer k1"), 401)
	wantStatus(t, do(t, ts, "GET", "/metrics", "", "Authorization", "Bearer m1"), 200)
	wantStatus(t, do(t, ts, "GET", "/metrics", "", "X-Api-Key", "m1"), 200)
}

package server

import (
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

package server

import (
	"strings"
	"testing"
)

// TestWebPage: GET / from a browser is the chat page, with its own script
// and style, open even when an API key guards the API; other clients
// still get the one line; every other route answers as before.
func TestWebPage(t *testing.T) {
	_, ts := newTestServer(t, Config{APIKey: "k"}, newFakeBackend())
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

	r := do(t, ts, "GET", "/", "", "Accept", browser)
	wantStatus(t, r, 200)
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("GET / Content-Type %q", ct)
	}
	page := string(r.body)
	for _, want := range []string{"<!doctype html>", `<select id="model">`, `src="/web/app.js"`, `href="/web/style.css"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page refers to another site")
	}
	head := do(t, ts, "HEAD", "/", "", "Accept", browser)
	wantStatus(t, head, 200)
	if head.header.Get("Content-Type") != "text/html; charset=utf-8" || len(head.body) != 0 {
		t.Errorf("HEAD / %v %q", head.header, head.body)
	}

	for path, want := range map[string]string{
		"/web/app.js":    "text/javascript; charset=utf-8",
		"/web/style.css": "text/css; charset=utf-8",
	} {
		r := do(t, ts, "GET", path, "")
		wantStatus(t, r, 200)
		if ct := r.header.Get("Content-Type"); ct != want {
			t.Errorf("%s Content-Type %q, want %q", path, ct, want)
		}
		if len(r.body) < 500 {
			t.Errorf("%s is %d bytes", path, len(r.body))
		}
		if strings.Contains(string(r.body), "https://") {
			t.Errorf("%s refers to another site", path)
		}
	}
	if js := do(t, ts, "GET", "/web/app.js", ""); !strings.Contains(string(js.body), "/v1/chat/completions") ||
		!strings.Contains(string(js.body), "/api/tags") || !strings.Contains(string(js.body), "'Content-Type': 'application/json'") {
		t.Error("app.js does not call the chat API as the server requires")
	}

	// Not a browser: the line clients check, as before.
	r = do(t, ts, "GET", "/", "", "Accept", "*/*")
	wantStatus(t, r, 401) // the line wants the key, as before the page
	r = do(t, ts, "GET", "/", "", "Accept", "*/*", "Authorization", "Bearer k")
	wantStatus(t, r, 200)
	if string(r.body) != "Woolly is running" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET / for */*: %q %q", r.header.Get("Content-Type"), r.body)
	}

	// Other routes: unaffected (404 JSON, the key still asked for).
	for _, path := range []string{"/web/", "/web/nope.js", "/index.html", "/web/app.js/x", "/nope"} {
		r := do(t, ts, "GET", path, "", "Accept", browser, "Authorization", "Bearer k")
		wantStatus(t, r, 404)
		if r.json(t)["error"] == nil {
			t.Errorf("GET %s: %s", path, r.body)
		}
	}
	wantStatus(t, do(t, ts, "GET", "/api/tags", "", "Accept", browser), 401)
	wantStatus(t, do(t, ts, "GET", "/api/tags", "", "Authorization", "Bearer k"), 200)
	wantStatus(t, do(t, ts, "POST", "/", "{}", "Authorization", "Bearer k"), 405)
	wantStatus(t, do(t, ts, "POST", "/web/app.js", "{}", "Authorization", "Bearer k"), 405)
}

package server

import (
	"embed"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// The chat page (docs/web.md): one HTML file, its script and its style,
// built into the binary. No build step and nothing fetched from elsewhere.
//
//go:embed web/index.html web/app.js web/style.css
var webFiles embed.FS

// webAssets are the page's own paths besides "/" and their files.
var webAssets = map[string]string{
	"/web/app.js":    "web/app.js",
	"/web/style.css": "web/style.css",
}

// webPolicy lets the page load only its own script, style and API: no
// inline script, no framing by other sites (data: for the empty favicon,
// which keeps browsers from asking for /favicon.ico).
const webPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// root answers GET / with the chat page for browsers (an Accept naming
// text/html), and with one line of text for other clients, which check
// that the server is up (Ollama's clients and scripts do). The page is
// open (it holds no secret and asks for the API key itself); the line
// still wants the key, as before the page.
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	if !wantsHTML(r) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			s.fail(w, r, famOllama, http.StatusUnauthorized, "missing or invalid API key")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		io.WriteString(w, "Woolly is running")
		return
	}
	s.webFile(w, r, "web/index.html")
}

// webAsset serves one of webAssets.
func (s *Server) webAsset(w http.ResponseWriter, r *http.Request) {
	s.webFile(w, r, webAssets[r.URL.Path])
}

func (s *Server) webFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := webFiles.ReadFile(name)
	if err != nil { // not reached: the names are fixed and embedded
		s.fail(w, r, famOllama, http.StatusInternalServerError, "page file "+name+" missing from the build")
		return
	}
	ct := mime.TypeByExtension(name[strings.LastIndexByte(name, '.'):])
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", webPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache") // the page changes with the binary
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// wantsHTML tells whether the request's Accept names text/html (browsers
// navigating to a page do; curl and API clients do not).
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "text/html" || mt == "application/xhtml+xml") && params["q"] != "0" {
			return true
		}
	}
	return false
}

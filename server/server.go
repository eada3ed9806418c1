// Package server is Woolly's HTTP API: the Ollama API, the OpenAI API
// (Chat Completions, Completions, Responses), the Anthropic Messages API,
// the routes of the Ole desktop client, and Prometheus metrics, over models
// loaded on demand from one directory.
//
// Routes (one file per family):
//
//	ollama.go  GET|HEAD /  POST /api/generate /api/chat /api/show  GET /api/tags /api/ps /api/version
//	openai.go  POST /v1/chat/completions /v1/completions  GET /v1/models[/{model}]
//	responses.go  POST /v1/responses
//	anthropic.go  POST /v1/messages /v1/messages/count_tokens
//	embed.go   POST /api/embed /api/embeddings /v1/embeddings
//	ole.go     GET /api/v1/health /api/v1/models  POST /api/v1/models/{name}/load
//	           POST /api/v1/inference/complete /api/v1/inference/chat
//	metrics.go GET /metrics
//
// A model is named by its file: NAME (or NAME:latest) is DIR/NAME.gguf;
// paths are refused. models.go loads models on demand, runs up to
// Config.Parallel generations at a time per model (the runtime batches
// them: one forward pass per step for all), queues more behind a bounded
// queue (503 when full) and unloads a model after its keep-alive. With an
// API key set, every route but /metrics and /api/v1/health needs it (Bearer
// or x-api-key); /metrics needs Config.MetricsKey when that is set. Errors
// are JSON in each family's shape with their status: 400 (malformed JSON,
// bad options, a size past its limit: docs/server-limits.md), 401, 403 (a
// Host other than localhost when Config.LocalOnly), 404 (unknown model or
// route), 405, 408 (body not received within Config.BodyTimeout), 413 (body
// too large), 415 (a POST body that is not application/json), 503 (queue
// full, timeout, shutting down), 500 (a model that fails to load).
//
// The server reaches models through the Backend and Model interfaces;
// RuntimeBackend (runtime.go) is the real one.
package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// Version is Woolly's own version, reported by /api/v1/health and
// `woolly version`.
const Version = "0.1.0"

// OllamaAPIVersion is the Ollama release whose API /api/version says Woolly
// implements: clients read it to decide which features to use (and some
// refuse a server below their minimum, such as 0.6.4; Codex's --oss mode
// speaks /v1/responses to 0.13.4 or later and falls back to chat
// completions below). 0.14.0 is the first Ollama release that serves the
// Anthropic Messages API (/v1/messages), the newest of the routes Woolly
// answers.
const OllamaAPIVersion = "0.14.0"

// The defaults of the settings whose unset state is not their zero value.
const (
	DefaultMaxQueue  = 64
	DefaultKeepAlive = 5 * time.Minute
	DefaultParallel  = 4
	// DefaultBodyTimeout bounds the time a client may take to send a
	// request body (a stalled Content-Length or a chunked body that never
	// ends): past it the request gets 408 and its connection is closed.
	DefaultBodyTimeout = 60 * time.Second
)

// Config holds the server's settings. Zero values get the defaults noted;
// pointers are nil when unset (0 is then a value of its own).
type Config struct {
	ModelsDir    string         // directory of *.gguf files (required)
	APIKey       string         // when set, required on every route but /metrics and /api/v1/health
	MetricsKey   string         // when set, required on /metrics (open by default, even with APIKey)
	CORSOrigins  []string       // allowed browser origins ("*" allows any); none by default
	MaxQueue     *int           // requests allowed to wait for a model; nil: DefaultMaxQueue; 0: none may wait
	Parallel     *int           // requests one model generates at once (batched); nil or 0: from KVBudget (autoSlots)
	KVBudget     int64          // bytes the KV caches of one model's slots may take when Parallel is unset; 0: DefaultKVBudget()
	Timeout      time.Duration  // per-request limit, queueing included; 0: none
	KeepAlive    *time.Duration // idle time before a model is unloaded; nil: DefaultKeepAlive; 0: as soon as idle; < 0: never
	Threads      int            // threads per model; 0: the runtime's default
	MaxBodyBytes int64          // request body limit; 0: 8 MiB
	BodyTimeout  time.Duration  // time to receive a request body; 0: DefaultBodyTimeout
	// LocalOnly (set when the server is bound to a loopback address)
	// refuses with 403 requests whose Host is not a loopback address,
	// localhost (or a name under .localhost) or one of AllowedHosts: a web
	// page that rebinds its own domain name to 127.0.0.1 cannot read
	// the answers.
	LocalOnly    bool
	AllowedHosts []string    // host names (without port) also allowed when LocalOnly; "*" allows any
	Logger       *log.Logger // nil: discard
	// ChatTemplate, when set, replaces every model's chat template: a
	// built-in format's name (chat.BuiltinNames) or a Jinja template's
	// text (llama-server's --chat-template / --chat-template-file).
	ChatTemplate string
}

// Server answers the HTTP API. Create it with New; call Close after the
// HTTP server has shut down to unload the models.
type Server struct {
	cfg     Config
	log     *log.Logger
	models  *registry
	metrics *metrics
	mux     *http.ServeMux
	active  sync.WaitGroup // handlers running

	releasePending atomic.Bool // a releaseAfter is scheduled
}

// New checks cfg and makes a server over backend.
func New(cfg Config, backend Backend) (*Server, error) {
	if cfg.ModelsDir == "" {
		return nil, errors.New("server: no models directory")
	}
	if backend == nil {
		return nil, errors.New("server: no backend")
	}
	if cfg.MaxQueue == nil {
		cfg.MaxQueue = runtime.Ptr(DefaultMaxQueue)
	} else if *cfg.MaxQueue < 0 {
		return nil, fmt.Errorf("server: max queue %d is negative", *cfg.MaxQueue)
	}
	if cfg.KeepAlive == nil {
		cfg.KeepAlive = runtime.Ptr(DefaultKeepAlive)
	}
	if cfg.Parallel == nil {
		cfg.Parallel = runtime.Ptr(0)
	} else if *cfg.Parallel < 0 {
		return nil, fmt.Errorf("server: parallel %d: want 0 (automatic) or more", *cfg.Parallel)
	}
	switch {
	case cfg.KVBudget == 0:
		cfg.KVBudget = DefaultKVBudget()
	case cfg.KVBudget < 0:
		return nil, fmt.Errorf("server: KV budget %d is negative", cfg.KVBudget)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	switch {
	case cfg.BodyTimeout == 0:
		cfg.BodyTimeout = DefaultBodyTimeout
	case cfg.BodyTimeout < 0:
		return nil, fmt.Errorf("server: body timeout %v is negative", cfg.BodyTimeout)
	}
	if err := checkChatTemplate(cfg.ChatTemplate); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = log.New(io.Discard, "", 0)
	}
	s.metrics = newMetrics()
	reg, err := newRegistry(cfg, backend, s.metrics, s.log)
	if err != nil {
		return nil, err
	}
	s.models = reg
	s.metrics.load.mu.Lock()
	s.metrics.load.state = reg.state
	s.metrics.load.mu.Unlock()
	s.routes()
	return s, nil
}

// Close waits for the handlers still running (cancel their requests first:
// see http.Server.BaseContext) and unloads every model.
func (s *Server) Close() error {
	s.active.Wait()
	return s.models.close()
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.checkHost(s.cors(s.mux)) }

// checkHost refuses requests for other hosts when LocalOnly (see Config).
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.LocalOnly && !s.localHost(r.Host) {
			s.fail(w, r, familyOf(r.URL.Path), http.StatusForbidden, fmt.Sprintf(
				"host %s is not allowed: this server listens on a loopback address and answers only localhost, loopback addresses and --allowed-hosts", quoteShort(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) localHost(hostport string) bool {
	if hostport == "" { // HTTP/1.0 without Host: no browser sends that
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// familyOf is the API family of a path, for errors answered before routing.
func familyOf(path string) family {
	switch {
	case strings.HasPrefix(path, "/v1/"):
		return famOpenAI
	case strings.HasPrefix(path, "/api/v1/"):
		return famOle
	}
	return famOllama
}

// quoteShort quotes s for an error message, cut to 64 bytes (a name or
// header sent back whole could be megabytes).
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}

// API families differ in their error bodies.
type family int

const (
	famOllama family = iota
	famOpenAI
	famOle
	famAnthropic
)

func (s *Server) routes() {
	// The chat page and its files are open: the page holds no secret and
	// asks for the API key itself (root checks the key for non-browsers).
	s.handle(famOllama, "/{$}", true, s.root, "GET", "HEAD")
	for path := range webAssets {
		s.handle(famOllama, path, true, s.webAsset, "GET", "HEAD")
	}
	s.handle(famOllama, "/api/generate", false, func(w http.ResponseWriter, r *http.Request) { s.ollama(w, r, false) }, "POST")
	s.handle(famOllama, "/api/chat", false, func(w http.ResponseWriter, r *http.Request) { s.ollama(w, r, true) }, "POST")
	s.handle(famOllama, "/api/tags", false, s.ollamaTags, "GET", "HEAD")
	s.handle(famOllama, "/api/show", false, s.ollamaShow, "POST")
	s.handle(famOllama, "/api/ps", false, s.ollamaPS, "GET", "HEAD")
	s.handle(famOllama, "/api/version", false, s.ollamaVersion, "GET", "HEAD")
	s.handle(famOllama, "/api/embed", false, s.ollamaEmbed, "POST")
	s.handle(famOllama, "/api/embeddings", false, s.ollamaEmbeddings, "POST")
	for path, methods := range ollamaManagement {
		msg := ollamaUnsupportedMsg[path]
		s.handle(famOllama, path, false, func(w http.ResponseWriter, r *http.Request) {
			s.fail(w, r, famOllama, http.StatusNotImplemented, msg)
		}, methods...)
	}

	s.handle(famOpenAI, "/v1/chat/completions", false, func(w http.ResponseWriter, r *http.Request) { s.openai(w, r, true) }, "POST")
	s.handle(famOpenAI, "/v1/completions", false, func(w http.ResponseWriter, r *http.Request) { s.openai(w, r, false) }, "POST")
	s.handle(famOpenAI, "/v1/embeddings", false, s.openaiEmbeddings, "POST")
	for _, p := range []string{"/v1/rerank", "/v1/reranking", "/rerank", "/reranking"} { // rerank.go
		s.handle(famOpenAI, p, false, s.openaiRerank, "POST")
	}
	s.handle(famOpenAI, "/v1/models", false, s.openaiModels, "GET", "HEAD")
	s.handle(famOpenAI, "/v1/models/{model}", false, s.openaiModel, "GET", "HEAD")
	s.handle(famOpenAI, "/v1/responses", false, s.responses, "POST")
	s.handle(famAnthropic, "/v1/messages", false, s.anthropicMessages, "POST")
	s.handle(famAnthropic, "/v1/messages/count_tokens", false, s.anthropicCountTokens, "POST")
	s.handle(famOpenAI, "/v1/", false, func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, famOpenAI, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	}, "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

	s.handle(famOle, "/api/v1/health", true, s.oleHealth, "GET", "HEAD")
	s.handle(famOllama, "/livez", true, s.livez, "GET", "HEAD")
	s.handle(famOllama, "/readyz", true, s.readyz, "GET", "HEAD")
	s.handle(famOle, "/api/v1/models", false, s.oleModels, "GET", "HEAD")
	s.handle(famOle, "/api/v1/models/{name}/load", false, s.oleLoad, "POST")
	s.handle(famOle, "/api/v1/inference/complete", false, s.oleComplete, "POST")
	s.handle(famOle, "/api/v1/inference/chat", false, s.oleChat, "POST")

	s.llamaServerRoutes()

	s.handle(famOllama, "/metrics", true, func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.MetricsKey != "" && !keyMatches(r, s.cfg.MetricsKey) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			s.fail(w, r, famOllama, http.StatusUnauthorized, "missing or invalid metrics key")
			return
		}
		s.metrics.serve(w, r)
	}, "GET", "HEAD")
	s.handle(famOllama, "/", false, func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, famOllama, http.StatusNotFound, "no route for "+r.URL.Path)
	}, "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
}

// handle registers h for pattern with: request counting, the API-key check
// (unless open), the method check (405), and the body size limit.
func (s *Server) handle(fam family, pattern string, open bool, h http.HandlerFunc, methods ...string) {
	route := pattern
	if route == "/{$}" {
		route = "/"
	} else if route == "/" {
		route = "other"
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.active.Add(1)
		defer s.active.Done()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer func() { s.metrics.request(route, rec.status, time.Since(start)) }()
		defer s.recoverRequest(rec, r, fam)
		if !open && !s.authorized(r) {
			rec.Header().Set("WWW-Authenticate", "Bearer")
			s.fail(rec, r, fam, http.StatusUnauthorized, "missing or invalid API key")
			return
		}
		allowed := false
		for _, m := range methods {
			allowed = allowed || r.Method == m
		}
		if !allowed {
			rec.Header().Set("Allow", strings.Join(methods, ", "))
			s.fail(rec, r, fam, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
			return
		}
		if r.Method == http.MethodPost && !jsonBody(r) {
			// Browsers send text/plain and form bodies cross-site without
			// asking (no CORS preflight): only JSON is taken.
			s.fail(rec, r, fam, http.StatusUnsupportedMediaType, fmt.Sprintf(
				"Content-Type %s: request bodies must be application/json", quoteShort(r.Header.Get("Content-Type"))))
			return
		}
		if !s.readBody(rec, r, fam) {
			return
		}
		h(rec, r)
	})
}

// recoverRequest turns a panic in a request's handler (a bug in Woolly or a
// backend: the runtime raises a kernel's misuse or a worker's panic on the
// request's goroutine) into a 500 answer and a log line with the stack, and
// the server serves on. A response already begun (a stream) cannot change
// its status: it ends where it is. http.ErrAbortHandler passes through.
func (s *Server) recoverRequest(w *statusRecorder, r *http.Request, fam family) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.Printf("%s %s: panic: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
	if w.wrote {
		w.status = http.StatusInternalServerError // for the metrics
		return
	}
	msg, _, _ := strings.Cut(fmt.Sprint(v), "\n") // the value, not the stack
	writeJSON(w, http.StatusInternalServerError, errorBody(fam, http.StatusInternalServerError, s.models.scrub("internal error: "+msg)))
}

// readBody reads the whole request body, at most MaxBodyBytes of it within
// BodyTimeout: a per-request read deadline (not http.Server.ReadTimeout,
// which would stay on the connection), lifted once the body is in so that
// a long streamed answer is not cut. The handler reads the body from
// memory. On a failure it has answered and returns false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, fam family) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) // not supported by test recorders: then no deadline
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	var b []byte
	var err error
	if n := r.ContentLength; n > 0 && n <= s.cfg.MaxBodyBytes {
		b = make([]byte, n) // one buffer of the declared size, not ReadAll's doublings
		_, err = io.ReadFull(body, b)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the body ended before its Content-Length: %w", err)
		}
	} else {
		b, err = io.ReadAll(body)
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil:
		// Lifted only now: after a timeout it stays passed, so that
		// net/http does not wait on the rest of the body before closing.
		rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(b))
		if len(b) >= bigBody {
			s.releaseAfter(r)
		}
		return true
	case errors.As(err, &mbe):
		s.fail(w, r, fam, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		s.fail(w, r, fam, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", s.cfg.BodyTimeout))
	default:
		s.fail(w, r, fam, http.StatusBadRequest, fmt.Sprintf("reading request body: %v", err))
	}
	return false
}

// bigBody is the body size from which a request's memory is handed back
// to the system when it ends (see releaseAfter).
const bigBody = 1 << 20

// releaseAfter returns the memory a large request used (its body and the
// copies decoding makes: tens of MB for a body of a few) to the system
// shortly after the request ends, rather than whenever the Go runtime's
// scavenger gets to it, so that the server's resident size goes back to
// its baseline. Requests ending close together share one release (at
// most one every releaseDelay).
func (s *Server) releaseAfter(r *http.Request) {
	context.AfterFunc(r.Context(), func() {
		if !s.releasePending.CompareAndSwap(false, true) {
			return // one is on its way, after this request's end
		}
		// The context ends as the handler returns, while net/http still
		// holds the request: wait until it has let go.
		time.AfterFunc(releaseDelay, func() {
			s.releasePending.Store(false)
			debug.FreeOSMemory()
		})
	})
}

// releaseDelay is how long after a large request its memory is released.
const releaseDelay = 250 * time.Millisecond

// jsonBody tells whether a POST's body is declared JSON, or absent
// (Content-Length 0 without a Content-Type: a load with nothing to say).
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func (s *Server) authorized(r *http.Request) bool {
	return s.cfg.APIKey == "" || keyMatches(r, s.cfg.APIKey)
}

// keyMatches tells whether the request carries want as a Bearer token or
// in x-api-key.
func keyMatches(r *http.Request, want string) bool {
	key := r.Header.Get("X-Api-Key")
	if auth := r.Header.Get("Authorization"); key == "" && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		key = strings.TrimSpace(auth[7:])
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(want)) == 1
}

// cors answers preflight requests and marks responses for allowed origins.
// Nothing is added for other origins, so browsers refuse them.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		ok := false
		for _, o := range s.cfg.CORSOrigins {
			ok = ok || (origin != "" && (o == "*" || o == origin))
		}
		if ok {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if ok {
				h := w.Header()
				h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", allowHeaders(r.Header.Get("Access-Control-Request-Headers")))
				h.Add("Vary", "Access-Control-Request-Headers")
				h.Set("Access-Control-Max-Age", "600")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// corsHeaders are the request headers every allowed origin may send.
const corsHeaders = "Authorization, Content-Type, X-Api-Key, X-Ole-Client, Anthropic-Version, Anthropic-Beta"

// allowHeaders is a preflight's Access-Control-Allow-Headers for an allowed
// origin: corsHeaders and the header names it asks for (the official JS
// SDKs send their x-stainless-* headers, Anthropic's its
// anthropic-dangerous-direct-browser-access; the origin is trusted, so its
// headers are too). Names that are not HTTP tokens are left out.
func allowHeaders(asked string) string {
	out := corsHeaders
	for _, name := range strings.Split(asked, ",") {
		name = strings.TrimSpace(name)
		if name != "" && isToken(name) {
			out += ", " + name
		}
	}
	return out
}

// isToken tells whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	for _, c := range []byte(s) {
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// fail writes an error in the family's shape (see errorBody), without the
// models directory's path or bytes of its files (the log has them).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam family, status int, msg string) {
	if status >= 500 {
		s.log.Printf("%s %s: %d %s", r.Method, r.URL.Path, status, msg)
	}
	writeJSON(w, status, errorBody(fam, status, s.models.scrub(msg)))
}

// errorBody is an error in the family's shape: Ollama {"error": msg}, OpenAI
// {"error": {"message", "type", ...}}, Ole {"success": false, "message"},
// Anthropic {"type": "error", "error": {"type", "message"}}.
func errorBody(fam family, status int, msg string) any {
	switch fam {
	case famOpenAI:
		typ := errorType(status, openAIErrorTypes, "server_error")
		return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
	case famAnthropic:
		return anthropicError(status, msg)
	case famOle:
		return map[string]any{"success": false, "message": msg}
	}
	return map[string]any{"error": msg}
}

// openAIErrorTypes are the error types OpenAI's bodies name by status
// (errorType: server_error for another 5xx).
var openAIErrorTypes = map[int]string{
	http.StatusUnauthorized: "authentication_error",
	http.StatusNotFound:     "not_found_error",
}

// errorType is the type an API's error body gives status: the one types
// names, else server for a 5xx status, else invalid_request_error.
func errorType(status int, types map[int]string, server string) string {
	if typ, ok := types[status]; ok {
		return typ
	}
	if status >= 500 {
		return server
	}
	return "invalid_request_error"
}

// failErr maps an error from the registry or decoding to its status; an
// OpenAI error body carries a codedError's code.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, fam family, err error) {
	var ce *codedError
	if fam == famOpenAI && errors.As(err, &ce) {
		b := errorBody(fam, statusOf(err), err.Error()).(map[string]any)
		b["error"].(map[string]any)["code"] = ce.code
		writeJSON(w, statusOf(err), b)
		return
	}
	s.fail(w, r, fam, statusOf(err), err.Error())
}

// codedError is an httpError with the machine-readable code OpenAI's error
// bodies carry (e.g. context_length_exceeded, which clients such as
// agents read to compact a conversation).
type codedError struct {
	*httpError
	code string
}

func (e *codedError) Unwrap() error { return e.httpError }

func statusOf(err error) int {
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return 499 // client closed the request; nobody reads it
	}
	return http.StatusInternalServerError
}

// httpError is an error with its HTTP status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// decode reads a JSON body into v: 413 past the size limit, 400 when malformed.
func decode(r *http.Request, v any, optional bool, rules ...fieldCheck) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit)}
		}
		return badRequest("reading request body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		if optional {
			return nil
		}
		return badRequest("empty request body; expected JSON")
	}
	if err := json.Unmarshal(b, v); err != nil {
		// Not JSON, or a value of the wrong JSON type: malformed. A
		// field's decoder refusing a well-formed value says why alone.
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || strings.HasPrefix(err.Error(), "unexpected end of JSON") {
			return badRequest("malformed JSON: %v", err)
		}
		var he *httpError
		if errors.As(err, &he) {
			return he
		}
		return badRequest("%v", err)
	}
	if len(rules) > 0 {
		return checkFields(b, rules[0].fields, rules[0].strict)
	}
	return nil
}

// jobRequest is a generate or chat body (Ollama's, OpenAI's) that makes
// its job once decoded.
type jobRequest interface {
	job(chatReq bool) (*job, error)
}

// decodeJob decodes the body into a new Q, checks its fields and makes the job.
// On a failure it has answered in fam's shape and returns nil.
func decodeJob[Q any, P interface {
	*Q
	jobRequest
}](s *Server, w http.ResponseWriter, r *http.Request, fam family, chatReq bool, fields fieldCheck) (*Q, *job) {
	q := P(new(Q))
	j := s.jobFrom(w, r, fam, chatReq, fields, q)
	if j == nil {
		return nil, nil
	}
	return q, j
}

// jobFrom decodes the body into q (which may hold preset fields), checks
// its fields and makes the job; on a failure it has answered in fam's
// shape and returns nil.
func (s *Server) jobFrom(w http.ResponseWriter, r *http.Request, fam family, chatReq bool, fields fieldCheck, q jobRequest) *job {
	if err := decode(r, q, false, fields); err != nil {
		s.failErr(w, r, fam, err)
		return nil
	}
	j, err := q.job(chatReq)
	if err != nil {
		s.failErr(w, r, fam, err)
		return nil
	}
	return j
}

// pick is forChat when chatReq, else forGenerate (a route pair's field table).
func pick[T any](chatReq bool, forChat, forGenerate T) T {
	if chatReq {
		return forChat
	}
	return forGenerate
}

// listModels is each model of the directory in a route's shape. On a
// failure it has answered in fam's shape and returns false.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, fam family, each func(listing) any) ([]any, bool) {
	ls, err := s.models.list()
	if err != nil {
		s.failErr(w, r, fam, err)
		return nil, false
	}
	out := []any{}
	for _, l := range ls {
		out = append(out, each(l))
	}
	return out, true
}

// fieldCheck is decode's optional field table (see fields.go).
type fieldCheck struct {
	fields map[string]fieldRule
	strict bool // unknown fields are a 400
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// statusRecorder remembers the status for metrics; Unwrap keeps Flush working.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// stream writes NDJSON lines or SSE frames, flushing each.
// A stream may be written by the generation and by a keep-alive timer at
// once: mu orders the writes; last is when the latest one was.
type stream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	sse  bool
	mu   sync.Mutex
	last time.Time
}

func newStream(w http.ResponseWriter, sse bool) *stream {
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &stream{w: w, rc: http.NewResponseController(w), sse: sse, last: time.Now()}
	st.rc.Flush()
	return st
}

// sseComment is an SSE comment line, which clients skip (a keep-alive).
type sseComment string

// idle is how long ago the stream last wrote.
func (st *stream) idle() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	return time.Since(st.last)
}

// sseEvent is an SSE frame with an event name (Anthropic's streams name
// every frame); a shape may return one or a list of them as a body.
type sseEvent struct {
	name string
	data any
}

func (st *stream) send(v any) error {
	var b []byte
	switch ev := v.(type) {
	case sseEvent:
		return st.send([]sseEvent{ev})
	case sseComment:
		b = []byte(": " + string(ev) + "\n\n")
	case []sseEvent:
		for _, e := range ev {
			d, err := json.Marshal(e.data)
			if err != nil {
				return err
			}
			b = append(append(append(append(append(b, "event: "...), e.name...), "\ndata: "...), d...), '\n', '\n')
		}
	default:
		d, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if st.sse {
			b = append(append([]byte("data: "), d...), '\n', '\n')
		} else {
			b = append(d, '\n')
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = time.Now()
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// done ends an SSE stream the OpenAI way.
func (st *stream) done() {
	st.mu.Lock()
	defer st.mu.Unlock()
	io.WriteString(st.w, "data: [DONE]\n\n")
	st.rc.Flush()
}

// requestContext applies the per-request timeout.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	if s.cfg.Timeout > 0 {
		return context.WithTimeout(r.Context(), s.cfg.Timeout)
	}
	return context.WithCancel(r.Context())
}

// checkChatTemplate refuses a Config.ChatTemplate no request could render
// with, before any model is loaded.
func checkChatTemplate(src string) error {
	if src == "" || slices.Contains(chat.BuiltinNames(), src) {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		return errors.New("server: chat template is blank")
	}
	if !strings.Contains(src, "{") { // a misspelt built-in name, not a template
		return fmt.Errorf("server: chat template %q: not a built-in name (%s) nor a Jinja template", src, strings.Join(chat.BuiltinNames(), ", "))
	}
	if _, err := chat.New(src, "", ""); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

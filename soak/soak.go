// Package soak drives a running Woolly server over its public HTTP API with
// many concurrent clients and faults, and reports what went wrong and what
// it cost (issue 14): Ollama and OpenAI routes, streaming and not, clients
// that disconnect mid-stream, malformed and oversized bodies, and models
// unloaded (keep_alive 0) while traffic runs. It reads the server's own
// figures from /metrics (go_goroutines, process_resident_memory_bytes,
// woolly_generated_tokens_total), so it needs nothing but the URL: run it
// against `woolly serve` with scripts/soak.sh, or in a test against a
// server.Server on a loopback listener.
package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one soak run.
type Config struct {
	URL      string   // the server, e.g. http://127.0.0.1:8080
	Models   []string // the models to spread requests over (two or more)
	Clients  int      // concurrent clients
	Requests int      // requests per client
	// MaxTokens is num_predict / max_tokens of an ordinary request;
	// a disconnecting request asks for DisconnectTokens and leaves after
	// one to three streamed tokens.
	MaxTokens        int
	DisconnectTokens int
	DisconnectRate   float64 // share of requests that disconnect mid-stream
	BadRate          float64 // share of requests with a malformed or oversized body
	// OversizeBytes is the size of an oversized body (the server's limit
	// plus something); one bad request in five is oversized. 0: none.
	OversizeBytes int64
	// UnloadAt lists the points of progress (0..1) at which every model is
	// unloaded with keep_alive 0 while the clients keep going.
	UnloadAt []float64
	// Probes disconnects are made one at a time per model after the load,
	// each measured exactly against woolly_generated_tokens_total.
	Probes int
	Seed   int64
	// Settle bounds the wait for goroutines to return to the baseline.
	Settle time.Duration
	Log    io.Writer // progress lines; nil: none
}

// Snapshot is the server's state read from /metrics.
type Snapshot struct {
	Goroutines int
	RSS        int64   // bytes
	Generated  float64 // woolly_generated_tokens_total over every model
}

// Report is the outcome of a run.
type Report struct {
	Requests    int // sent, unloads excluded
	Completed   int // ordinary requests answered in full
	Disconnects int
	Bad         int // malformed or oversized, answered with the expected 4xx
	Oversized   int
	Unloads     int
	// Unexpected lists what went wrong (the first 20; UnexpectedCount all).
	Unexpected      []string
	UnexpectedCount int
	// Latency of the completed ordinary requests (whole answer).
	P50, P95, Max time.Duration
	// ExcessPerDisconnect is, over the concurrent phase, (tokens the server
	// generated − tokens delivered in full answers − tokens the disconnecting
	// clients read) / disconnects: the mean number of tokens generated that
	// nobody received, an upper bound of the tokens generated after each
	// disconnect (tokens already in the socket when the client left count).
	ExcessPerDisconnect float64
	// ProbeExcess holds, for each sequential probe, tokens generated minus
	// tokens the client read before leaving; ProbeTokens is what it asked for.
	ProbeExcess []int
	ProbeTokens int
	Baseline    Snapshot // the idle server before the soak, no model loaded
	Peak        Snapshot // during the load (sampled; Generated unset)
	After       Snapshot // after the load, every model unloaded, once goroutines and RSS settled
	Duration    time.Duration
}

// MaxProbeExcess is the largest entry of ProbeExcess (-1 without probes).
func (r *Report) MaxProbeExcess() int {
	m := -1
	for _, e := range r.ProbeExcess {
		m = max(m, e)
	}
	return m
}

// String is the report as a few lines.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests %d in %v: %d completed, %d disconnected mid-stream, %d bad (%d oversized) answered 4xx, %d unloads\n",
		r.Requests, r.Duration.Round(time.Millisecond), r.Completed, r.Disconnects, r.Bad, r.Oversized, r.Unloads)
	fmt.Fprintf(&b, "unexpected: %d\n", r.UnexpectedCount)
	for _, u := range r.Unexpected {
		fmt.Fprintf(&b, "  %s\n", u)
	}
	fmt.Fprintf(&b, "latency (completed): p50 %v, p95 %v, max %v\n", r.P50.Round(time.Millisecond), r.P95.Round(time.Millisecond), r.Max.Round(time.Millisecond))
	fmt.Fprintf(&b, "disconnects: %.2f tokens generated and not received per disconnect (concurrent phase)", r.ExcessPerDisconnect)
	if len(r.ProbeExcess) > 0 {
		fmt.Fprintf(&b, "; %d probes asking %d tokens: at most %d generated after the client's last token", len(r.ProbeExcess), r.ProbeTokens, r.MaxProbeExcess())
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "goroutines: baseline %d, peak %d, after %d\n", r.Baseline.Goroutines, r.Peak.Goroutines, r.After.Goroutines)
	fmt.Fprintf(&b, "RSS: baseline %.1f MiB, peak %.1f MiB, after %.1f MiB\n", mib(r.Baseline.RSS), mib(r.Peak.RSS), mib(r.After.RSS))
	return b.String()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// runner holds a run's shared state.
type runner struct {
	cfg    Config
	hc     *http.Client
	mu     sync.Mutex
	rep    Report
	lat    []time.Duration
	tokOK  int64 // tokens in completed answers
	tokCut int64 // tokens read by disconnecting clients
	done   atomic.Int64
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "soak: "+format+"\n", args...)
	}
}

func (r *runner) unexpected(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.UnexpectedCount++
	if len(r.rep.Unexpected) < 20 {
		r.rep.Unexpected = append(r.rep.Unexpected, fmt.Sprintf(format, args...))
	}
}

// Run runs the soak until it is done or ctx ends (which is then an error).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.URL == "" || len(cfg.Models) == 0 || cfg.Clients <= 0 || cfg.Requests <= 0 {
		return nil, errors.New("soak: URL, models, clients and requests are required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 8
	}
	if cfg.DisconnectTokens <= 0 {
		cfg.DisconnectTokens = 64
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 30 * time.Second
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Clients + 4, DisableCompression: true}
	r := &runner{cfg: cfg, hc: &http.Client{Transport: tr}}
	defer tr.CloseIdleConnections()
	start := time.Now()

	// The baseline: the idle server, no model loaded yet (run the soak
	// against a fresh server).
	base, err := r.settle(ctx, -1)
	if err != nil {
		return nil, err
	}
	r.rep.Baseline = base
	r.rep.Peak = base
	r.logf("baseline: %d goroutines, RSS %.1f MiB", base.Goroutines, mib(base.RSS))
	// Each model answers once before the clients start.
	for _, m := range cfg.Models {
		if err := r.warm(ctx, m); err != nil {
			return nil, fmt.Errorf("soak: warming %s: %w", m, err)
		}
	}
	tr.CloseIdleConnections()
	loaded, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}

	// The load, with a sampler of the peak and the unloads.
	total := int64(cfg.Clients * cfg.Requests)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var aux sync.WaitGroup
	aux.Add(2)
	go func() { defer aux.Done(); r.sample(loadCtx) }()
	go func() { defer aux.Done(); r.unloads(loadCtx, total) }()
	var wg sync.WaitGroup
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(cfg.Seed*1000003 + int64(c)))
			for i := 0; i < cfg.Requests && ctx.Err() == nil; i++ {
				r.one(ctx, rng, c, i)
				if n := r.done.Add(1); n%max(total/10, 1) == 0 {
					r.logf("%d/%d requests", n, total)
				}
			}
		}(c)
	}
	wg.Wait()
	stopLoad()
	aux.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("soak: stopped after %d requests: %w", r.done.Load(), err)
	}
	if r.rep.Disconnects > 0 {
		end, err := r.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		excess := end.Generated - loaded.Generated - float64(r.tokOK+r.tokCut)
		r.rep.ExcessPerDisconnect = excess / float64(r.rep.Disconnects)
	}
	if cfg.Probes > 0 {
		r.probes(ctx)
	}
	// Unload every model, then the server should be back where it started.
	for _, m := range cfg.Models {
		if err := r.unload(ctx, m); err != nil {
			r.unexpected("final unload of %s: %v", m, err)
		}
	}
	tr.CloseIdleConnections()
	if r.rep.After, err = r.settle(ctx, base.Goroutines); err != nil {
		return nil, err
	}
	if r.rep.After, err = r.settleRSS(ctx, base.RSS); err != nil {
		return nil, err
	}
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	if n := len(r.lat); n > 0 {
		r.rep.P50, r.rep.P95, r.rep.Max = r.lat[n/2], r.lat[min(n*95/100, n-1)], r.lat[n-1]
	}
	r.rep.Duration = time.Since(start)
	return &r.rep, nil
}

func (r *runner) warm(ctx context.Context, model string) error {
	body := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","stream":false,"options":{"num_predict":2}}`, model)
	resp, err := r.post(ctx, "/api/generate", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return nil
}

func (r *runner) post(ctx context.Context, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return r.hc.Do(req)
}

// snapshot reads the server's figures from /metrics.
func (r *runner) snapshot(ctx context.Context) (Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.URL+"/metrics", nil)
	if err != nil {
		return Snapshot{}, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return Snapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format for the three figures.
func parseMetrics(rd io.Reader) (Snapshot, error) {
	var s Snapshot
	var seenG, seenR bool
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			if j := strings.LastIndexByte(line, '}'); j >= 0 {
				val = strings.TrimSpace(line[j+1:])
			}
		}
		if sp := strings.IndexByte(val, ' '); sp >= 0 { // a timestamp follows
			val = val[:sp]
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			s.Goroutines, seenG = int(x), true
		case "process_resident_memory_bytes":
			s.RSS, seenR = int64(x), true
		case "woolly_generated_tokens_total":
			s.Generated += x
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !seenG || !seenR {
		return s, errors.New("/metrics lacks go_goroutines or process_resident_memory_bytes")
	}
	return s, nil
}

// settle waits (up to cfg.Settle) for the server's goroutines to come down
// to target (any count when target < 0: then until two readings agree),
// and returns the last snapshot. Not settling is not an error here: the
// report shows the figures and the caller judges them.
func (r *runner) settle(ctx context.Context, target int) (Snapshot, error) {
	deadline := time.Now().Add(r.cfg.Settle)
	prev := -1
	for {
		s, err := r.snapshot(ctx)
		if err != nil {
			return s, err
		}
		if (target >= 0 && s.Goroutines <= target) || (target < 0 && s.Goroutines == prev) || time.Now().After(deadline) {
			return s, nil
		}
		prev = s.Goroutines
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *runner) sample(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		s, err := r.snapshot(ctx)
		if err != nil {
			continue
		}
		r.mu.Lock()
		r.rep.Peak.Goroutines = max(r.rep.Peak.Goroutines, s.Goroutines)
		r.rep.Peak.RSS = max(r.rep.Peak.RSS, s.RSS)
		r.mu.Unlock()
	}
}

// unloads sends keep_alive 0 for every model at each UnloadAt point.
func (r *runner) unloads(ctx context.Context, total int64) {
	for _, at := range r.cfg.UnloadAt {
		for r.done.Load() < int64(at*float64(total)) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		for _, m := range r.cfg.Models {
			if err := r.unload(ctx, m); err != nil {
				if ctx.Err() == nil {
					r.unexpected("unload %s: %v", m, err)
				}
				continue
			}
			r.mu.Lock()
			r.rep.Unloads++
			r.mu.Unlock()
			r.logf("unloaded %s at %d requests", m, r.done.Load())
		}
	}
}

// unload asks the server to unload model now (keep_alive 0, no prompt).
func (r *runner) unload(ctx context.Context, m string) error {
	body := fmt.Sprintf(`{"model":%q,"keep_alive":0}`, m)
	resp, err := r.post(ctx, "/api/generate", strings.NewReader(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct {
		DoneReason string `json:"done_reason"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v.DoneReason != "unload" {
		return fmt.Errorf("%s %q", resp.Status, b)
	}
	return nil
}

// settleRSS waits (up to cfg.Settle) for the server's RSS to come down to
// within 10 % of target, or to stop falling.
func (r *runner) settleRSS(ctx context.Context, target int64) (Snapshot, error) {
	deadline := time.Now().Add(r.cfg.Settle)
	var prev int64 = -1
	for {
		s, err := r.snapshot(ctx)
		if err != nil {
			return s, err
		}
		if s.RSS <= target+target/10 || s.RSS == prev || time.Now().After(deadline) {
			return s, nil
		}
		prev = s.RSS
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// routes are the generating routes, each with how to build a body.
var routes = []string{"/api/generate", "/api/chat", "/v1/completions", "/v1/chat/completions"}

var subjects = []string{"a cat", "the sea", "a little girl named Lily", "a red ball", "the moon", "a big tree", "a dog and a bird", "rain"}

// body builds a request body for route.
func body(route, model, subject string, stream bool, n int, seed int64) string {
	prompt := "Once upon a time there was " + subject
	switch route {
	case "/api/generate":
		return fmt.Sprintf(`{"model":%q,"prompt":%q,"stream":%v,"options":{"num_predict":%d,"seed":%d}}`, model, prompt, stream, n, seed)
	case "/api/chat":
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"stream":%v,"options":{"num_predict":%d,"seed":%d}}`, model, "Tell me about "+subject, stream, n, seed)
	case "/v1/completions":
		return fmt.Sprintf(`{"model":%q,"prompt":%q,"stream":%v,"max_tokens":%d,"seed":%d%s}`, model, prompt, stream, n, seed, usage(stream))
	default:
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"stream":%v,"max_tokens":%d,"seed":%d%s}`, model, "Tell me about "+subject, stream, n, seed, usage(stream))
	}
}

func usage(stream bool) string {
	if stream {
		return `,"stream_options":{"include_usage":true}`
	}
	return ""
}

// one sends client c's request i.
func (r *runner) one(ctx context.Context, rng *rand.Rand, c, i int) {
	route := routes[rng.Intn(len(routes))]
	model := r.cfg.Models[rng.Intn(len(r.cfg.Models))]
	subject := subjects[rng.Intn(len(subjects))]
	x := rng.Float64()
	r.mu.Lock()
	r.rep.Requests++
	r.mu.Unlock()
	switch {
	case x < r.cfg.BadRate:
		r.bad(ctx, rng, route, model)
	case x < r.cfg.BadRate+r.cfg.DisconnectRate:
		k := 1 + rng.Intn(3)
		got, err := r.disconnect(ctx, r.hc, nil, route, body(route, model, subject, true, r.cfg.DisconnectTokens, rng.Int63()), k)
		if err != nil {
			r.unexpected("client %d request %d: disconnecting %s %s: %v", c, i, route, model, err)
			return
		}
		r.mu.Lock()
		r.rep.Disconnects++
		r.tokCut += int64(got)
		r.mu.Unlock()
	default:
		stream := rng.Intn(2) == 0
		t0 := time.Now()
		n, err := r.complete(ctx, route, body(route, model, subject, stream, r.cfg.MaxTokens, rng.Int63()), stream)
		d := time.Since(t0)
		if err != nil {
			r.unexpected("client %d request %d: %s %s stream=%v: %v", c, i, route, model, stream, err)
			return
		}
		r.mu.Lock()
		r.rep.Completed++
		r.tokOK += int64(n)
		r.lat = append(r.lat, d)
		r.mu.Unlock()
	}
}

// complete sends an ordinary request and checks the whole answer; it
// returns the number of tokens generated as the answer states it.
func (r *runner) complete(ctx context.Context, route, b string, stream bool) (int, error) {
	resp, err := r.post(ctx, route, strings.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	var chunks []answer
	if stream {
		err = eachChunk(resp.Body, func(a answer) error { chunks = append(chunks, a); return nil }, nil)
	} else {
		var a answer
		err = json.NewDecoder(resp.Body).Decode(&a)
		chunks = append(chunks, a)
	}
	if err != nil {
		return 0, err
	}
	return finalTokens(route, chunks)
}

// answer holds the fields the soak checks in any route's answer or chunk.
type answer struct {
	Done      bool   `json:"done"`
	EvalCount *int   `json:"eval_count"`
	Response  string `json:"response"`
	Message   *struct {
		Content string `json:"content"`
	} `json:"message"`
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Message      *struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error any `json:"error"`
	sse   bool
	last  bool // the SSE [DONE] marker
}

// tokenChunk reports whether a streamed chunk carries a generated token.
func (a *answer) tokenChunk() bool {
	if a.Done || a.last {
		return false
	}
	if len(a.Choices) > 0 {
		c := a.Choices[0]
		return c.Text != "" || (c.Delta != nil && c.Delta.Content != "")
	}
	return a.Response != "" || (a.Message != nil && a.Message.Content != "")
}

// eachChunk reads NDJSON lines or SSE data frames, calling fn on each.
// After the complete lines of each read from rd, it calls drained (when not
// nil): an error from it ends the reading (the rest of the stream is left
// unread, but everything that arrived was seen).
func eachChunk(rd io.Reader, fn func(answer) error, drained func() error) error {
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 64<<10)
	for {
		n, rerr := rd.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimSpace(buf[:i])
			buf = buf[i+1:]
			if err := chunk(line, fn); err != nil {
				return err
			}
		}
		if len(buf) > 4<<20 {
			return errors.New("a line longer than 4 MiB")
		}
		if drained != nil && n > 0 {
			if err := drained(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			if line := bytes.TrimSpace(buf); len(line) > 0 {
				return chunk(line, fn)
			}
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// chunk decodes one NDJSON line or SSE line and passes it to fn.
func chunk(line []byte, fn func(answer) error) error {
	if len(line) == 0 {
		return nil
	}
	var a answer
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		a.sse = true
		line = bytes.TrimSpace(rest)
		if string(line) == "[DONE]" {
			a.last = true
			return fn(a)
		}
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("a chunk that is not JSON: %q", line)
	}
	if a.Error != nil {
		return fmt.Errorf("error in the stream: %s", line)
	}
	return fn(a)
}

// finalTokens checks that an answer is complete and returns its token count.
func finalTokens(route string, chunks []answer) (int, error) {
	if len(chunks) == 0 {
		return 0, errors.New("empty answer")
	}
	if strings.HasPrefix(route, "/api/") {
		last := chunks[len(chunks)-1]
		if !last.Done || last.EvalCount == nil {
			return 0, fmt.Errorf("answer ends without done and eval_count (%d chunks)", len(chunks))
		}
		return *last.EvalCount, nil
	}
	// OpenAI: a finish_reason somewhere, usage, and [DONE] when streamed.
	finished, n, usage := false, 0, false
	for _, a := range chunks {
		for _, c := range a.Choices {
			if c.FinishReason != nil && *c.FinishReason != "" {
				finished = true
			}
		}
		if a.Usage != nil {
			n, usage = a.Usage.CompletionTokens, true
		}
	}
	if chunks[0].sse && !chunks[len(chunks)-1].last {
		return 0, errors.New("stream ends without data: [DONE]")
	}
	if !finished || !usage {
		return 0, fmt.Errorf("answer without finish_reason or usage (%d chunks)", len(chunks))
	}
	return n, nil
}

// disconnect streams a request, reads k token chunks and leaves; it
// returns the token chunks read. A stream that ends before k tokens is not
// an error (the model may stop early); its tokens were all received.
//
// With a counting connection (the probes), the tokens that have reached the
// kernel when the client leaves are read first: only the tokens generated
// after it left count against the server.
func (r *runner) disconnect(ctx context.Context, hc *http.Client, conn func() *countConn, route, b string, k int) (int, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.cfg.URL+route, strings.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var cc *countConn
	if conn != nil {
		cc = conn()
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	// Leave once k tokens have arrived, counting every token that arrived
	// with them (read from the socket, so received).
	got := 0
	target := int64(-1)
	var chunks []answer
	errLeave := errors.New("leaving")
	err = eachChunk(resp.Body, func(a answer) error {
		chunks = append(chunks, a)
		if a.tokenChunk() {
			got++
		}
		return nil
	}, func() error {
		if got < k {
			return nil
		}
		if cc != nil {
			if target < 0 {
				if n := pending(cc.Conn); n > 0 {
					target = cc.read.Load() + int64(n)
					return nil // read what has arrived
				}
			} else if cc.read.Load() < target {
				return nil
			}
		}
		if cc != nil {
			cc.Conn.Close() // now, not when the transport gets to it
		}
		cancel() // close the connection mid-stream
		return errLeave
	})
	if errors.Is(err, errLeave) {
		return got, nil
	}
	if err != nil {
		return 0, err
	}
	// The model ended first: the answer is complete, count its tokens.
	return finalTokens(route, chunks)
}

// bad sends a malformed or oversized body and expects 400 or 413 with an
// error in JSON.
func (r *runner) bad(ctx context.Context, rng *rand.Rand, route, model string) {
	var rd io.Reader
	want := http.StatusBadRequest
	oversized := r.cfg.OversizeBytes > 0 && rng.Intn(5) == 0
	switch {
	case oversized:
		want = http.StatusRequestEntityTooLarge
		head := fmt.Sprintf(`{"model":%q,"prompt":"`, model)
		rd = io.MultiReader(strings.NewReader(head), io.LimitReader(repeatReader('a'), r.cfg.OversizeBytes), strings.NewReader(`"}`))
	default:
		bodies := []string{
			fmt.Sprintf(`{"model":%q,"prompt":"Once upon`, model),         // cut short
			fmt.Sprintf(`{"model":%q,"prompt":7,"messages":"no"}`, model), // wrong types
			fmt.Sprintf(`{"model":%q,"stream":"yes"}`, model),             // wrong type
			`[1,2,3]`, // not an object
			fmt.Sprintf(`{"model":%q,"options":{"temperature":"hot"}}`, model), // wrong option type
			fmt.Sprintf(`{"model":%q,"prompt":"x"}{"model":%q}`, model, model), // two values
			"\x00\xff\xfe{",            // not text
			`{"model":7,"prompt":"x"}`, // the model is not a name
		}
		rd = strings.NewReader(bodies[rng.Intn(len(bodies))])
	}
	resp, err := r.post(ctx, route, rd)
	if err != nil {
		r.unexpected("bad body to %s (oversized %v): %v", route, oversized, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error any `json:"error"`
	}
	if resp.StatusCode != want || json.Unmarshal(b, &e) != nil || e.Error == nil {
		r.unexpected("bad body to %s (oversized %v): %s %q, want %d with a JSON error", route, oversized, resp.Status, b, want)
		return
	}
	r.mu.Lock()
	r.rep.Bad++
	if oversized {
		r.rep.Oversized++
	}
	r.mu.Unlock()
}

type repeatReader byte

func (c repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// probes disconnects one request at a time on each model (nothing else
// running) and measures exactly how many tokens the server generated
// beyond what the client read.
func (r *runner) probes(ctx context.Context) {
	r.rep.ProbeTokens = 200
	var cc *countConn
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cc = &countConn{Conn: c}
			return cc, nil
		}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for _, m := range r.cfg.Models {
		for p := 0; p < r.cfg.Probes; p++ {
			before, err := r.snapshot(ctx)
			if err != nil {
				r.unexpected("probe: %v", err)
				return
			}
			k := 1 + p%3
			b := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","stream":true,"options":{"num_predict":%d,"seed":%d}}`, m, r.rep.ProbeTokens, p)
			got, err := r.disconnect(ctx, hc, func() *countConn { return cc }, "/api/generate", b, k)
			if err != nil {
				r.unexpected("probe on %s: %v", m, err)
				continue
			}
			// The server counts a generation's tokens when it ends.
			deadline := time.Now().Add(10 * time.Second)
			var after Snapshot
			for {
				if after, err = r.snapshot(ctx); err != nil {
					r.unexpected("probe: %v", err)
					return
				}
				if after.Generated != before.Generated || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if after.Generated == before.Generated {
				r.unexpected("probe on %s: the generation did not end within 10 s of the disconnect", m)
				continue
			}
			// Let a late count land (two equal readings) before the next probe.
			time.Sleep(20 * time.Millisecond)
			if again, err := r.snapshot(ctx); err == nil {
				after = again
			}
			r.rep.ProbeExcess = append(r.rep.ProbeExcess, int(after.Generated-before.Generated)-got)
		}
	}
}

// Check judges a report: nothing unexpected, the goroutines back to the
// baseline, RSS back within rssSlack bytes of it (every model unloaded),
// and no probe disconnect followed by more than maxExcess tokens (1 is the
// aim: the token being computed when the client left). goSlack goroutines
// above the baseline are allowed (0 against a server in its own process).
func (r *Report) Check(maxExcess int, rssSlack int64, goSlack int) error {
	var bad []string
	if r.UnexpectedCount > 0 {
		bad = append(bad, fmt.Sprintf("%d unexpected results", r.UnexpectedCount))
	}
	if r.After.Goroutines > r.Baseline.Goroutines+goSlack {
		bad = append(bad, fmt.Sprintf("%d goroutines after, %d before", r.After.Goroutines, r.Baseline.Goroutines))
	}
	if r.After.RSS > r.Baseline.RSS+rssSlack {
		bad = append(bad, fmt.Sprintf("RSS %.1f MiB after, %.1f MiB before", mib(r.After.RSS), mib(r.Baseline.RSS)))
	}
	if m := r.MaxProbeExcess(); m > maxExcess {
		bad = append(bad, fmt.Sprintf("a disconnect went on for %d tokens", m))
	}
	if len(bad) > 0 {
		return errors.New("soak failed: " + strings.Join(bad, "; "))
	}
	return nil
}

// countConn counts the bytes read from the kernel.
type countConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

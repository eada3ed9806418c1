package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeBackend is a test-only backend: its models "generate" the words
// w0 w1 w2 ... so tests can predict every byte of a response.
type fakeBackend struct {
	mu       sync.Mutex
	loads    map[string]int
	models   []*fakeModel
	delay    time.Duration // per generated token
	gate     chan struct{} // when set, each Generate waits for a value first
	loadGate chan struct{} // when set, each Load waits for a value first
	template string        // chat template of every model
	script   []string      // when set, the pieces every model generates instead of w0 w1 ...
	fim      *[3]string    // fill-in-the-middle token texts of every model
	count    bool          // models count tokens (a prompt's whitespace-separated words, as Generate counts them)
	cached   int           // prompt tokens every generation reports as reused from a cache (at most the prompt's)
	scripts  [][]string    // when set, the next generation's pieces (taken in turn; then script)
	panics   atomic.Value  // a string: when set, each Generate panics with it (a bug in the engine)
}

func newFakeBackend() *fakeBackend { return &fakeBackend{loads: map[string]int{}} }

func (b *fakeBackend) meta(path string) (ModelMeta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ModelMeta{}, err
	}
	if strings.HasPrefix(string(data), "broken") {
		return ModelMeta{}, errors.New("not a GGUF file")
	}
	return ModelMeta{Architecture: "fakearch", ContextLength: 512, NParams: 9_300_000, FileType: "Q8_0",
		ChatTemplate: b.template, BOSText: "<s>", EOSText: "</s>", AddBOS: true, FIM: b.fim, MaxTokenBytes: 16, NVocab: 1000, EmbeddingLength: 4,
		Embedding: strings.HasPrefix(string(data), "GGUF embedding"), CountTokens: b.counter(), DefaultCtx: 512}, nil
}

func (b *fakeBackend) counter() func(string) (int, error) {
	if !b.count {
		return nil
	}
	return func(p string) (int, error) { return len(strings.Fields(p)), nil }
}

func (b *fakeBackend) Inspect(path string) (ModelMeta, error) { return b.meta(path) }

func (b *fakeBackend) Load(path string, threads int) (Model, error) {
	if b.loadGate != nil {
		<-b.loadGate
	}
	meta, err := b.meta(path)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loads[path]++
	m := &fakeModel{b: b, meta: meta, threads: threads}
	b.models = append(b.models, m)
	return m, nil
}

func (b *fakeBackend) loaded() (open int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.models {
		if !m.closed.Load() {
			open++
		}
	}
	return open
}

func (b *fakeBackend) last() *fakeModel {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.models[len(b.models)-1]
}

type fakeModel struct {
	b        *fakeBackend
	meta     ModelMeta
	threads  int
	closed   atomic.Bool
	running  atomic.Int32 // concurrent Generate calls (must stay <= Config.Parallel)
	maxRun   atomic.Int32
	produced atomic.Int64 // tokens produced, all requests
	kv       atomic.Int64 // prompt and generated tokens of the running requests (KVReporter)
	mu       sync.Mutex
	reqs     []GenerateRequest
}

func (m *fakeModel) Meta() ModelMeta { return m.meta }

// KVTokens counts a running request's prompt words and generated tokens.
func (m *fakeModel) KVTokens() int64 { return m.kv.Load() }
func (m *fakeModel) Close() error {
	m.closed.Store(true)
	return nil
}

// enter counts a running request (maxRun keeps the most at once); call
// the result when it ends.
func (m *fakeModel) enter() (leave func()) {
	n := m.running.Add(1)
	for {
		old := m.maxRun.Load()
		if n <= old || m.maxRun.CompareAndSwap(old, n) {
			break
		}
	}
	return func() { m.running.Add(-1) }
}

func (m *fakeModel) lastReq() GenerateRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

func (m *fakeModel) Generate(ctx context.Context, req GenerateRequest, onText func(string) error) (*GenerateResult, error) {
	if m.closed.Load() {
		return nil, errors.New("generate on a closed model")
	}
	if req.PromptIDs != nil { // ids count as the prompt's words
		req.Prompt = strings.TrimSpace(strings.Repeat("id ", len(req.PromptIDs)))
	}
	defer m.enter()()
	if v, _ := m.b.panics.Load().(string); v != "" {
		panic(errors.New(v))
	}
	held := int64(len(strings.Fields(req.Prompt)))
	m.kv.Add(held)
	defer func() { m.kv.Add(-held) }()
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if m.b.gate != nil {
		select {
		case <-m.b.gate:
		case <-ctx.Done():
			return &GenerateResult{PromptTokens: len(strings.Fields(req.Prompt)), StopReason: "cancel"}, nil
		}
	}
	script := m.b.script
	m.b.mu.Lock()
	if len(m.b.scripts) > 0 {
		script, m.b.scripts = m.b.scripts[0], m.b.scripts[1:]
	}
	m.b.mu.Unlock()
	res := &GenerateResult{PromptTokens: len(strings.Fields(req.Prompt)), PromptDuration: time.Millisecond}
	res.CachedTokens = min(m.b.cached, res.PromptTokens)
	start := time.Now()
	limit, reason := req.MaxTokens, "length"
	if limit < 0 {
		limit, reason = 5, "stop"
	}
	var text strings.Builder
	for i := 0; i < limit; i++ {
		if ctx.Err() != nil {
			res.StopReason = "cancel"
			res.GenDuration = time.Since(start)
			return res, nil
		}
		if m.b.delay > 0 {
			time.Sleep(m.b.delay)
		}
		piece := fmt.Sprintf(" w%d", i)
		if i == 0 {
			piece = "w0"
		}
		if script != nil {
			if i >= len(script) {
				reason = "stop" // the script's end: the model's end of generation
				break
			}
			piece = script[i]
		}
		res.Tokens++
		m.produced.Add(1)
		held++
		m.kv.Add(1)
		text.WriteString(piece)
		for _, s := range req.Stop {
			if strings.Contains(text.String(), s) {
				res.StopReason, res.StopString = "stop", s
				res.GenDuration = time.Since(start)
				return res, nil
			}
		}
		if err := onText(piece); err != nil {
			res.StopReason = "cancel"
			return res, err
		}
	}
	res.StopReason = reason
	res.GenDuration = time.Since(start)
	return res, nil
}

// fakeText is what a fake model generates in n tokens.
func fakeText(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "w%d", i)
	}
	return b.String()
}

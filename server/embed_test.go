package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/runtime"
)

// Embed makes the fake model's embedding of a text [len(text), 1, 2, 3]
// (of a token list [len, 1, 2, 3]); "toolong" is longer than any context.
// It counts as a running request like Generate.
func (m *fakeModel) Embed(ctx context.Context, req EmbedRequest) (*EmbedResult, error) {
	defer m.enter()()
	if m.b.gate != nil {
		select {
		case <-m.b.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res := &EmbedResult{}
	add := func(l int) {
		v := []float32{float32(l), 1, 2, 3}
		if req.Normalize {
			runtime.NormalizeL2(v)
		}
		res.Embeddings = append(res.Embeddings, v)
		res.PromptTokens += l
	}
	for _, in := range req.Inputs {
		if in == "toolong" && !req.Truncate {
			return nil, &runtime.InputTooLongError{Input: len(res.Embeddings), Tokens: 1000, NCtx: 512}
		}
		add(len(in))
	}
	for _, ids := range req.Tokens {
		add(len(ids))
	}
	return res, nil
}

func unit(v ...float64) []float64 {
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	for i := range v {
		v[i] /= math.Sqrt(n)
	}
	return v
}

// apiEmbedResponse is the part of an /api/embed answer the tests read.
type apiEmbedResponse struct {
	Embeddings      [][]float32 `json:"embeddings"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// openAIEmbedResponse is the part of a /v1/embeddings answer the tests read.
type openAIEmbedResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func closeTo(a []float64, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-6 })
}

func TestOllamaEmbedRoutes(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	var r struct {
		Model           string      `json:"model"`
		Embeddings      [][]float64 `json:"embeddings"`
		TotalDuration   *int64      `json:"total_duration"`
		LoadDuration    *int64      `json:"load_duration"`
		PromptEvalCount *int        `json:"prompt_eval_count"`
	}
	res := do(t, ts, "POST", "/api/embed", `{"model":"tiny","input":["ab","abcd"]}`)
	wantStatus(t, res, 200)
	if err := json.Unmarshal(res.body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "tiny" || len(r.Embeddings) != 2 || !closeTo(r.Embeddings[0], unit(2, 1, 2, 3)) ||
		!closeTo(r.Embeddings[1], unit(4, 1, 2, 3)) || r.TotalDuration == nil || *r.TotalDuration <= 0 ||
		r.LoadDuration == nil || r.PromptEvalCount == nil || *r.PromptEvalCount != 6 {
		t.Fatalf("/api/embed: %s", res.body)
	}
	// A string input, dimensions (truncated, normalized again), keep_alive,
	// options.
	res = do(t, ts, "POST", "/api/embed", `{"model":"tiny:latest","input":"abc","dimensions":2,"truncate":false,
		"keep_alive":"1m","options":{"num_ctx":64,"temperature":0.5}}`)
	wantStatus(t, res, 200)
	json.Unmarshal(res.body, &r)
	if len(r.Embeddings) != 1 || !closeTo(r.Embeddings[0], unit(3, 1)) {
		t.Fatalf("dimensions 2: %s", res.body)
	}
	// No input (absent, "", []): the model loads, the list is empty.
	for _, in := range []string{``, `,"input":""`, `,"input":[]`, `,"input":null`} {
		res = do(t, ts, "POST", "/api/embed", `{"model":"tiny"`+in+`}`)
		wantStatus(t, res, 200)
		if !strings.Contains(string(res.body), `"embeddings":[]`) {
			t.Errorf("input %q: %s", in, res.body)
		}
	}
	// The legacy route: one prompt, the embedding as the model gives it.
	res = do(t, ts, "POST", "/api/embeddings", `{"model":"tiny","prompt":"abcde","options":{"num_ctx":64}}`)
	wantStatus(t, res, 200)
	var legacy struct{ Embedding []float64 }
	json.Unmarshal(res.body, &legacy)
	if !slices.Equal(legacy.Embedding, []float64{5, 1, 2, 3}) {
		t.Fatalf("/api/embeddings: %s", res.body)
	}
	res = do(t, ts, "POST", "/api/embeddings", `{"model":"tiny"}`)
	if res.status != 200 || strings.TrimSpace(string(res.body)) != `{"embedding":[]}` {
		t.Fatalf("/api/embeddings without a prompt: %d %s", res.status, res.body)
	}

	for _, c := range []struct {
		route, body string
		code        int
		want        string
	}{
		{"/api/embed", `{"model":"tiny","input":[1,2]}`, 400, "invalid input type"},
		{"/api/embed", `{"model":"tiny","input":{"a":1}}`, 400, "invalid input type"},
		{"/api/embed", `{"model":"tiny","input":"abc","dimensions":9}`, 400, "dimensions 9 is more than the model's embedding length 4"},
		{"/api/embed", `{"model":"tiny","input":"abc","dimensions":-1}`, 400, "dimensions"},
		{"/api/embed", `{"model":"tiny","input":"toolong","truncate":false}`, 400, "input 0 has 1000 tokens, more than the context length 512 (truncate is false"},
		{"/api/embed", `{"model":"tiny","input":"abc","options":{"tfs_z":0.5}}`, 400, "options.tfs_z"},
		{"/api/embed", `{"model":"tiny","input":"abc","options":{"num_ctx":-1}}`, 400, "num_ctx"},
		{"/api/embed", `{"model":"tiny","input":"abc","truncate":"yes"}`, 400, "malformed JSON"},
		{"/api/embed", `{"model":"nosuch","input":"abc"}`, 404, "not found"},
		{"/api/embed", `{"input":"abc"}`, 400, "no model"},
		{"/api/embed", ``, 400, "empty request body"},
		{"/api/embeddings", `{"model":"tiny","prompt":"toolong"}`, 400, "input 0 has 1000 tokens, more than the context length 512 (num_ctx"},
		{"/api/embeddings", `{"model":"tiny","prompt":1}`, 400, "malformed JSON"},
	} {
		res := do(t, ts, "POST", c.route, c.body)
		if res.status != c.code || !strings.Contains(string(res.body), c.want) || !strings.Contains(string(res.body), `"error":"`) {
			t.Errorf("%s %s: %d %s; want %d naming %q in Ollama's shape", c.route, c.body, res.status, res.body, c.code, c.want)
		}
	}
	// Truncation is on by default.
	wantStatus(t, do(t, ts, "POST", "/api/embed", `{"model":"tiny","input":"toolong"}`), 200)
	wantStatus(t, do(t, ts, "GET", "/api/embed", ""), 405)
}

func TestOpenAIEmbeddings(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	type item struct {
		Object    string          `json:"object"`
		Embedding json.RawMessage `json:"embedding"`
		Index     int             `json:"index"`
	}
	var r struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	get := func(body string) {
		t.Helper()
		res := do(t, ts, "POST", "/v1/embeddings", body)
		wantStatus(t, res, 200)
		r.Data = nil
		if err := json.Unmarshal(res.body, &r); err != nil {
			t.Fatal(err)
		}
	}
	floats := func(raw json.RawMessage) []float64 {
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("embedding %s: %v", raw, err)
		}
		return v
	}
	get(`{"model":"tiny","input":"abc","user":"u1"}`)
	if r.Object != "list" || r.Model != "tiny" || len(r.Data) != 1 || r.Data[0].Object != "embedding" || r.Data[0].Index != 0 ||
		!closeTo(floats(r.Data[0].Embedding), unit(3, 1, 2, 3)) || r.Usage.PromptTokens != 3 || r.Usage.TotalTokens != 3 {
		t.Fatalf("string input: %+v", r)
	}
	// Lists of strings, token ids and token lists; indexes in order.
	for body, lens := range map[string][]float64{
		`{"model":"tiny","input":["a","abcdef"],"encoding_format":"float"}`: {1, 6},
		`{"model":"tiny","input":[5,6,7]}`:                                  {3},
		`{"model":"tiny","input":[[5,6],[1,2,3,4,5]]}`:                      {2, 5},
	} {
		get(body)
		if len(r.Data) != len(lens) {
			t.Fatalf("%s: %+v", body, r)
		}
		for i, l := range lens {
			if r.Data[i].Index != i || !closeTo(floats(r.Data[i].Embedding), unit(l, 1, 2, 3)) {
				t.Fatalf("%s: item %d = %s", body, i, r.Data[i].Embedding)
			}
		}
	}
	// base64: the little-endian float32 bytes of the same vector.
	get(`{"model":"tiny","input":["ab","abcd"]}`)
	plain := r.Data
	get(`{"model":"tiny","input":["ab","abcd"],"encoding_format":"base64"}`)
	for i := range plain {
		var s string
		if err := json.Unmarshal(r.Data[i].Embedding, &s); err != nil {
			t.Fatalf("base64 embedding is not a string: %s", r.Data[i].Embedding)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			t.Fatalf("base64 %q: %v", s, err)
		}
		var dec, want []float32
		for j := 0; j < len(b); j += 4 {
			dec = append(dec, math.Float32frombits(binary.LittleEndian.Uint32(b[j:])))
		}
		if json.Unmarshal(plain[i].Embedding, &want); !slices.Equal(dec, want) {
			t.Fatalf("base64 decodes to %v, float gives %v", dec, want)
		}
	}
	get(`{"model":"tiny","input":"abcd","dimensions":3}`)
	if !closeTo(floats(r.Data[0].Embedding), unit(4, 1, 2)) {
		t.Fatalf("dimensions 3: %s", r.Data[0].Embedding)
	}

	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"model":"tiny"}`, 400, "input is required"},
		{`{"model":"tiny","input":""}`, 400, "input[0] is an empty string"},
		{`{"model":"tiny","input":[]}`, 400, "input must not be empty"},
		{`{"model":"tiny","input":[[]]}`, 400, "input[0] is an empty list of tokens"},
		{`{"model":"tiny","input":[1,"a"]}`, 400, "input must be a string"},
		{`{"model":"tiny","input":["a","toolong"]}`, 400, "input 1 has 1000 tokens, more than the context length 512; shorten"},
		{`{"model":"tiny","input":"a","encoding_format":"int8"}`, 400, "encoding_format"},
		{`{"model":"tiny","input":"a","dimensions":0}`, 400, "dimensions must be at least 1"},
		{`{"model":"tiny","input":"a","dimensions":5}`, 400, "dimensions 5 is more than"},
		{`{"model":"tiny","input":"a","frobnicate":1}`, 400, "unrecognized request argument supplied: frobnicate"},
		{`{"input":"a"}`, 400, "model is required"},
		{`{"model":"nosuch","input":"a"}`, 404, "not found"},
	} {
		res := do(t, ts, "POST", "/v1/embeddings", c.body)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		json.Unmarshal(res.body, &e)
		if res.status != c.code || !strings.Contains(e.Error.Message, c.want) || e.Error.Type == "" {
			t.Errorf("%s: %d %s; want %d naming %q in OpenAI's shape", c.body, res.status, res.body, c.code, c.want)
		}
	}
}

// An embedding request takes the model's turn: it waits while a generation
// runs and never runs beside one.
func TestEmbedWaitsForTheModel(t *testing.T) {
	b := newFakeBackend()
	b.gate = make(chan struct{})
	// One slot: embedding requests take the model's slots as generations do.
	_, ts := newTestServer(t, Config{Parallel: runtime.Ptr(1)}, b)
	wantStatus(t, do(t, ts, "POST", "/api/generate", `{"model":"tiny"}`), 200) // load
	var wg sync.WaitGroup
	codes := make([]int, 3)
	wg.Add(3)
	go func() {
		defer wg.Done()
		codes[0] = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":1}}`).status
	}()
	for deadline := time.Now().Add(2 * time.Second); b.last().running.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		defer wg.Done()
		codes[1] = do(t, ts, "POST", "/api/embed", `{"model":"tiny","input":"a"}`).status
	}()
	go func() {
		defer wg.Done()
		codes[2] = do(t, ts, "POST", "/v1/embeddings", `{"model":"tiny","input":"a"}`).status
	}()
	for deadline := time.Now().Add(2 * time.Second); queueDepth(t, ts) < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if q := queueDepth(t, ts); q != 2 {
		t.Fatalf("queue depth %d while a generation runs, want the 2 embedding requests waiting", q)
	}
	for range 3 {
		b.gate <- struct{}{}
	}
	wg.Wait()
	if !slices.Equal(codes, []int{200, 200, 200}) {
		t.Fatalf("statuses %v", codes)
	}
	if mx := b.last().maxRun.Load(); mx != 1 {
		t.Fatalf("%d requests ran at once on one model", mx)
	}
}

// /api/show lists "embedding" for a file with {arch}.pooling_type, as Ollama.
func TestShowCapabilities(t *testing.T) {
	b := newFakeBackend()
	s, ts := newTestServer(t, Config{}, b)
	caps := func(model string) []any {
		res := do(t, ts, "POST", "/api/show", `{"model":"`+model+`"}`)
		wantStatus(t, res, 200)
		c, _ := res.json(t)["capabilities"].([]any)
		return c
	}
	if c := caps("tiny"); len(c) != 1 || c[0] != "completion" {
		t.Fatalf("tiny: %v", c)
	}
	if err := os.WriteFile(filepath.Join(s.cfg.ModelsDir, "embedder.gguf"), []byte("GGUF embedding"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := caps("embedder"); len(c) != 1 || c[0] != "embedding" {
		t.Fatalf("embedder: %v", c)
	}
}

// The real runtime through the server: /api/embed is the runtime's
// last-token embedding (the file has no pooling_type) normalized; the
// legacy route the same vector raw; the OpenAI route the normalized one.
func TestEmbedRealModel(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	m, err := runtime.Load(filepath.Join(realModelsDir(t), realModel+".gguf"), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := []string{"Once upon a time", "The cat sat on the mat."}
	want, err := m.Embed(context.Background(), runtime.EmbedOptions{Inputs: in, Pooling: runtime.PoolingLast})
	if err != nil {
		t.Fatal(err)
	}
	raw := want.Embeddings[0].Vector
	normed := func(v []float32) []float32 {
		v = slices.Clone(v)
		runtime.NormalizeL2(v)
		return v
	}
	code, body := post(t, url+"/api/embed", `{"model":"`+realModel+`","input":["Once upon a time","The cat sat on the mat."]}`)
	var r apiEmbedResponse
	if err := json.Unmarshal(body, &r); code != 200 || err != nil {
		t.Fatalf("/api/embed: %d %s", code, body)
	}
	if len(r.Embeddings) != 2 || !slices.Equal(r.Embeddings[0], normed(raw)) ||
		!slices.Equal(r.Embeddings[1], normed(want.Embeddings[1].Vector)) || r.PromptEvalCount != want.Tokens {
		t.Fatalf("/api/embed differs from the runtime's normalized last-token embeddings")
	}
	code, body = post(t, url+"/api/embeddings", `{"model":"`+realModel+`","prompt":"Once upon a time"}`)
	var l struct{ Embedding []float32 }
	if json.Unmarshal(body, &l); code != 200 || !slices.Equal(l.Embedding, raw) {
		t.Fatalf("/api/embeddings: %d, differs from the raw embedding", code)
	}
	code, body = post(t, url+"/v1/embeddings", `{"model":"`+realModel+`","input":"Once upon a time"}`)
	var o openAIEmbedResponse
	if json.Unmarshal(body, &o); code != 200 || len(o.Data) != 1 || !slices.Equal(o.Data[0].Embedding, normed(raw)) {
		t.Fatalf("/v1/embeddings: %d %.200s", code, body)
	}

	// Longer than the context: truncated by default (Ollama), a 400 naming
	// truncate with truncate false; OpenAI: a 400 in its shape.
	long := strings.Repeat("The dog ran and ran. ", 20)
	code, body = post(t, url+"/api/embed", `{"model":"`+realModel+`","input":"`+long+`","options":{"num_ctx":16}}`)
	if json.Unmarshal(body, &r); code != 200 || r.PromptEvalCount != 16 || len(r.Embeddings) != 1 {
		t.Fatalf("truncated: %d %.200s", code, body)
	}
	short := strings.Repeat("The dog ran and ran. ", 4) // fewer bytes than 16 tokens' worth, more tokens
	code, body = post(t, url+"/api/embed", `{"model":"`+realModel+`","input":"`+short+`","truncate":false,"options":{"num_ctx":16}}`)
	if code != 400 || !strings.Contains(string(body), `"error":"input 0 has`) || !strings.Contains(string(body), "(truncate is false") {
		t.Fatalf("truncate false: %d %s", code, body)
	}
	code, body = post(t, url+"/api/embed", `{"model":"`+realModel+`","input":"`+long+`","truncate":false,"options":{"num_ctx":16}}`)
	if code != 400 || !strings.Contains(string(body), `"error":"input[0] has 420 bytes`) || !strings.Contains(string(body), "(truncate is false") {
		t.Fatalf("truncate false, too many bytes: %d %s", code, body)
	}
	code, body = post(t, url+"/v1/embeddings", `{"model":"`+realModel+`","input":["a","`+strings.Repeat(long, 10)+`"]}`)
	var oe struct {
		Error struct{ Message, Type string }
	}
	if json.Unmarshal(body, &oe); code != 400 || !strings.HasPrefix(oe.Error.Message, "input[1] has 4200 bytes") || oe.Error.Type != "invalid_request_error" {
		t.Fatalf("OpenAI too long: %d %s", code, body)
	}
	code, body = post(t, url+"/v1/embeddings", `{"model":"`+realModel+`","input":[[1,99999]]}`)
	if code != 400 || !strings.Contains(string(body), "token id 99999 out of range") {
		t.Fatalf("bad token id: %d %s", code, body)
	}
}

// encoderServer writes the bert-mini and bert-rerank-mini synth presets
// (Q8_0, seed 1: the files of runtime/testdata/encoder) into a directory
// and serves it.
func encoderServer(t *testing.T) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	writePresets(t, dir, "bert-mini", "bert-rerank-mini")
	url, stop, _ := serveOnPort(t, Config{ModelsDir: dir, Threads: 1})
	t.Cleanup(stop)
	return url, dir
}

// TestEncoderRoutes: a BERT model's embeddings through /api/embed and
// /v1/embeddings are the runtime's (mean pooling, normalized); generation
// routes answer 400; /v1/rerank ranks by the runtime's scores.
func TestEncoderRoutes(t *testing.T) {
	url, dir := encoderServer(t)
	m, err := runtime.Load(filepath.Join(dir, "bert-mini.gguf"), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := []string{"Once upon a time", "The cat sat on the mat."}
	want, err := m.Embed(context.Background(), runtime.EmbedOptions{Inputs: in, Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if want.Pooling != runtime.PoolingMean {
		t.Fatalf("bert-mini pools by %v, want mean (its pooling_type)", want.Pooling)
	}
	code, body := post(t, url+"/api/embed", `{"model":"bert-mini","input":["Once upon a time","The cat sat on the mat."]}`)
	var r apiEmbedResponse
	if err := json.Unmarshal(body, &r); code != 200 || err != nil {
		t.Fatalf("/api/embed: %d %s", code, body)
	}
	if len(r.Embeddings) != 2 || !slices.Equal(r.Embeddings[0], want.Embeddings[0].Vector) ||
		!slices.Equal(r.Embeddings[1], want.Embeddings[1].Vector) || r.PromptEvalCount != want.Tokens {
		t.Fatalf("/api/embed differs from the runtime's embeddings")
	}
	code, body = post(t, url+"/v1/embeddings", `{"model":"bert-mini","input":"Once upon a time"}`)
	var o openAIEmbedResponse
	if json.Unmarshal(body, &o); code != 200 || len(o.Data) != 1 || !slices.Equal(o.Data[0].Embedding, want.Embeddings[0].Vector) {
		t.Fatalf("/v1/embeddings: %d %.200s", code, body)
	}

	for _, c := range []struct{ path, body string }{
		{"/api/generate", `{"model":"bert-mini","prompt":"hi","stream":false}`},
		{"/api/chat", `{"model":"bert-mini","messages":[{"role":"user","content":"hi"}],"stream":false}`},
		{"/v1/chat/completions", `{"model":"bert-mini","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/completions", `{"model":"bert-mini","prompt":"hi"}`},
		{"/v1/responses", `{"model":"bert-mini","input":"hi"}`},
		{"/v1/messages", `{"model":"bert-mini","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		code, body := post(t, url+c.path, c.body)
		if code != 400 || !strings.Contains(string(body), "is an embedding model") {
			t.Errorf("%s on an encoder: %d %s, want a 400 naming it an embedding model", c.path, code, body)
		}
	}

	rm, err := runtime.Load(filepath.Join(dir, "bert-rerank-mini.gguf"), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	docs := []string{"the cat sat", "a dog ran in the park", "what is an embedding model", "tea"}
	ref, err := rm.Rerank(context.Background(), "what is the little cat doing", docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	order := []int{0, 1, 2, 3}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ref.Scores[a] > ref.Scores[b]:
			return -1
		case ref.Scores[a] < ref.Scores[b]:
			return 1
		}
		return 0
	})
	code, body = post(t, url+"/v1/rerank", `{"model":"bert-rerank-mini","query":"what is the little cat doing","top_n":3,
		"documents":["the cat sat","a dog ran in the park","what is an embedding model","tea"]}`)
	var rr struct {
		Results []struct {
			Index int     `json:"index"`
			Score float32 `json:"relevance_score"`
		} `json:"results"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &rr); code != 200 || err != nil || len(rr.Results) != 3 {
		t.Fatalf("/v1/rerank: %d %s", code, body)
	}
	for i, res := range rr.Results {
		if res.Index != order[i] || res.Score != ref.Scores[order[i]] {
			t.Fatalf("/v1/rerank result %d: %+v, want index %d score %v (%s)", i, res, order[i], ref.Scores[order[i]], body)
		}
	}
	if rr.Usage.PromptTokens != ref.Tokens {
		t.Errorf("/v1/rerank usage %d tokens, want %d", rr.Usage.PromptTokens, ref.Tokens)
	}
	for _, c := range []struct{ body, want string }{
		{`{"model":"bert-rerank-mini","documents":["a"]}`, "query (a string) must be provided"},
		{`{"model":"bert-rerank-mini","query":"q","documents":[]}`, "documents must be a non-empty string array"},
		{`{"model":"bert-rerank-mini","query":"q","documents":["a"],"top_n":-1}`, "top_n must not be negative"},
		{`{"model":"bert-rerank-mini","query":"q","documents":["a"],"return_text":true}`, "return_text"},
		{`{"model":"bert-mini","query":"q","documents":["a"]}`, "not a reranker"},
	} {
		code, body := post(t, url+"/v1/rerank", c.body)
		if code != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("/v1/rerank %s: %d %s, want a 400 with %q", c.body, code, body, c.want)
		}
	}
}

// TestRerankLikeLlamaServer: /v1/rerank on bert-rerank-mini answers as
// llama.cpp's native llama-server did (runtime/testdata/encoder/native):
// the same order, scores within 1e-6, the same token count.
// rerankResponse is the part of a /v1/rerank answer the test compares.
type rerankResponse struct {
	Results []struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	} `json:"results"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

func TestRerankLikeLlamaServer(t *testing.T) {
	url, _ := encoderServer(t)
	var ref struct {
		Query     string         `json:"query"`
		Documents []string       `json:"documents"`
		Response  rerankResponse `json:"response"`
	}
	b, err := os.ReadFile(filepath.Join("..", "runtime", "testdata", "encoder", "native", "bert-rerank-mini-Q8_0.rerank.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"model": "bert-rerank-mini", "query": ref.Query, "documents": ref.Documents})
	code, out := post(t, url+"/v1/rerank", string(body))
	var got rerankResponse
	if err := json.Unmarshal(out, &got); code != 200 || err != nil {
		t.Fatalf("/v1/rerank: %d %s", code, out)
	}
	if len(got.Results) != len(ref.Response.Results) || got.Usage.PromptTokens != ref.Response.Usage.PromptTokens {
		t.Fatalf("%d results, %d tokens; llama-server: %d, %d", len(got.Results), got.Usage.PromptTokens,
			len(ref.Response.Results), ref.Response.Usage.PromptTokens)
	}
	worst := 0.0
	for i, r := range ref.Response.Results {
		g := got.Results[i]
		worst = math.Max(worst, math.Abs(g.Score-r.Score))
		if g.Index != r.Index || math.Abs(g.Score-r.Score) > 1e-6 {
			t.Errorf("result %d: index %d score %.9f; llama-server: index %d score %.9f", i, g.Index, g.Score, r.Index, r.Score)
		}
	}
	t.Logf("max |score - llama-server's| %.3g", worst)
}

// boundInputs with truncate on: an input longer than the context's bytes
// but shorter than the twice-as-long cut stays whole (it used to index past
// its end: a 500 from /api/embed); a longer one is cut at a character
// boundary; with truncate off both are a 400.
func TestBoundInputsCut(t *testing.T) {
	meta := ModelMeta{MaxTokenBytes: 9}
	const nctx = 16                  // 144 bytes fit; the cut is at 288
	mid := strings.Repeat("ab", 100) // 200 bytes
	long := strings.Repeat("é", 200) // 400 bytes, 2-byte characters
	req := EmbedRequest{Inputs: []string{mid, long, "short"}, Truncate: true}
	if err := boundInputs(meta, &req, nctx); err != nil {
		t.Fatal(err)
	}
	if req.Inputs[0] != mid || req.Inputs[2] != "short" {
		t.Fatalf("inputs within the cut changed: %d, %q", len(req.Inputs[0]), req.Inputs[2])
	}
	if got := req.Inputs[1]; len(got) != 288 || !utf8.ValidString(got) {
		t.Fatalf("long input cut to %d bytes (valid UTF-8: %v), want 288", len(got), utf8.ValidString(got))
	}
	req = EmbedRequest{Inputs: []string{mid}}
	if err := boundInputs(meta, &req, nctx); err == nil || !strings.Contains(err.Error(), "input[0] has 200 bytes") {
		t.Fatalf("truncate off: %v", err)
	}
}

// The embeddings one request returns are bounded (inputs × the model's
// embedding length), before any is computed: an 8 MiB body holds ~2
// million one-token inputs, whose vectors and their JSON would take tens
// of GB with a 2048-wide model.
func TestEmbedValuesBounded(t *testing.T) {
	defer func(v int) { maxEmbedValues = v }(maxEmbedValues)
	maxEmbedValues = 12 // the fake's embeddings have 4 values: 3 inputs fit
	b := newFakeBackend()
	_, ts := newTestServer(t, Config{}, b)
	wantStatus(t, do(t, ts, "POST", "/api/embed", `{"model":"tiny","input":["a","b","c"]}`), 200)
	for _, c := range []struct{ route, body string }{
		{"/api/embed", `{"model":"tiny","input":["a","b","c","d"]}`},
		{"/v1/embeddings", `{"model":"tiny","input":["a","b","c","d"]}`},
		{"/v1/embeddings", `{"model":"tiny","input":[[1],[2],[3],[4]]}`},
	} {
		r := do(t, ts, "POST", c.route, c.body)
		if r.status != 400 || !strings.Contains(string(r.body), "4 inputs of 4 values") || !strings.Contains(string(r.body), "at most 3 inputs") {
			t.Errorf("%s %s: %d %s", c.route, c.body, r.status, r.body)
		}
	}
}

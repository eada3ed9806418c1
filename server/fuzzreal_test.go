package server

import (
	"bytes"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// realFuzzRoutes are every POST route that decodes a body, the Anthropic,
// Responses, rerank and llama-server ones included.
var realFuzzRoutes = []string{"/api/generate", "/api/chat", "/api/show", "/api/embed", "/api/embeddings",
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/rerank", "/v1/responses",
	"/v1/messages", "/v1/messages/count_tokens", "/api/v1/inference/complete", "/api/v1/inference/chat",
	"/completion", "/tokenize", "/detokenize"}

// lockedBuffer is a log sink the handlers write from their goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was logged since the last take.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// FuzzServerRealModel sends any body to every body-decoding route of a
// server over the real runtime backend (stories260K with Qwen3's Jinja
// template, so prompts are tokenized, templates rendered with tools,
// grammars compiled against a real vocabulary and tokens generated). No request may panic
// (recoverRequest would hide it as a 500, or end a stream: the log is
// checked for one), none may outlast the request timeout by much, and
// every answer is JSON, NDJSON or SSE of JSON:
//
//	go test ./server -run '^$' -fuzz '^FuzzServerRealModel$' -fuzztime 60s -parallel 1
func FuzzServerRealModel(f *testing.F) {
	src, err := filepath.Abs(filepath.Join(realModelsDir(f), realModel+".gguf"))
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	if err := os.Symlink(src, filepath.Join(dir, "tiny.gguf")); err != nil {
		f.Fatal(err)
	}
	long := strings.Repeat("Once upon a time ", 40)
	for _, b := range []string{
		`{"model":"tiny","prompt":"Once","stream":false,"options":{"num_predict":4}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stream":true,"options":{"num_predict":3,"top_k":-5,"seed":7}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"logprobs":true,"top_logprobs":3,"n":2}`,
		`{"model":"tiny","prompt":["a","b"],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"echo":true}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":6,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"a":{"type":"integer","minimum":-3,"maximum":9}},"required":["a"]}}}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"format":{"type":"array","items":{"$ref":"#"}},"options":{"num_predict":5}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"grammar":"root ::= [a-z]+ \"!\"","max_tokens":5}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],"tool_choice":"required","max_tokens":8}`,
		`{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"system":"be brief","stop_sequences":["."]}`,
		`{"model":"tiny","input":"Once","max_output_tokens":4,"instructions":"x","text":{"format":{"type":"json_object"}}}`,
		`{"model":"tiny","query":"a","documents":["a","b"],"top_n":1}`,
		`{"model":"tiny","input":["Once","upon"]}`,
		`{"content":"Once upon","add_special":true,"with_pieces":true}`,
		`{"tokens":[1,2,3,-1,99999999]}`,
		`{"prompt":"Once","n_predict":4,"n_probs":2,"cache_prompt":true,"samplers":["top_k","min_p"],"mirostat":2}`,
		`{"model":"tiny","prompt":"` + long + `","options":{"num_ctx":64,"num_predict":2}}`,
		`{"model":"tiny","prompt":"Once","options":{"num_predict":1000000000,"num_ctx":2147483647,"repeat_last_n":-1,"temperature":1e308}}`,
		`{"model":"tiny","prompt":"Once","max_tokens":-1,"n":1000000000,"best_of":-3,"top_p":2,"logit_bias":{"99999999":5,"x":1}}`,
	} {
		for i := range realFuzzRoutes {
			f.Add(uint8(i), b)
		}
	}
	logs := &lockedBuffer{}
	never := time.Duration(-1)
	one := 1
	// Qwen3's own Jinja template (tools, thinking), run through the meter.
	tmpl, err := os.ReadFile(filepath.Join("..", "runtime", "chat", "testdata", "tools", "Qwen-Qwen3-0.6B.jinja"))
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{ModelsDir: dir, Timeout: time.Second, MaxBodyBytes: 1 << 16, Threads: 1,
		Parallel: &one, KeepAlive: &never, ChatTemplate: string(tmpl), Logger: log.New(logs, "", 0)}, RuntimeBackend{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		path := realFuzzRoutes[int(route)%len(realFuzzRoutes)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("%s %q took %v", path, body, d)
		}
		if l := logs.take(); strings.Contains(l, "panic:") {
			t.Fatalf("%s %q: the handler panicked:\n%s", path, body, l)
		}
		out := rec.Body.Bytes()
		if rec.Code >= 400 {
			if !json.Valid(out) {
				t.Fatalf("%s %q: %d with a body that is not JSON: %q", path, body, rec.Code, out)
			}
			return
		}
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimPrefix(line, "data: ")
			if line == "" || line == "[DONE]" || strings.HasPrefix(line, "event: ") {
				continue
			}
			if !json.Valid([]byte(line)) {
				t.Fatalf("%s %q: %d with a line that is not JSON: %q", path, body, rec.Code, line)
			}
		}
	})
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/synth"
)

// newTestServer serves a temp models directory holding tiny.gguf,
// other.gguf and broken.gguf (which fails to load) over a fake backend.
func newTestServer(t *testing.T, cfg Config, b *fakeBackend) (*Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"tiny.gguf": "GGUF tiny", "other.gguf": "GGUF other", "broken.gguf": "broken", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ModelsDir = dir
	return newHTTPTestServer(t, cfg, b)
}

// fakeServer serves a fake model, without a chat template or a script, in
// newTestServer's directory.
func fakeServer(t *testing.T) (*fakeBackend, *httptest.Server) {
	t.Helper()
	b := newFakeBackend()
	_, ts := newTestServer(t, Config{}, b)
	return b, ts
}

// chatTemplate reads a chat template of runtime/chat/testdata (name is
// the path below it, e.g. "tools/Qwen-Qwen3-0.6B.jinja").
func chatTemplate(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "runtime", "chat", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// scriptedServer serves a fake model with the chat template tmpl whose
// every generation is script, and returns the model and a poster of JSON
// bodies (with Anthropic's version header, so every API takes them).
func scriptedServer(t *testing.T, tmpl string, script []string) (*fakeBackend, func(path, body string) resp) {
	t.Helper()
	b := newFakeBackend()
	b.template, b.script = tmpl, script
	_, ts := newTestServer(t, Config{}, b)
	return b, func(path, body string) resp {
		return do(t, ts, "POST", path, body, "anthropic-version", "2023-06-01", "Content-Type", "application/json")
	}
}

// writePresets writes synth's presets names into dir as NAME.gguf (Q8_0,
// seed 1: the files of runtime's test data).
func writePresets(t *testing.T, dir string, names ...string) {
	t.Helper()
	ft, err := quant.ParseFileType("q8_0")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		p, err := synth.FindPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := synth.WriteFile(filepath.Join(dir, name+".gguf"), synth.Options{Preset: p, Type: ft, Seed: 1, Threads: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// overBudget is a script that opens a thought and thinks for 1100 pieces:
// past a budget_tokens of 1024.
func overBudget() []string {
	long := []string{"<think>"}
	for i := 0; i < 1100; i++ {
		long = append(long, " x")
	}
	return long
}

// thinkOverBudget sends an Anthropic request with budget_tokens 1024 to a
// model that thinks past it (overBudget) and answers "Answer." when
// continued; it checks the reply's thinking (the first 1023 pieces) and
// text blocks and returns the continuation's prompt.
func thinkOverBudget(t *testing.T, b *fakeBackend, post func(path, body string) resp) string {
	t.Helper()
	b.scripts = [][]string{overBudget(), {"Answer", "."}}
	m := post("/v1/messages", `{"model":"tiny","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"?"}]}`).json(t)
	c := m["content"].([]any)
	if len(c) != 2 || c[1].(map[string]any)["text"] != "Answer." || c[0].(map[string]any)["thinking"] != strings.TrimSpace(strings.Repeat(" x", 1023)) {
		t.Fatalf("content %v", c)
	}
	return b.last().lastReq().Prompt
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

func do(t *testing.T, ts *httptest.Server, method, path, body string, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

func wantStatus(t *testing.T, r resp, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// wantStream checks a 200 streamed answer of content type ct and n frames
// (split by parse: ndjson or sse) and returns the frames.
func wantStream(t *testing.T, r resp, ct string, parse func(*testing.T, []byte) []map[string]any, n int) []map[string]any {
	t.Helper()
	wantStatus(t, r, 200)
	if got := r.header.Get("Content-Type"); got != ct {
		t.Errorf("content type %q, want %q", got, ct)
	}
	frames := parse(t, r.body)
	if len(frames) != n {
		t.Fatalf("%d frames, want %d: %s", len(frames), n, r.body)
	}
	return frames
}

// ndjson splits an NDJSON body into objects.
func ndjson(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// sse splits an SSE body into its data payloads; it checks the framing and
// that the stream ends with [DONE].
func sse(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	frames := strings.Split(string(b), "\n\n")
	if frames[len(frames)-1] != "" {
		t.Fatalf("stream does not end with a blank line: %q", b)
	}
	frames = frames[:len(frames)-1]
	if len(frames) == 0 || frames[len(frames)-1] != "data: [DONE]" {
		t.Fatalf("stream does not end with data: [DONE]: %q", b)
	}
	return ssePayloads(t, frames[:len(frames)-1])
}

// ssePayloads decodes SSE frames, each one "data: " line of JSON.
func ssePayloads(t *testing.T, frames []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range frames {
		payload, ok := strings.CutPrefix(f, "data: ")
		if !ok {
			t.Fatalf("frame %q lacks data:", f)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRootVersionAndUnknownRoutes(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	r := do(t, ts, "GET", "/", "")
	wantStatus(t, r, 200)
	if string(r.body) != "Woolly is running" {
		t.Errorf("GET / = %q", r.body)
	}
	wantStatus(t, do(t, ts, "HEAD", "/", ""), 200)
	r = do(t, ts, "GET", "/api/version", "")
	wantStatus(t, r, 200)
	if r.json(t)["version"] != "0.14.0" {
		t.Errorf("version %s", r.body)
	}
	r = do(t, ts, "GET", "/nope", "")
	wantStatus(t, r, 404)
	if r.json(t)["error"] == nil {
		t.Errorf("404 body %s", r.body)
	}
	// Unknown /v1 routes: a 404 in OpenAI's shape, whatever the method.
	for _, m := range []string{"GET", "POST", "DELETE"} {
		r = do(t, ts, m, "/v1/responses/x", `{}`)
		wantStatus(t, r, 404)
		e, _ := r.json(t)["error"].(map[string]any)
		if e == nil || e["type"] != "not_found_error" || !strings.Contains(e["message"].(string), "/v1/responses/x") {
			t.Errorf("%s unknown /v1 route: %s", m, r.body)
		}
	}
	r = do(t, ts, "GET", "/api/generate", "")
	wantStatus(t, r, 405)
	if r.header.Get("Allow") != "POST" || r.json(t)["error"] == nil {
		t.Errorf("405: Allow %q body %s", r.header.Get("Allow"), r.body)
	}
	r = do(t, ts, "DELETE", "/v1/models", "")
	wantStatus(t, r, 405)
	if r.json(t)["error"].(map[string]any)["message"] == nil {
		t.Errorf("OpenAI 405 body %s", r.body)
	}
}

func TestOllamaTagsShow(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	r := do(t, ts, "GET", "/api/tags", "")
	wantStatus(t, r, 200)
	var tags struct {
		Models []struct {
			Name, Model, Digest, ModifiedAt string
			Size                            int64
			Details                         map[string]any
		}
	}
	json.Unmarshal(r.body, &tags)
	// broken.gguf is listed too (it is a file of the directory); notes.txt is not.
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "broken:latest,other:latest,tiny:latest" {
		t.Fatalf("names %v", names)
	}
	tiny := tags.Models[2]
	sum := sha256.Sum256([]byte("GGUF tiny"))
	if tiny.Digest != hex.EncodeToString(sum[:]) || tiny.Size != 9 || tiny.Model != "tiny:latest" {
		t.Errorf("tiny: %+v", tiny)
	}
	d := tiny.Details
	if d["format"] != "gguf" || d["family"] != "fakearch" || d["parameter_size"] != "9.3M" || d["quantization_level"] != "Q8_0" {
		t.Errorf("details %v", d)
	}

	r = do(t, ts, "POST", "/api/show", `{"model":"tiny:latest"}`)
	wantStatus(t, r, 200)
	info := r.json(t)["model_info"].(map[string]any)
	if info["general.architecture"] != "fakearch" || info["fakearch.context_length"] != 512.0 {
		t.Errorf("show %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/api/show", `{"model":"missing"}`), 404)
	wantStatus(t, do(t, ts, "POST", "/api/show", `{"model":`), 400)
}

func TestOllamaGenerate(t *testing.T) {
	b, ts := fakeServer(t)

	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"Once upon","stream":false,"options":{"num_predict":3,"temperature":0,"seed":7,"top_k":5,"top_p":0.5,"min_p":0.1,"repeat_penalty":1.2,"stop":["zz"],"num_ctx":128,"num_thread":2}}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	if m["response"] != fakeText(3) || m["done"] != true || m["done_reason"] != "length" || m["eval_count"] != 3.0 || m["prompt_eval_count"] != 2.0 || m["model"] != "tiny" {
		t.Errorf("generate: %s", r.body)
	}
	for _, k := range []string{"total_duration", "load_duration", "prompt_eval_duration", "eval_duration"} {
		if v, ok := m[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v", k, m[k])
		}
	}
	fm := b.last()
	got := fm.lastReq()
	if got.Prompt != "Once upon" || got.MaxTokens != 3 || got.Temperature != 0 || got.Seed != 7 || got.TopK != 5 ||
		got.TopP != 0.5 || got.MinP != 0.1 || got.RepeatPenalty != 1.2 || got.NumCtx != 128 || len(got.Stop) != 1 || fm.threads != 2 {
		t.Errorf("request reached the model as %+v (threads %d)", got, fm.threads)
	}

	// Streaming is the default: one line per token, then the final one.
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny:latest","prompt":"x","options":{"num_predict":4}}`)
	lines := wantStream(t, r, "application/x-ndjson", ndjson, 5)
	var text string
	for _, l := range lines[:4] {
		if l["done"] != false {
			t.Errorf("chunk %v", l)
		}
		text += l["response"].(string)
	}
	last := lines[4]
	if text != fakeText(4) || last["done"] != true || last["done_reason"] != "length" || last["eval_count"] != 4.0 {
		t.Errorf("stream text %q, last %v", text, last)
	}
	// Defaults: until end of generation.
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false}`)
	if m := r.json(t); m["done_reason"] != "stop" || m["response"] != fakeText(5) {
		t.Errorf("default generate %s", r.body)
	}
	if got := fm.lastReq(); got.MaxTokens != -1 || got.Temperature != 0.8 || got.Seed != -1 {
		t.Errorf("defaults %+v", got)
	}
}

func TestOllamaChatAndTemplates(t *testing.T) {
	b, ts := fakeServer(t)
	// No template: ChatML.
	r := do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"options":{"num_predict":2}}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	msg := m["message"].(map[string]any)
	if msg["role"] != "assistant" || msg["content"] != fakeText(2) || m["done"] != true {
		t.Errorf("chat %s", r.body)
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if p := b.last().lastReq().Prompt; p != want {
		t.Errorf("prompt %q, want %q", p, want)
	}
	// Generate on a model without a template sends the prompt as is (tested
	// above); streaming chat:
	r = do(t, ts, "POST", "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":3}}`)
	lines := ndjson(t, r.body)
	if len(lines) != 4 || lines[3]["done"] != true || lines[0]["message"].(map[string]any)["content"] != "w0" {
		t.Errorf("chat stream %s", r.body)
	}

	// A model with a template: Llama 3 (BOS written by the template is
	// removed: the tokenizer adds it).
	b2 := newFakeBackend()
	b2.template = `{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`
	_, ts2 := newTestServer(t, Config{}, b2)
	r = do(t, ts2, "POST", "/api/generate", `{"model":"tiny","prompt":"Hi","system":"S","stream":false,"options":{"num_predict":1}}`)
	wantStatus(t, r, 200)
	want = "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if p := b2.last().lastReq().Prompt; p != want {
		t.Errorf("templated generate prompt %q", p)
	}
	r = do(t, ts2, "POST", "/api/generate", `{"model":"tiny","prompt":"Hi","raw":true,"stream":false,"options":{"num_predict":1}}`)
	if p := b2.last().lastReq().Prompt; p != "Hi" {
		t.Errorf("raw prompt %q", p)
	}

	// A template that raises: 400 with its message.
	b3 := newFakeBackend()
	b3.template = `{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}`
	_, ts3 := newTestServer(t, Config{}, b3)
	r = do(t, ts3, "POST", "/api/chat", `{"model":"tiny","messages":[{"role":"system","content":"x"},{"role":"user","content":"y"}]}`)
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), "System role not supported") {
		t.Errorf("template error body %s", r.body)
	}
}

func TestOllamaBadRequests(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"model":"tiny","prompt":`, 400},
		{``, 400},
		{`[1,2]`, 400},
		{`{"model":"tiny","prompt":"x","options":{"temperature":"hot"}}`, 400},
		{`{"model":"tiny","prompt":"x","options":{"temperature":-1}}`, 400},
		{`{"model":"tiny","prompt":"x","options":{"top_p":2}}`, 400},
		{`{"model":"tiny","prompt":"x","options":{"num_predict":0}}`, 400},
		{`{"model":"tiny","prompt":"x","keep_alive":"soon"}`, 400},
		{`{"model":"tiny","prompt":"x","format":"xml"}`, 400},
		{`{"model":"missing","prompt":"x"}`, 404},
		{`{"model":"tiny:7b","prompt":"x"}`, 404},
		{`{"model":"../tiny","prompt":"x"}`, 400},
		{`{"model":"/etc/passwd","prompt":"x"}`, 400},
		{`{"model":"a/b","prompt":"x"}`, 400},
		{`{"model":"..","prompt":"x"}`, 400},
		{`{"model":"","prompt":"x"}`, 400},
		{`{"model":"broken","prompt":"x"}`, 500},
	} {
		r := do(t, ts, "POST", "/api/generate", c.body)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.body, r.status, c.status, r.body)
			continue
		}
		if _, ok := r.json(t)["error"].(string); !ok {
			t.Errorf("%s: error body %s", c.body, r.body)
		}
	}
}

func TestKeepAliveLoadUnloadPS(t *testing.T) {
	b, ts := fakeServer(t)
	// An empty prompt loads the model.
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny"}`)
	wantStatus(t, r, 200)
	if r.json(t)["done_reason"] != "load" || b.loaded() != 1 {
		t.Fatalf("load: %s, %d loaded", r.body, b.loaded())
	}
	r = do(t, ts, "GET", "/api/ps", "")
	var ps struct{ Models []map[string]any }
	json.Unmarshal(r.body, &ps)
	if len(ps.Models) != 1 || ps.Models[0]["name"] != "tiny:latest" || ps.Models[0]["expires_at"] == nil {
		t.Fatalf("ps %s", r.body)
	}
	// keep_alive 0 without a prompt unloads.
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","keep_alive":0}`)
	if r.json(t)["done_reason"] != "unload" || b.loaded() != 0 {
		t.Fatalf("unload: %s, %d loaded", r.body, b.loaded())
	}
	// keep_alive 0 with a prompt: unloaded after the answer.
	do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"keep_alive":"0s","messages":[{"role":"user","content":"x"}]}`)
	if b.loaded() != 0 {
		t.Fatal("keep_alive 0 left the model loaded")
	}
	// A short keep-alive expires.
	do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"keep_alive":"50ms"}`)
	if b.loaded() != 1 {
		t.Fatal("model not loaded")
	}
	deadline := time.Now().Add(2 * time.Second)
	for b.loaded() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if b.loaded() != 0 {
		t.Fatal("keep_alive 50ms: model still loaded")
	}
	// Numbers are seconds; negative keeps it.
	do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"keep_alive":-1}`)
	r = do(t, ts, "GET", "/api/ps", "")
	json.Unmarshal(r.body, &ps)
	if len(ps.Models) != 1 {
		t.Fatalf("ps %s", r.body)
	}
}

func TestOpenAIChat(t *testing.T) {
	b, ts := fakeServer(t)
	r := do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"developer","content":"S"},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"!"}]}],"max_tokens":3,"temperature":0.5,"top_p":0.9,"stop":"zz","seed":3,"frequency_penalty":0.5,"presence_penalty":-0.5}`)
	wantStatus(t, r, 200)
	var c struct {
		ID, Object, Model string
		Created           int64
		Choices           []struct {
			Index        int
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct{ PromptTokens, CompletionTokens, TotalTokens int } `json:"usage"`
	}
	json.Unmarshal(r.body, &c)
	if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Model != "tiny" || c.Created == 0 ||
		len(c.Choices) != 1 || c.Choices[0].Message.Content != fakeText(3) || c.Choices[0].Message.Role != "assistant" ||
		c.Choices[0].FinishReason != "length" {
		t.Errorf("chat completion %s", r.body)
	}
	var u map[string]map[string]float64
	json.Unmarshal(r.body, &u)
	if u["usage"]["completion_tokens"] != 3 || u["usage"]["total_tokens"] != u["usage"]["prompt_tokens"]+3 {
		t.Errorf("usage %v", u["usage"])
	}
	got := b.last().lastReq()
	if got.Prompt != "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n" ||
		got.Temperature != 0.5 || got.TopP != 0.9 || got.Seed != 3 || len(got.Stop) != 1 || got.Stop[0] != "zz" ||
		got.FrequencyPenalty != 0.5 || got.PresencePenalty != -0.5 {
		t.Errorf("request %+v", got)
	}

	// Streaming with usage.
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny:latest","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":2,"stream":true,"stream_options":{"include_usage":true},"stop":["a","b"]}`)
	frames := wantStream(t, r, "text/event-stream", sse, 4)
	d0 := frames[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	d1 := frames[1]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if d0["role"] != "assistant" || d0["content"] != "w0" || d1["role"] != nil || d1["content"] != " w1" {
		t.Errorf("deltas %v %v", d0, d1)
	}
	lastChoice := frames[2]["choices"].([]any)[0].(map[string]any)
	if lastChoice["finish_reason"] != "length" || len(lastChoice["delta"].(map[string]any)) != 0 {
		t.Errorf("final chunk %v", frames[2])
	}
	if frames[3]["usage"].(map[string]any)["completion_tokens"] != 2.0 || len(frames[3]["choices"].([]any)) != 0 {
		t.Errorf("usage chunk %v", frames[3])
	}
	for _, f := range frames {
		if f["object"] != "chat.completion.chunk" || f["id"] != frames[0]["id"] {
			t.Errorf("frame %v", f)
		}
	}
	// Explicit nulls are absent values.
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":null,"stop":null,"temperature":null,"stream_options":null,"seed":null}`)
	wantStatus(t, r, 200)
	// Without include_usage there is no usage chunk.
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"stream":true}`)
	if frames := sse(t, r.body); len(frames) != 2 {
		t.Errorf("frames %s", r.body)
	}

	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"model":"tiny","messages":[]}`, 400},
		{`{"model":"tiny","messages":[{"role":"user","content":"x"}],"n":2}`, 400},
		{`{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400},
		{`{"model":"tiny","messages":[{"role":"user","content":"x"}],"stop":5}`, 400},
		{`{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400},
		{`{"model":"tiny","messages":[{"role":"user","content":"x"}],"presence_penalty":3}`, 400},
		{`{"messages":[{"role":"user","content":"x"}]}`, 400},
		{`{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404},
		{`{"model":`, 400},
	} {
		r := do(t, ts, "POST", "/v1/chat/completions", c.body)
		if r.status != c.status {
			t.Errorf("%s: %d, want %d (%s)", c.body, r.status, c.status, r.body)
			continue
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if e == nil || e["message"] == "" || e["type"] == nil {
			t.Errorf("%s: error body %s", c.body, r.body)
		}
	}
}

func TestOpenAICompletionsAndModels(t *testing.T) {
	b, ts := fakeServer(t)
	r := do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":"Once"}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	ch := m["choices"].([]any)[0].(map[string]any)
	if m["object"] != "text_completion" || ch["text"] != fakeText(16) || ch["finish_reason"] != "length" {
		t.Errorf("completion %s", r.body)
	}
	if b.last().lastReq().Prompt != "Once" {
		t.Errorf("prompt %q", b.last().lastReq().Prompt)
	}
	r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":["Once"],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`)
	frames := sse(t, r.body)
	if len(frames) != 4 || frames[0]["choices"].([]any)[0].(map[string]any)["text"] != "w0" ||
		frames[2]["choices"].([]any)[0].(map[string]any)["finish_reason"] != "length" || frames[3]["usage"] == nil {
		t.Errorf("completion stream %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":[["a"]]}`), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/completions", `{"model":"tiny"}`), 400)

	r = do(t, ts, "GET", "/v1/models", "")
	wantStatus(t, r, 200)
	var list struct {
		Object string
		Data   []struct{ ID, Object, OwnedBy string }
	}
	json.Unmarshal(r.body, &list)
	if list.Object != "list" || len(list.Data) != 3 || list.Data[2].ID != "tiny" || list.Data[2].Object != "model" {
		t.Errorf("models %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/models/tiny", ""), 200)
	wantStatus(t, do(t, ts, "GET", "/v1/models/nope", ""), 404)
}

func TestOle(t *testing.T) {
	b := newFakeBackend()
	_, ts := newTestServer(t, Config{APIKey: "k"}, b)
	auth := []string{"Authorization", "Bearer k"}
	r := do(t, ts, "GET", "/api/v1/health", "") // open without the key
	wantStatus(t, r, 200)
	if h := r.json(t); h["status"] != "ok" || h["service"] != "woolly-server" || h["version"] != Version || h["timestamp"] == nil {
		t.Errorf("health %s", r.body)
	}
	r = do(t, ts, "GET", "/api/v1/models", "", auth...)
	wantStatus(t, r, 200)
	var bare []map[string]any
	if err := json.Unmarshal(r.body, &bare); err != nil || len(bare) != 3 {
		t.Fatalf("bare list %s", r.body)
	}
	tiny := bare[2]
	if tiny["name"] != "tiny" || tiny["path"] != "tiny.gguf" || tiny["loaded"] != false || tiny["size_bytes"] != 9.0 ||
		tiny["parameters"] != 9.3e6 || tiny["architecture"] != "fakearch" || tiny["context_length"] != 512.0 ||
		tiny["description"] != nil || tiny["metadata"].(map[string]any)["quantization"] != "Q8_0" {
		t.Errorf("model object %v", tiny)
	}
	for _, h := range [][]string{{"X-Ole-Client", "1"}, {"User-Agent", "Ole/2.1"}} {
		r = do(t, ts, "GET", "/api/v1/models", "", append(auth, h...)...)
		m := r.json(t)
		if m["success"] != true || len(m["data"].([]any)) != 3 {
			t.Errorf("wrapped list (%v) %s", h, r.body)
		}
	}

	wantStatus(t, do(t, ts, "POST", "/api/v1/models/tiny/load", `{"path":"/etc/passwd"}`, auth...), 400)
	r = do(t, ts, "POST", "/api/v1/models/nope/load", "", auth...)
	wantStatus(t, r, 404)
	if m := r.json(t); m["success"] != false || m["message"] == "" {
		t.Errorf("404 body %s", r.body)
	}
	r = do(t, ts, "POST", "/api/v1/models/tiny/load", `{"config":{}}`, auth...)
	wantStatus(t, r, 200)
	if m := r.json(t); m["success"] != true || m["message"] != "Model 'tiny' loaded successfully" || m["model_info"].(map[string]any)["loaded"] != true {
		t.Errorf("load %s", r.body)
	}

	// The loaded model is the default.
	r = do(t, ts, "POST", "/api/v1/inference/complete", `{"prompt":"Once","max_tokens":3,"temperature":0.1,"top_k":3,"top_p":0.5,"repetition_penalty":1.1,"stop_sequences":["zz"]}`, auth...)
	wantStatus(t, r, 200)
	m := r.json(t)
	ch := m["choices"].([]any)[0].(map[string]any)
	if m["object"] != "text_completion" || m["model"] != "tiny" || ch["text"] != fakeText(3) || ch["message"] != nil ||
		ch["finish_reason"] != "length" || m["usage"].(map[string]any)["completion_tokens"] != 3.0 {
		t.Errorf("complete %s", r.body)
	}
	if got := b.last().lastReq(); got.TopK != 3 || got.RepeatPenalty != 1.1 || got.Stop[0] != "zz" {
		t.Errorf("request %+v", got)
	}
	r = do(t, ts, "POST", "/api/v1/inference/chat", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":2}`, auth...)
	m = r.json(t)
	ch = m["choices"].([]any)[0].(map[string]any)
	if m["object"] != "chat.completion" || ch["text"] != nil || ch["message"].(map[string]any)["content"] != fakeText(2) {
		t.Errorf("chat %s", r.body)
	}
	for _, path := range []string{"/api/v1/inference/chat", "/api/v1/inference/complete"} {
		r = do(t, ts, "POST", path, `{"model":"tiny","prompt":"x","messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"stream":true}`, auth...)
		frames := sse(t, r.body)
		if len(frames) != 3 {
			t.Fatalf("%s: %s", path, r.body)
		}
		d0 := frames[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		fin := frames[2]["choices"].([]any)[0].(map[string]any)
		if frames[0]["object"] != "chat.completion.chunk" || d0["role"] != "assistant" || d0["content"] != "w0" ||
			fin["finish_reason"] != "length" || len(fin["delta"].(map[string]any)) != 0 {
			t.Errorf("%s stream %s", path, r.body)
		}
	}
	wantStatus(t, do(t, ts, "POST", "/api/v1/inference/chat", `{"model":"tiny","messages":[]}`, auth...), 400)
	wantStatus(t, do(t, ts, "POST", "/api/v1/inference/complete", `{"model":"nope","prompt":"x"}`, auth...), 404)
	wantStatus(t, do(t, ts, "POST", "/api/v1/inference/complete", `{"prompt":"x"}`), 401)
}

func TestOleDefaultModelNeedsOne(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	r := do(t, ts, "POST", "/api/v1/inference/complete", `{"prompt":"x"}`)
	wantStatus(t, r, 400) // three models, none loaded
}

func TestAuthCORSAndBodyLimit(t *testing.T) {
	_, ts := newTestServer(t, Config{APIKey: "secret", CORSOrigins: []string{"http://app.example"}, MaxBodyBytes: 64}, newFakeBackend())
	r := do(t, ts, "GET", "/api/tags", "")
	wantStatus(t, r, 401)
	if r.header.Get("WWW-Authenticate") == "" || r.json(t)["error"] == nil {
		t.Errorf("401 %v %s", r.header, r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/api/tags", "", "Authorization", "Bearer wrong"), 401)
	wantStatus(t, do(t, ts, "GET", "/v1/models", "", "Authorization", "Bearer secret"), 200)
	wantStatus(t, do(t, ts, "GET", "/v1/models", "", "X-Api-Key", "secret"), 200)
	wantStatus(t, do(t, ts, "GET", "/", ""), 401)
	wantStatus(t, do(t, ts, "GET", "/metrics", ""), 200)
	wantStatus(t, do(t, ts, "GET", "/api/v1/health", ""), 200)
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny"}`)
	wantStatus(t, r, 401)
	if r.json(t)["error"].(map[string]any)["type"] != "authentication_error" {
		t.Errorf("OpenAI 401 %s", r.body)
	}

	// CORS: the configured origin only; preflight needs no key.
	r = do(t, ts, "OPTIONS", "/api/chat", "", "Origin", "http://app.example", "Access-Control-Request-Method", "POST")
	wantStatus(t, r, 204)
	if r.header.Get("Access-Control-Allow-Origin") != "http://app.example" || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight headers %v", r.header)
	}
	// The official JS SDKs in a browser (dangerouslyAllowBrowser) send their
	// x-stainless-* headers, Anthropic's its direct-browser-access header:
	// the preflight allows the headers an allowed origin asks for.
	asked := "content-type, authorization, x-stainless-os, x-stainless-retry-count, anthropic-dangerous-direct-browser-access"
	r = do(t, ts, "OPTIONS", "/v1/messages", "", "Origin", "http://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", asked)
	wantStatus(t, r, 204)
	allowed := map[string]bool{}
	for _, h := range strings.Split(r.header.Get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, h := range strings.Split(asked, ", ") {
		if !allowed[h] {
			t.Errorf("preflight does not allow %q: %v", h, r.header)
		}
	}
	r = do(t, ts, "OPTIONS", "/v1/messages", "", "Origin", "http://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "x-ok, bad header, x-\"q\"")
	if ah := r.header.Get("Access-Control-Allow-Headers"); strings.Contains(ah, "bad") || strings.Contains(ah, `"`) || !strings.Contains(ah, "x-ok") {
		t.Errorf("a malformed header name was allowed: %v", r.header)
	}
	r = do(t, ts, "OPTIONS", "/api/chat", "", "Origin", "http://evil.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "x-stainless-os")
	if r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("evil origin allowed: %v", r.header)
	}
	r = do(t, ts, "GET", "/v1/models", "", "Origin", "http://app.example", "X-Api-Key", "secret")
	if r.header.Get("Access-Control-Allow-Origin") != "http://app.example" {
		t.Errorf("CORS header missing: %v", r.header)
	}

	big := `{"model":"tiny","prompt":"` + strings.Repeat("x", 100) + `"}`
	r = do(t, ts, "POST", "/api/generate", big, "X-Api-Key", "secret")
	wantStatus(t, r, 413)
	if r.json(t)["error"] == nil {
		t.Errorf("413 body %s", r.body)
	}
}

// --parallel P: P generations run at once on one model, the next waits in
// the queue, and past --max-queue the rest get 503; with P = 1 one at a time.
func TestQueueFull503AndParallelSlots(t *testing.T) {
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallel=%d", par), func(t *testing.T) {
			b := newFakeBackend()
			b.gate = make(chan struct{})
			_, ts := newTestServer(t, Config{MaxQueue: runtime.Ptr(1), Parallel: runtime.Ptr(par)}, b)
			// Load first so the queue holds generation waits only.
			wantStatus(t, do(t, ts, "POST", "/api/generate", `{"model":"tiny"}`), 200)
			var wg sync.WaitGroup
			results := make([]int, par+1)
			for i := range par + 1 {
				wg.Go(func() {
					results[i] = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":1}}`).status
				})
				// The first par are generating (held at the gate), the last waits.
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) {
					if (i < par && b.last().running.Load() == int32(i+1)) || (i == par && queueDepth(t, ts) == 1) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false}`)
			wantStatus(t, r, 503)
			r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":"x"}`)
			wantStatus(t, r, 503)
			for range par + 1 {
				b.gate <- struct{}{}
			}
			wg.Wait()
			for i, st := range results {
				if st != 200 {
					t.Errorf("request %d: status %d", i, st)
				}
			}
			if mx := b.last().maxRun.Load(); mx != int32(par) {
				t.Errorf("%d generations ran at once on one model, want %d", mx, par)
			}
		})
	}
}

func TestNoQueue(t *testing.T) {
	// --max-queue 0: nobody waits, but a free model still answers.
	_, ts := newTestServer(t, Config{MaxQueue: runtime.Ptr(0)}, newFakeBackend())
	for range 2 {
		wantStatus(t, do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false}`), 200)
	}
}

func queueDepth(t *testing.T, ts *httptest.Server) int {
	r := do(t, ts, "GET", "/metrics", "")
	for _, line := range strings.Split(string(r.body), "\n") {
		if v, ok := strings.CutPrefix(line, "woolly_queue_depth "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("woolly_queue_depth %q", v)
			}
			return n
		}
	}
	return -1
}

func TestTimeout503(t *testing.T) {
	b := newFakeBackend()
	b.delay = 20 * time.Millisecond
	_, ts := newTestServer(t, Config{Timeout: 100 * time.Millisecond}, b)
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":1000}}`)
	wantStatus(t, r, 503)
	if !strings.Contains(r.json(t)["error"].(string), "timed out") {
		t.Errorf("timeout body %s", r.body)
	}
	// Streaming: the stream ends with an error line.
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","options":{"num_predict":1000}}`)
	lines := ndjson(t, r.body)
	if len(lines) == 0 || lines[len(lines)-1]["error"] == nil {
		t.Errorf("stream after timeout: %s", r.body)
	}
}

func TestClientDisconnectCancelsGeneration(t *testing.T) {
	b := newFakeBackend()
	b.delay = 10 * time.Millisecond
	_, ts := newTestServer(t, Config{}, b)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"tiny","messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":100000}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	m := b.last()
	cancel()
	res.Body.Close()
	atCancel := m.produced.Load()
	deadline := time.Now().Add(2 * time.Second)
	for m.running.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if m.running.Load() != 0 {
		t.Fatal("generation still running 2s after the client left")
	}
	// Within one token (plus the one being produced while the cancel arrived).
	if extra := m.produced.Load() - atCancel; extra > 2 {
		t.Errorf("%d tokens generated after the client left", extra)
	}
}

func TestMetrics(t *testing.T) {
	s, ts := newTestServer(t, Config{}, newFakeBackend())
	s.RegisterStats("cache", func() map[string]float64 { return map[string]float64{"hits": 7, "bytes-used": 1024} })
	do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"a b c","stream":false,"options":{"num_predict":4}}`)
	do(t, ts, "POST", "/api/generate", `{"model":"nope","prompt":"x"}`)
	r := do(t, ts, "GET", "/metrics", "")
	wantStatus(t, r, 200)
	body := string(r.body)
	for _, want := range []string{
		`woolly_http_requests_total{code="200",route="/api/generate"} 1`,
		`woolly_http_requests_total{code="404",route="/api/generate"} 1`,
		`woolly_prompt_tokens_total{model="tiny"} 3`,
		`woolly_generated_tokens_total{model="tiny"} 4`,
		`woolly_generation_tokens_per_second_count{model="tiny"} 1`,
		`woolly_queue_depth 0`,
		`woolly_models_loaded 1`,
		`woolly_cache_hits 7`,
		`woolly_cache_bytes_used 1024`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := New(Config{}, newFakeBackend()); err == nil {
		t.Error("no models dir accepted")
	}
	if _, err := New(Config{ModelsDir: "/nonexistent/dir"}, newFakeBackend()); err == nil {
		t.Error("missing models dir accepted")
	}
}

func TestStatsMap(t *testing.T) {
	type inner struct {
		Hits      int64
		PeakBytes int64
		HitRate   float64
		LoadTime  time.Duration
		//lint:ignore U1000 an unexported field, which StatsMap must skip
		note string
	}
	type outer struct {
		inner
		Prefetches uint32
		On         bool
		LastError  string
		TTLMs      int
	}
	got := StatsMap(&outer{inner: inner{Hits: 3, PeakBytes: 10, HitRate: 0.5, LoadTime: 1500 * time.Millisecond}, Prefetches: 2, On: true, TTLMs: 7})
	want := map[string]float64{"hits": 3, "peak_bytes": 10, "hit_rate": 0.5, "load_time_seconds": 1.5, "prefetches": 2, "on": 1, "ttl_ms": 7}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if m := StatsMap(42); len(m) != 0 {
		t.Errorf("non-struct: %v", m)
	}
}

// A panic while a request generates (a bug: the runtime raises a kernel's
// misuse on the request's goroutine) answers that request with a 500 in
// its API's error shape, and the server goes on serving.
func TestHandlerPanicIs500(t *testing.T) {
	b, ts := fakeServer(t)
	b.panics.Store("kernels.MatVec: y has 3 entries, rows up to 4\n\ngoroutine 7 [running]: ...")
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false}`)
	if r.status != http.StatusInternalServerError {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	if msg, _ := r.json(t)["error"].(string); msg != "internal error: kernels.MatVec: y has 3 entries, rows up to 4" {
		t.Fatalf("error %q", msg)
	}
	r = do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}]}`)
	if r.status != http.StatusInternalServerError || !strings.Contains(string(r.body), `"type":"server_error"`) {
		t.Fatalf("openai: status %d, body %s", r.status, r.body)
	}
	b.panics.Store("")
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false}`)
	if r.status != http.StatusOK {
		t.Fatalf("after the panics: status %d, body %s", r.status, r.body)
	}
}

// The error type each family's body names for a status: a named status,
// another 5xx, and anything else.
func TestErrorBodyTypes(t *testing.T) {
	for _, c := range []struct {
		fam    family
		status int
		want   string
	}{
		{famOpenAI, 401, "authentication_error"}, {famOpenAI, 404, "not_found_error"},
		{famOpenAI, 503, "server_error"}, {famOpenAI, 500, "server_error"},
		{famOpenAI, 400, "invalid_request_error"}, {famOpenAI, 429, "invalid_request_error"},
		{famAnthropic, 401, "authentication_error"}, {famAnthropic, 403, "permission_error"},
		{famAnthropic, 404, "not_found_error"}, {famAnthropic, 413, "request_too_large"},
		{famAnthropic, 429, "rate_limit_error"}, {famAnthropic, 503, "overloaded_error"},
		{famAnthropic, 500, "api_error"}, {famAnthropic, 400, "invalid_request_error"},
	} {
		b := errorBody(c.fam, c.status, "m").(map[string]any)
		if got := b["error"].(map[string]any)["type"]; got != c.want {
			t.Errorf("family %v status %d: type %v, want %s", c.fam, c.status, got, c.want)
		}
	}
}

// scrape reads /metrics and returns the value of every unlabelled series
// plus vllm:cache_config_info's num_gpu_blocks label (as "num_gpu_blocks").
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	st, body := get(t, url+"/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "vllm:cache_config_info{") {
			i := strings.Index(line, `num_gpu_blocks="`)
			rest := line[i+len(`num_gpu_blocks="`):]
			v, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			out["num_gpu_blocks"] = v
			continue
		}
		f := strings.Fields(line)
		if len(f) == 2 && !strings.Contains(f[0], "{") {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			out[f[0]] = v
		}
	}
	return out
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b := new(strings.Builder)
	if _, err := bufio.NewReader(r.Body).WriteTo(b); err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, []byte(b.String())
}

// waitFor polls /metrics until ok holds, failing after 5 s with the last scrape.
func waitFor(t *testing.T, url, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	var m map[string]float64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if m = scrape(t, url); ok(m) {
			return m
		}
	}
	t.Fatalf("waiting for %s: last scrape waiting=%v running=%v kv=%v", what,
		m["vllm:num_requests_waiting"], m["vllm:num_requests_running"], m["vllm:kv_cache_usage_perc"])
	return nil
}

func readyz(t *testing.T, url string) int {
	t.Helper()
	st, _ := get(t, url+"/readyz")
	return st
}

func words(n int) string { return strings.TrimSpace(strings.Repeat("x ", n)) }

// TestGatewayMetrics drives the server under load with a fake backend whose
// loads and generations block, and checks the model server protocol's
// gauges (queued, running, KV-cache utilization) and /readyz against what
// the server is doing.
func TestGatewayMetrics(t *testing.T) {
	b := newFakeBackend()
	b.gate = make(chan struct{})
	b.delay = 20 * time.Millisecond // per generated token, once past the gate
	b.loadGate = make(chan struct{})
	const par, queue = 2, 2
	_, ts := newTestServer(t, Config{Parallel: runtime.Ptr(par), MaxQueue: runtime.Ptr(queue)}, b)
	url := ts.URL
	// On failure, unblock every load and generation so the server can close.
	t.Cleanup(func() {
		close(b.gate)
		close(b.loadGate)
	})

	if st := readyz(t, url); st != 200 {
		t.Fatalf("idle /readyz %d, want 200", st)
	}
	if st, _ := get(t, url+"/livez"); st != 200 {
		t.Fatalf("/livez %d", st)
	}
	m := scrape(t, url)
	for _, k := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"} {
		if v, ok := m[k]; !ok || v != 0 {
			t.Errorf("idle %s = %v (present %v), want 0", k, v, ok)
		}
	}
	if _, ok := m["woolly_queue_depth"]; !ok {
		t.Error("woolly_queue_depth is gone")
	}

	var wg sync.WaitGroup
	codes := make(chan int, 8)
	send := func(prompt string, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body := post(t, url+"/api/generate", fmt.Sprintf(`{"model":"tiny","prompt":%q,"raw":true,"stream":false,"options":{"num_predict":%d}}`, prompt, n))
			if st != 200 && st != 503 {
				t.Errorf("generate: %d %s", st, body)
			}
			codes <- st
		}()
	}

	// The first request loads the model: not ready, one waiting, none running.
	send(words(100), 40)
	waitFor(t, url, "the loading request to queue", func(m map[string]float64) bool { return m["vllm:num_requests_waiting"] == 1 })
	if st := readyz(t, url); st != 503 {
		t.Errorf("/readyz while loading: %d, want 503", st)
	}
	if m := scrape(t, url); m["vllm:num_requests_running"] != 0 || m["woolly_ready"] != 0 {
		t.Errorf("while loading: running %v ready %v", m["vllm:num_requests_running"], m["woolly_ready"])
	}
	b.loadGate <- struct{}{}

	// Two run (held at the gate), two queue: the gauges read 2 and 2, the
	// queue is full so /readyz says 503, and the KV holds both prompts.
	waitFor(t, url, "one running", func(m map[string]float64) bool { return m["vllm:num_requests_running"] == 1 })
	if st := readyz(t, url); st != 200 {
		t.Errorf("/readyz with a free slot: %d, want 200", st)
	}
	send(words(28), 40)
	waitFor(t, url, "two running", func(m map[string]float64) bool { return m["vllm:num_requests_running"] == 2 })
	send(words(10), 5)
	send(words(10), 5)
	m = waitFor(t, url, "2 running, 2 waiting", func(m map[string]float64) bool {
		return m["vllm:num_requests_running"] == par && m["vllm:num_requests_waiting"] == queue
	})
	capTokens := float64(par * 512) // Parallel x the fake's DefaultCtx
	if got, want := m["vllm:kv_cache_usage_perc"], 128/capTokens; got != want || m["vllm:gpu_cache_usage_perc"] != want || m["woolly_kv_cache_usage_ratio"] != want {
		t.Errorf("KV utilization %v (gpu_cache %v), want %v", got, m["vllm:gpu_cache_usage_perc"], want)
	}
	if m["num_gpu_blocks"] != capTokens/kvBlockTokens {
		t.Errorf("num_gpu_blocks %v, want %v", m["num_gpu_blocks"], capTokens/kvBlockTokens)
	}
	if m["woolly_queue_depth"] != queue {
		t.Errorf("woolly_queue_depth %v", m["woolly_queue_depth"])
	}
	if st := readyz(t, url); st != 503 {
		t.Errorf("/readyz with the queue full: %d, want 503", st)
	}
	if st, _ := get(t, url+"/livez"); st != 200 {
		t.Errorf("/livez with the queue full: %d, want 200", st)
	}
	send(words(5), 5) // refused: the queue is full
	if st := <-codes; st != 503 {
		t.Errorf("request past the full queue: %d, want 503", st)
	}

	// Let one generation run slowly: the KV fills with its tokens.
	before := m["vllm:kv_cache_usage_perc"]
	b.gate <- struct{}{}
	waitFor(t, url, "KV to grow with generated tokens", func(m map[string]float64) bool {
		return m["vllm:kv_cache_usage_perc"] > before+5/capTokens
	})

	// Release everything: back to 0, 0, 0 and ready.
	for range 3 {
		b.gate <- struct{}{}
	}
	wg.Wait()
	m = scrape(t, url)
	for _, k := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"} {
		if m[k] != 0 {
			t.Errorf("after the load %s = %v, want 0", k, m[k])
		}
	}
	if st := readyz(t, url); st != 200 || m["woolly_ready"] != 1 {
		t.Errorf("after the load /readyz %d woolly_ready %v, want 200 and 1", st, m["woolly_ready"])
	}
}

// TestRuntimeKVTokens: the runtime backend's KV count holds the prompt's
// tokens plus one per generated token while a generation runs, and nothing
// once it ended.
func TestRuntimeKVTokens(t *testing.T) {
	dir := realModelsDir(t)
	m, err := RuntimeBackend{}.Load(filepath.Join(dir, realModel+".gguf"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	k, ok := m.(KVReporter)
	if !ok {
		t.Fatal("the runtime model does not implement KVReporter")
	}
	var seen []int64
	req := GenerateRequest{Prompt: "Once upon a time there was a little girl", MaxTokens: 12}
	req.Temperature = 0 // greedy
	res, err := m.Generate(context.Background(), req, func(string) error {
		seen = append(seen, k.KVTokens())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || len(seen) != res.Tokens {
		t.Fatalf("%d callbacks for %d tokens", len(seen), res.Tokens)
	}
	for i, v := range seen {
		if want := int64(res.PromptTokens + i + 1); v != want {
			t.Errorf("token %d: KV holds %d positions, want %d (prompt %d + generated)", i, v, want, res.PromptTokens)
		}
	}
	if v := k.KVTokens(); v != 0 {
		t.Errorf("after the generation the KV count is %d, want 0", v)
	}
}

package server

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestThinkSplitter(t *testing.T) {
	cases := []struct{ in, thinking, content string }{
		{"<think>\nplan it\n</think>\n\nThe answer.", "plan it", "The answer."},
		{"  <think>a</think>b", "a", "b"},
		{"<think>\n\n</think>\n\nHi", "", "Hi"},
		{"no tags here <think>x</think>", "", "no tags here <think>x</think>"},
		{"<thin", "", "<thin"},
		{"<think>unfinished", "unfinished", ""},
		{"<think>a</thi", "a</thi", ""},
		{"", "", ""},
		{"<think>x</think>", "x", ""},
		{"<think>1 < 2 and </th is not a tag</think> ok", "1 < 2 and </th is not a tag", "ok"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		th, co := splitThinking(c.in)
		if th != c.thinking || co != c.content {
			t.Errorf("split(%q) = %q, %q; want %q, %q", c.in, th, co, c.thinking, c.content)
		}
		// Any cut of the text into pieces gives the same parts.
		for trial := 0; trial < 50; trial++ {
			var sp thinkSplitter
			var gotT, gotC strings.Builder
			rest := c.in
			for rest != "" {
				n := 1 + rng.IntN(min(len(rest), 5))
				a, b := sp.feed(rest[:n])
				gotT.WriteString(a)
				gotC.WriteString(b)
				rest = rest[n:]
			}
			a, b := sp.flush()
			gotT.WriteString(a)
			gotC.WriteString(b)
			if gotT.String() != c.thinking || gotC.String() != c.content {
				t.Fatalf("pieces of %q: %q, %q; want %q, %q", c.in, gotT.String(), gotC.String(), c.thinking, c.content)
			}
		}
	}
}

func TestParseThink(t *testing.T) {
	for in, want := range map[string]string{"": "nil", "null": "nil", "true": "true", "false": "false", `"high"`: "true", `"low"`: "true"} {
		b, err := parseThink([]byte(in))
		got := "nil"
		if b != nil {
			got = map[bool]string{true: "true", false: "false"}[*b]
		}
		if err != nil || got != want {
			t.Errorf("parseThink(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`"maybe"`, `1`, `{}`} {
		if _, err := parseThink([]byte(in)); err == nil {
			t.Errorf("parseThink(%s): no error", in)
		}
	}
}

// qwen3Tmpl is the part of Qwen3's template that matters here: ChatML and the
// enable_thinking switch.
const qwen3Tmpl = `{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{%- endif %}`

func TestOllamaThink(t *testing.T) {
	b := newFakeBackend()
	b.template = qwen3Tmpl
	b.script = []string{"<th", "ink>\nLet me", " see.\n</thi", "nk>\n\n", "Four."} // 5 pieces: the fake's default length
	_, ts := newTestServer(t, Config{}, b)

	// think true: the reasoning apart, not streamed.
	r := do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"think":true,"messages":[{"role":"user","content":"2+2?"}]}`)
	wantStatus(t, r, 200)
	msg := r.json(t)["message"].(map[string]any)
	if msg["thinking"] != "Let me see." || msg["content"] != "Four." {
		t.Errorf("think true: %s", r.body)
	}
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<|im_start|>assistant\n") {
		t.Errorf("think true prompt %q", p)
	}
	// Streamed: the chunks' thinking and content add up to the same parts.
	r = do(t, ts, "POST", "/api/chat", `{"model":"tiny","think":true,"messages":[{"role":"user","content":"2+2?"}]}`)
	var th, co strings.Builder
	for _, l := range ndjson(t, r.body) {
		m := l["message"].(map[string]any)
		th.WriteString(m["thinking"].(string))
		co.WriteString(m["content"].(string))
	}
	if th.String() != "Let me see." || co.String() != "Four." {
		t.Errorf("streamed think: %q %q\n%s", th.String(), co.String(), r.body)
	}
	// Generate puts it in "thinking" beside "response".
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","stream":false,"think":true,"prompt":"2+2?"}`)
	m := r.json(t)
	if m["thinking"] != "Let me see." || m["response"] != "Four." {
		t.Errorf("generate think: %s", r.body)
	}
	// think false: the template's switch is off; the text is not split.
	r = do(t, ts, "POST", "/api/chat", `{"model":"tiny","stream":false,"think":false,"messages":[{"role":"user","content":"2+2?"}]}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("think false prompt %q", p)
	}
	if _, ok := r.json(t)["message"].(map[string]any)["thinking"]; ok {
		t.Errorf("think false returned thinking: %s", r.body)
	}
	// A bad value is a 400.
	r = do(t, ts, "POST", "/api/chat", `{"model":"tiny","think":"maybe","messages":[{"role":"user","content":"x"}]}`)
	wantStatus(t, r, 400)

	// A model whose template has no thinking switch: think true is a 400.
	b2 := newFakeBackend()
	_, ts2 := newTestServer(t, Config{}, b2)
	r = do(t, ts2, "POST", "/api/chat", `{"model":"tiny","think":true,"messages":[{"role":"user","content":"x"}]}`)
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), "does not support thinking") {
		t.Errorf("no-thinking model: %s", r.body)
	}
}

// OpenAI chat on a thinking model returns the reasoning in
// reasoning_content (message and streamed deltas), as llama-server does;
// chat_template_kwargs.enable_thinking and reasoning_format are honoured.
func TestOpenAIReasoning(t *testing.T) {
	b := newFakeBackend()
	b.template = qwen3Tmpl
	b.script = []string{"<th", "ink>\nLet me", " see.\n</thi", "nk>\n\n", "Four."}
	_, ts := newTestServer(t, Config{}, b)
	body := `{"model":"tiny","messages":[{"role":"user","content":"2+2?"}]`
	r := do(t, ts, "POST", "/v1/chat/completions", body+`}`)
	wantStatus(t, r, 200)
	msg := r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["reasoning_content"] != "Let me see." || msg["content"] != "Four." {
		t.Errorf("reasoning: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"stream":true}`)
	var th, co strings.Builder
	for _, f := range sse(t, r.body) {
		ch := f["choices"].([]any)
		if len(ch) == 0 {
			continue
		}
		d := ch[0].(map[string]any)["delta"].(map[string]any)
		if v, ok := d["reasoning_content"].(string); ok {
			th.WriteString(v)
		}
		if v, ok := d["content"].(string); ok {
			co.WriteString(v)
		}
	}
	if th.String() != "Let me see." || co.String() != "Four." {
		t.Errorf("streamed reasoning %q content %q\n%s", th.String(), co.String(), r.body)
	}
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"reasoning_format":"none"}`)
	msg = r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if _, ok := msg["reasoning_content"]; ok || !strings.HasPrefix(msg["content"].(string), "<think>") {
		t.Errorf("reasoning_format none: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chat/completions", body+`,"chat_template_kwargs":{"enable_thinking":false}}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; !strings.HasSuffix(p, "<think>\n\n</think>\n\n") {
		t.Errorf("enable_thinking false prompt %q", p)
	}
	for _, bad := range []string{`,"chat_template_kwargs":{"tools_mode":1}}`, `,"chat_template_kwargs":{"enable_thinking":"no"}}`, `,"reasoning_format":"xml"}`} {
		r = do(t, ts, "POST", "/v1/chat/completions", body+bad)
		wantStatus(t, r, 400)
	}
}

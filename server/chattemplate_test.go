package server

import (
	"strings"
	"testing"
)

// TestChatTemplateOverride: Config.ChatTemplate replaces the model's own
// template on every chat route, and /api/show and /props report it.
func TestChatTemplateOverride(t *testing.T) {
	llama3 := `{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`
	jinja := `{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}`
	for _, c := range []struct{ override, want, shown string }{
		{"", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", llama3},
		{"chatml", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "chatml"},
		{jinja, "[user]Hi[assistant]", jinja},
	} {
		b := newFakeBackend()
		b.template = llama3
		_, ts := newTestServer(t, Config{ChatTemplate: c.override}, b)
		for _, rq := range []struct{ path, body string }{
			{"/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":1}}`},
			{"/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"}]}`},
			{"/v1/messages", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"}]}`},
			{"/v1/responses", `{"model":"tiny","max_output_tokens":1,"input":"Hi"}`},
		} {
			r := do(t, ts, "POST", rq.path, rq.body)
			wantStatus(t, r, 200)
			if p := b.last().lastReq().Prompt; p != c.want {
				t.Errorf("override %q: %s prompt %q, want %q", c.override, rq.path, p, c.want)
			}
		}
		r := do(t, ts, "POST", "/api/show", `{"model":"tiny"}`)
		wantStatus(t, r, 200)
		if got := r.json(t)["template"]; got != c.shown {
			t.Errorf("override %q: /api/show template %q", c.override, got)
		}
		r = do(t, ts, "GET", "/props?model=tiny", "")
		wantStatus(t, r, 200)
		if got := r.json(t)["chat_template"]; got != c.shown {
			t.Errorf("override %q: /props chat_template %q", c.override, got)
		}
	}
}

// TestChatTemplateOverrideRefused: a template no request could render
// with is refused when the server is made.
func TestChatTemplateOverrideRefused(t *testing.T) {
	for _, src := range []string{"{% for x in %}", "  \n", "no template here"} {
		_, err := New(Config{ModelsDir: t.TempDir(), ChatTemplate: src}, newFakeBackend())
		if err == nil || !strings.Contains(err.Error(), "template") {
			t.Errorf("ChatTemplate %q: error %v", src, err)
		}
	}
}

// TestReasoningInHistory: an assistant turn's reasoning sent back by the
// client (OpenAI's reasoning_content, as llama-server takes it; Ollama's
// thinking) reaches the template as message.reasoning_content, which
// thinking models' templates (Qwen3's) render for the turns of the current
// tool loop. It used to be dropped silently.
func TestReasoningInHistory(t *testing.T) {
	b := newFakeBackend()
	b.template = `{% for m in messages %}[{{ m['role'] }}]{% if m.reasoning_content is defined %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m['content'] }}{% endfor %}`
	_, ts := newTestServer(t, Config{}, b)
	want := "[user]Hi[assistant]<think>ponder</think>Hello[user]x"
	for _, rq := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello","reasoning_content":"ponder"},{"role":"user","content":"x"}]}`},
		{"/api/chat", `{"model":"tiny","stream":false,"options":{"num_predict":1},"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello","thinking":"ponder"},{"role":"user","content":"x"}]}`},
	} {
		r := do(t, ts, "POST", rq.path, rq.body)
		wantStatus(t, r, 200)
		if p := b.last().lastReq().Prompt; p != want {
			t.Errorf("%s: prompt %q, want %q", rq.path, p, want)
		}
	}
	// Without reasoning the variable is undefined, as before.
	r := do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello","reasoning_content":null},{"role":"user","content":"x"}]}`)
	wantStatus(t, r, 200)
	if p := b.last().lastReq().Prompt; p != "[user]Hi[assistant]Hello[user]x" {
		t.Errorf("no reasoning: prompt %q", p)
	}
}

// TestAssistantRefusalInHistory: an assistant turn that refused comes back
// as OpenAI's refusal part or refusal field; the model sees it as what it
// said. The part used to be a 400 and the field was dropped silently.
func TestAssistantRefusalInHistory(t *testing.T) {
	b := newFakeBackend()
	b.template = `{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}`
	_, ts := newTestServer(t, Config{}, b)
	want := "[user]Hi[assistant]I can't.[user]x"
	for _, asst := range []string{
		`{"role":"assistant","content":[{"type":"refusal","refusal":"I can't."}]}`,
		`{"role":"assistant","content":null,"refusal":"I can't."}`,
		`{"role":"assistant","content":[{"type":"text","text":"I can"},{"type":"refusal","refusal":"'t."}]}`,
	} {
		r := do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"},`+asst+`,{"role":"user","content":"x"}]}`)
		wantStatus(t, r, 200)
		if p := b.last().lastReq().Prompt; p != want {
			t.Errorf("%s: prompt %q, want %q", asst, p, want)
		}
	}
	r := do(t, ts, "POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`)
	wantStatus(t, r, 400)
}

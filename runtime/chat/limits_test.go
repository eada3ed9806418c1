package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/loader"
)

// Hostile templates end in an error naming the bound, quickly, and never
// take the process down.
func TestHostileTemplatesAreBounded(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{% for i in range(100000000) %}{% endfor %}x`, "range() asked for more than"},
		{`{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}x`, "range() asked for more than"},
		{`{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`, `macro "f" can call itself`},
		{`{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, "can call itself"},
		{`{% macro f() %}{% set g = f %}{{ g() }}{% endmacro %}{{ f() }}`, `macro "f" can call itself`},
		{`{% macro f() %}{{ ns.g() }}{% endmacro %}{% set ns = namespace(g=f) %}{{ f() }}`, `macro "f" can call itself`},
		// A macro call's value is text, but the macro itself beside it still counts.
		{`{% macro f() %}{{ ns.g() }}{% endmacro %}{% set ns = namespace(t=f(), g=f) %}{{ f() }}`, `macro "f" can call itself`},
		{`{% macro f() %}{{ h() }}{% endmacro %}{% set h = f(f) %}{{ f() }}`, `macro "f" can call itself`},
		{`{% for m in messages recursive %}{{ loop(messages) }}{% endfor %}`, "recursive for-loops"},
		{`{% for i in range(2000) %}{{ 'x' * 1000 }}{% endfor %}`, "output passed"},
	}
	for _, c := range cases {
		t0 := time.Now()
		tm, err := New(c.src, "<s>", "</s>")
		if err == nil {
			_, err = tm.Render([]Message{{Role: "user", Content: "hi"}}, true)
		}
		took := time.Since(t0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.src, err, c.want)
		}
		if took > renderDeadline+time.Second {
			t.Errorf("%s: took %v", c.src, took)
		}
	}
}

// A loop bounded only by the messages' size runs into the deadline.
func TestRenderDeadline(t *testing.T) {
	tm := mustNew(t, `{% for i in range(1000) %}{% for m in messages %}{% for c in m.content %}{% endfor %}{% endfor %}{% endfor %}x`, "", "")
	t0 := time.Now()
	_, err := tm.Render([]Message{{Role: "user", Content: strings.Repeat("y", 100000)}}, true)
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err %v, want the deadline", err)
	}
	if took := time.Since(t0); took > renderDeadline+time.Second {
		t.Fatalf("returned after %v", took)
	}
}

// Bounded range behaves like Python's within the budget.
func TestBoundedRange(t *testing.T) {
	for src, want := range map[string]string{
		`{% for i in range(5) %}{{ i }}{% endfor %}`:         "01234",
		`{% for i in range(2, 5) %}{{ i }}{% endfor %}`:      "234",
		`{% for i in range(10, 0, -3) %}{{ i }}{% endfor %}`: "10741",
		`{% for i in range(0) %}{{ i }}{% endfor %}.`:        ".",
		`{% for i in range(5, 2) %}{{ i }}{% endfor %}.`:     ".",
	} {
		tm, err := New(src, "", "")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := tm.Render([]Message{{Role: "user", Content: "hi"}}, false)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}

// Every chat template in the shared models renders under the bounds.
func TestSharedTemplatesWithinBounds(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "models", "*.gguf"))
	if len(paths) == 0 {
		t.Skip("../shared/models not found")
	}
	n := 0
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() > 64<<20 {
			continue
		}
		f, err := loader.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := f.String("tokenizer.chat_template")
		f.Close()
		if src == "" {
			continue
		}
		n++
		if err := checkRecursionOf(src); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
		tm, err := New(src, "<s>", "</s>")
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		long := []Message{{Role: "system", Content: "be brief"}}
		for i := 0; i < 50; i++ {
			long = append(long, Message{Role: "user", Content: strings.Repeat("question ", 40)}, Message{Role: "assistant", Content: strings.Repeat("answer ", 40)})
		}
		long = append(long, Message{Role: "user", Content: "last"})
		if _, err := tm.Render(long, true); err != nil {
			t.Errorf("%s: 101 turns: %v", filepath.Base(p), err)
		}
	}
	t.Logf("%d shared templates render within the bounds", n)
}

func checkRecursionOf(src string) error {
	tpl, err := compile(src)
	if err != nil {
		return err
	}
	return checkRecursion(tpl.Root())
}

// FuzzChatTemplate: any template source and message render to text or an
// error, within the deadline, without taking the process down.
//
//	go test ./runtime/chat -run '^$' -fuzz FuzzChatTemplate -fuzztime 60s
func FuzzChatTemplate(f *testing.F) {
	for _, s := range []string{
		"{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
		"{{ bos_token }}{% for m in messages %}{{ '[INST] ' + m.content + ' [/INST]' if m.role == 'user' else m.content + eos_token }}{% endfor %}",
		"{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
		"{% macro f(x) %}[{{ x }}]{% endmacro %}{{ f(messages[0].content) }}",
		"{% for i in range(3) %}{{ i }}{% endfor %}{{ raise_exception('no') }}",
		"{{ messages | length }}{{ messages[0].content | upper | trim }}",
	} {
		f.Add(s, "hello")
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		t0 := time.Now()
		tm, err := New(src, "<s>", "</s>")
		if err == nil {
			_, _ = tm.Render([]Message{{Role: "system", Content: "s"}, {Role: "user", Content: content}}, true)
		}
		if took := time.Since(t0); took > 2*renderDeadline+time.Second {
			t.Fatalf("took %v", took)
		}
	})
}

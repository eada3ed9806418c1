package chat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"

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
		// These once took the process down with a stack overflow.
		{`{% extends '/chat_template' %}`, "are not supported"},
		{`{% block b %}{{ self.b() }}{% endblock %}`, "self (blocks called as functions) is not supported"},
		// These recursed in the background of a render past its deadline.
		{`{% include '/chat_template' %}`, "{% include %}, {% import %} and {% extends %} are not supported"},
		{`{% import '/chat_template' as m %}x`, "{% include %}, {% import %} and {% extends %} are not supported"},
		{`{% from '/chat_template' import f %}x`, "{% include %}, {% import %} and {% extends %} are not supported"},
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
		waitRenders(t, c.src)
	}
}

// A loop bounded only by the messages' size ends at the loop budget (it
// once ran into the deadline, and on in the background after it) or the
// deadline, whichever comes first.
func TestRenderDeadline(t *testing.T) {
	tm := mustNew(t, `{% for i in range(1000) %}{% for m in messages %}{% for c in m.content %}{% endfor %}{% endfor %}{% endfor %}x`, "", "")
	t0 := time.Now()
	_, err := tm.Render([]Message{{Role: "user", Content: strings.Repeat("y", 100000)}}, true)
	if err == nil || !strings.Contains(err.Error(), "longer than") && !strings.Contains(err.Error(), "the loops took more than") {
		t.Fatalf("err %v, want the loop budget or the deadline", err)
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
		// The meter's paths: operators, filters, methods, loops, aliasing.
		"{% set ns = namespace(s='ab', l=[1]) %}{% for i in range(3) %}{% set ns.s = ns.s ~ ns.s %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.s|length }}{{ ns.l|string|length }}",
		"{{ ('x' * 3)|center(9) }}{{ 'a b'.replace(' ', '--', -1).upper() }}{{ messages|map(attribute='content')|join(', ') }}",
		"{% for m in messages if m.role == 'user' %}{{ loop.index ~ ':' ~ m.content|tojson(indent=2) }}{% endfor %}{{ '%5d'|format(7) }}",
		"{{ messages[0].content is equalto 'hello' }}{{ 'l' in messages[-1].content }}{{ [1, 2] + [3] }}{{ (messages|first).role|wordwrap(3) }}",
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
		waitRenders(t, src)
	})
}

// waitRenders fails unless every render, those past their deadline
// included, ends within 20 s: the bounds must stop the engine itself.
func waitRenders(t *testing.T, src string) {
	t.Helper()
	for start := time.Now(); rendersRunning.Load() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%.200q: a render still runs 20 s after it returned", src)
		}
	}
}

// Values a template builds without writing them out are bounded too (they
// were not: 'x' * 10**10 asked for 10 GB, a string doubled 64 times in a
// loop for 2^64 bytes, and the process died of it). Each ends in an error
// naming the bound, before the allocation.
func TestTemplateValuesBounded(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{% set x = 'x' * 100000000 %}ok`, "operator * would make a value of more than"},
		{`{{ 'x' * 10000000000 }}`, "operator * would make a value of more than"},
		{`{{ 'x' * -1 }}`, "a string repeated -1 times"},
		{`{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`, "operator + would make"},
		{`{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}ok`, "operator ~ would make"},
		{`{% set ns = namespace(l=['x']) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}ok`, "operator + would make"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}`, "a printed value is more than"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|string|length }}`, "the filter string would make"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l == ns.l }}`, "the operator == compares a value of more than"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ raise_exception(ns.l) }}`, "an argument of a call is more than"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ 'x'|replace(ns.l, 'y') }}`, "the filter replace would make"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|indent }}`, "the filter indent would make"},
		{`{% set ns = namespace(l=['xxxxxxxx']) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l is equalto ns.l }}`, "an argument of a call is more than"},
		{`{% set s = 'x' * 1000000 %}{% for i in range(200) %}{% set t = s ~ i %}{% endfor %}ok`, "the values the template made passed"},
		{`{% set s = 'x' * 1000000 %}{% for i in range(100000) %}{% set t = s.startswith('y') %}{% endfor %}ok`, "the values the template made passed"}, // each call charges its receiver,
		{`{% set s = 'x' * 1000 %}{% set t = s.replace('x', 'y' * 100000, -1) %}ok`, "the method replace would make"},
		{`{% set x = 'x'|center(10000000000) %}ok`, "the filter center would make"},
		{`{% set x = 'a
b'|indent(10000000000) %}ok`, "the filter indent would make"},
		{`{% set x = ('a' * 10000)|replace('', 'b' * 10000) %}ok`, "the filter replace would make"},
		{`{% set x = '%10000000000d'|format(1) %}ok`, "the filter format would make"},
		{`{% set x = 'x'.ljust(10000000000) %}ok`, "the method ljust would make"},
		{`{% set x = 'x'.center(10000000000) %}ok`, "the method center would make"},
		{`{% set a = 'a' * 10000 %}{% set x = a.replace('a', 'b' * 10000) %}ok`, "the method replace would make"},
		{`{% set x = '{:>10000000000}'.format(1) %}ok`, "the method format would make"},
		{`{{ lipsum(1000000000) }}`, "lipsum() is not supported"},
		{`{{ [1, 2, 3]|slice(1000000000)|list }}`, "the filter slice would make"},
		{`{{ range(10)|batch(1000000000)|list }}`, "the filter batch would make"},
		{`{% set __woolly_meter = none %}{{ 'x' * 10000000000 }}`, "names starting with __woolly_ are reserved"},
		{`{% set l = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] %}{% for i in range(100000) %}{% for x in l %}{% endfor %}{% endfor %}ok`, "the loops took more than"},
	}
	for _, c := range cases {
		t0 := time.Now()
		tm, err := New(c.src, "<s>", "</s>")
		if err == nil {
			_, err = tm.Render([]Message{{Role: "user", Content: "hi"}}, true)
		}
		if c.want == "" {
			if err != nil {
				t.Errorf("%.80s: %v", c.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80s: err %v, want one naming %q", c.src, err, c.want)
		}
		if took := time.Since(t0); took > renderDeadline+time.Second {
			t.Errorf("%.80s: took %v", c.src, took)
		}
		waitRenders(t, c.src)
	}
}

// An engine error quoting a big value is cut (gonja quoted the whole
// 1 MB receiver of a failing method call).
func TestTemplateErrorsShort(t *testing.T) {
	tm := mustNew(t, `{% if messages[0].content == 'boom' %}{% set s = 'x' * 1000000 %}{{ s.replace('x', 'y') }}{% endif %}`, "", "")
	_, err := tm.Render([]Message{{Role: "user", Content: "boom"}}, true)
	if err == nil || len(err.Error()) > 1100 || !strings.Contains(err.Error(), "bytes)") {
		t.Fatalf("err of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}

// The bounds leave real templates alone: each renders a 101-turn
// conversation and one of a 4 MB message as before (the outputs are
// compared with and without the meter's rewriting of the tree).
func TestMeterKeepsRealTemplates(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.jinja"))
	if len(paths) == 0 {
		t.Fatal("no templates in testdata")
	}
	long := []Message{{Role: "system", Content: "be brief"}}
	for i := 0; i < 50; i++ {
		long = append(long, Message{Role: "user", Content: strings.Repeat("question ", 40)}, Message{Role: "assistant", Content: strings.Repeat("answer ", 40)})
	}
	long = append(long, Message{Role: "user", Content: "last"})
	big := []Message{{Role: "user", Content: strings.Repeat("word ", 800_000)}}
	n := 0
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := New(string(src), "<s>", "</s>")
		if err != nil || tm.jinja == nil {
			continue // a template gonja cannot run falls back to a built-in format
		}
		n++
		for _, msgs := range [][]Message{long, big} {
			got, err := tm.Render(msgs, true)
			if err != nil {
				t.Errorf("%s, %d messages: %v", p, len(msgs), err)
				continue
			}
			// The same template without the rewriting, rendered straight.
			plain, err := rawRender(string(src), msgs)
			if err != nil {
				t.Fatalf("%s: unmetered: %v", p, err)
			}
			if got != plain {
				t.Errorf("%s, %d messages: the metered render differs from the plain one", p, len(msgs))
			}
		}
	}
	t.Logf("%d templates", n)
}

// rawRender renders src as compile did before the meter: gonja's own
// filters and methods, the tree as parsed.
func rawRender(src string, msgs []Message) (string, error) {
	tpl, err := parse(src, plainEnv())
	if err != nil {
		return "", err
	}
	t := &Template{src: src, bos: "<s>", eos: "</s>", kind: "jinja", jinja: tpl}
	return t.Render(msgs, true)
}

// plainEnv is the engine's environment without the meter.
func plainEnv() *exec.Environment {
	return &exec.Environment{
		Context: exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables).
			Update(exec.NewContext(map[string]any{
				"raise_exception": func(msg string) (string, error) { return "", &templateError{msg} },
				"strftime_now":    strftimeNow,
			})),
		Filters:           filters(),
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
}

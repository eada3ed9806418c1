package chat

import (
	_ "embed"
	"strings"
	"testing"
)

// Reference templates as published in the models' tokenizer_config.json
// (JSON-decoded): the long ones in testdata/templates, the one-line ones
// below. Expected renders below were written by hand from each template's
// semantics, with bos_token "<s>" and eos_token "</s>".

//go:embed testdata/templates/llama31.jinja
var tmplLlama31 string

//go:embed testdata/templates/qwen25.jinja
var tmplQwen25 string

//go:embed testdata/templates/granite.jinja
var tmplGranite string

//go:embed testdata/templates/qwen3.jinja
var tmplQwen3 string

//go:embed testdata/templates/gemma3.jinja
var tmplGemma3 string

//go:embed testdata/templates/zephyr.jinja
var tmplZephyr string

const (
	tmplQwen2 = `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

	tmplChatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

	tmplLlama2 = `{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`

	tmplLlama3 = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`

	tmplMistral = `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}`

	tmplPhi3 = `{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}`

	tmplGemma = `{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`

	// Qwen3's template (Qwen/Qwen3-0.6B): ChatML, tools, and the reasoning
	// of earlier assistant turns dropped; enable_thinking=false pre-fills an
	// empty <think> block.

	// Gemma 3's template (google/gemma-3-*-it): Gemma 2's turns, with the
	// system message put at the start of the first user turn.

)

var (
	withSystem = []Message{
		{Role: "system", Content: "You are a helpful assistant"},
		{Role: "user", Content: "Hello"},
		{Role: "assistant", Content: "  Hi there  "},
		{Role: "user", Content: "Who are you"},
	}
	noSystem     = withSystem[1:]
	withThinking = []Message{
		{Role: "system", Content: "You are a helpful assistant"},
		{Role: "user", Content: "Hello"},
		{Role: "assistant", Content: "<think>\nThe user greets.\n</think>\n\nHi there"},
		{Role: "user", Content: "Who are you"},
	}
)

// mustNew is New for a template the test needs to load.
func mustNew(t *testing.T, src, bos, eos string) *Template {
	t.Helper()
	tm, err := New(src, bos, eos)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestQwen3EnableThinking: enable_thinking=false pre-fills an empty think
// block after the generation prompt, in the Jinja template and the built-in;
// true and unset leave the prompt open.
func TestQwen3EnableThinking(t *testing.T) {
	off, on := false, true
	jt, err := New(tmplQwen3, "", "<|im_end|>")
	if err != nil {
		t.Fatal(err)
	}
	bt, err := Builtin("qwen3", "", "<|im_end|>")
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range []*Template{jt, bt} {
		if !tm.SupportsThinking() {
			t.Errorf("%s: SupportsThinking false", tm.Kind())
		}
		for _, c := range []struct {
			think *bool
			tail  string
		}{{&off, "<|im_start|>assistant\n<think>\n\n</think>\n\n"}, {&on, "<|im_start|>assistant\n"}, {nil, "<|im_start|>assistant\n"}} {
			got, err := tm.RenderOptions(noSystem[:1], Options{AddGenerationPrompt: true, EnableThinking: c.think})
			if err != nil {
				t.Fatal(err)
			}
			want := "<|im_start|>user\nHello<|im_end|>\n" + c.tail
			if got != want {
				t.Errorf("%s think=%v: got %q want %q", tm.Kind(), c.think, got, want)
			}
		}
	}
	if g, _ := New(tmplGemma, "<s>", "</s>"); g.SupportsThinking() {
		t.Error("gemma template claims a thinking switch")
	}
}

// Renders that several templates give alike: ChatML (and the Qwen
// templates, whose default system prompt is the same text) of withSystem,
// Gemma and Gemma 3 of noSystem, and a Qwen template's default system turn
// before a "Hi".
const (
	chatMLWithSystem = "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"
	gemmaNoSystem    = "<s><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"
	qwenDefaultHi    = "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
)

type renderCase struct {
	name, kind, src string
	msgs            []Message
	addGen          bool
	want            string
}

var cases = []renderCase{
	{"chatml", "chatml", tmplChatML, withSystem, true,
		chatMLWithSystem},
	{"chatml-nogen", "chatml", tmplChatML, noSystem[:1], false,
		"<|im_start|>user\nHello<|im_end|>\n"},
	{"qwen2", "chatml", tmplQwen2, withSystem, true,
		chatMLWithSystem},
	{"llama2", "llama2", tmplLlama2, withSystem, true,
		"<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you [/INST]"},
	{"llama2-nosys", "llama2", tmplLlama2, noSystem, true,
		"<s>[INST] Hello [/INST] Hi there </s><s>[INST] Who are you [/INST]"},
	{"llama3", "llama3", tmplLlama3, withSystem, true,
		"<s><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
	{"mistral", "mistral", tmplMistral, noSystem, true,
		"<s>[INST] Hello [/INST]  Hi there  </s>[INST] Who are you [/INST]"},
	{"granite", "granite", tmplGranite, withSystem, true,
		"<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>  Hi there  <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
	{"phi3", "phi3", tmplPhi3, withSystem, true,
		"<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\n  Hi there  <|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n"},
	{"phi3-nogen", "phi3", tmplPhi3, noSystem[:1], false,
		"<|user|>\nHello<|end|>\n</s>"},
	{"gemma", "gemma", tmplGemma, noSystem, true,
		gemmaNoSystem},
	{"qwen3", "qwen3", tmplQwen3, withThinking, true,
		"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
	{"qwen3-last-turn", "qwen3", tmplQwen3, withThinking[1:3], false,
		"<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\nThe user greets.\n</think>\n\nHi there<|im_end|>\n"},
	{"qwen3-plain", "qwen3", tmplQwen3, withSystem, true,
		chatMLWithSystem},
	{"gemma3", "gemma3", tmplGemma3, withSystem, true,
		"<s><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
	{"gemma3-nosys", "gemma3", tmplGemma3, noSystem, true,
		gemmaNoSystem},
	{"zephyr", "zephyr", tmplZephyr, withSystem, true,
		"<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n<|assistant|>\n  Hi there  </s>\n<|user|>\nWho are you</s>\n<|assistant|>\n"},
}

// engineFallback lists the cases whose template the Jinja engine cannot
// run (gonja does not parse a parenthesized conditional expression, which
// Gemma 3's template uses): New must choose the built-in renderer instead.
var engineFallback = map[string]bool{"gemma3": true, "gemma3-nosys": true}

func TestJinjaRendersReferenceTemplates(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := mustNew(t, c.src, "<s>", "</s>")
			want := "jinja"
			if engineFallback[c.name] {
				want = c.kind
			}
			if tm.Kind() != want {
				t.Fatalf("kind %q, want %q", tm.Kind(), want)
			}
			renderEq(t, tm, c.msgs, c.addGen, c.want)
		})
	}
}

// renderEq renders msgs through tm and compares with want.
func renderEq(t *testing.T, tm *Template, msgs []Message, addGen bool, want string) {
	t.Helper()
	got, err := tm.Render(msgs, addGen)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestBuiltinsMatchReferenceTemplates(t *testing.T) {
	for _, c := range cases {
		if c.name == "qwen2" { // its default system prompt is template-specific
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if k := Detect(c.src); k != c.kind {
				t.Fatalf("Detect = %q, want %q", k, c.kind)
			}
			tm, err := Builtin(c.kind, "<s>", "</s>")
			if err != nil {
				t.Fatal(err)
			}
			renderEq(t, tm, c.msgs, c.addGen, c.want)
		})
	}
}

func TestQwenDefaultSystem(t *testing.T) {
	tm := mustNew(t, tmplQwen2, "", "<|im_end|>")
	renderEq(t, tm, []Message{{Role: "user", Content: "Hi"}}, true, qwenDefaultHi)
}

func TestTemplateExceptions(t *testing.T) {
	for _, src := range []string{tmplGemma, tmplMistral} {
		for _, jinja := range []bool{true, false} {
			var tm *Template
			var err error
			if jinja {
				tm, err = New(src, "<s>", "</s>")
			} else {
				tm, err = Builtin(Detect(src), "<s>", "</s>")
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = tm.Render(withSystem, true)
			if err == nil || !strings.HasPrefix(err.Error(), "chat template: ") {
				t.Errorf("%s (jinja=%v): system message: err = %v, want the template's exception", Detect(src), jinja, err)
			}
			_, err = tm.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, true)
			if err == nil || !strings.Contains(err.Error(), "alternate") {
				t.Errorf("%s (jinja=%v): err = %v, want the alternation exception", Detect(src), jinja, err)
			}
		}
	}
}

func TestNoTemplateIsChatML(t *testing.T) {
	tm := mustNew(t, "", "<s>", "</s>")
	if !tm.Default || tm.Kind() != "chatml" {
		t.Fatalf("Default=%v Kind=%q", tm.Default, tm.Kind())
	}
	got, _ := tm.Render([]Message{{Role: "user", Content: "Hi"}}, true)
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestFallbackAndErrors(t *testing.T) {
	// The engine fails (unknown filter) but the text is recognisably ChatML.
	src := `{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] | no_such_filter + '<|im_end|>\n' }}{% endfor %}`
	tm := mustNew(t, src, "", "")
	if tm.Kind() != "chatml" {
		t.Fatalf("kind %q, want the chatml fallback", tm.Kind())
	}
	// A Qwen-style template the engine cannot run keeps its default system turn.
	tm = mustNew(t, strings.Replace(tmplQwen2, "message['content']", "message['content'] | no_such_filter", 1), "", "")
	got, err := tm.Render([]Message{{Role: "user", Content: "Hi"}}, true)
	if tm.Kind() != "chatml" || err != nil || got != qwenDefaultHi {
		t.Errorf("qwen fallback (%s): %q %v", tm.Kind(), got, err)
	}
	// Neither path: a clear error.
	_, err = New(`{% for m in messages %}{{ m | no_such_filter }}{% endfor %}`, "", "")
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("err = %v, want 'not supported'", err)
	}
	_, err = New(`{% for m in messages %}`, "", "")
	if err == nil {
		t.Fatal("unterminated template accepted")
	}
	if _, err := tm.Render(nil, true); err == nil {
		t.Fatal("empty conversation accepted")
	}
}

func TestIncludeCannotReadFiles(t *testing.T) {
	tm, err := New(`{% include '/etc/hostname' %}<|im_start|>`, "", "")
	if err == nil && tm.Kind() == "jinja" {
		out, _ := tm.Render([]Message{{Role: "user", Content: "x"}}, true)
		t.Fatalf("include rendered %q", out)
	}
}

// Larger real templates: Meta's Llama 3.1 (tools, date string, `is defined`,
// slicing and reassigning messages) and Qwen2.5 (tools branch, attribute
// access on messages, default system prompt).

func TestLargeRealTemplates(t *testing.T) {
	for _, c := range []struct {
		name, src string
		msgs      []Message
		want      string
	}{
		{"llama3.1", tmplLlama31, withSystem,
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3.1-nosys", tmplLlama31, noSystem[:1],
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"qwen2.5", tmplQwen25, withSystem,
			chatMLWithSystem},
		{"qwen2.5-nosys", tmplQwen25, noSystem[:1],
			"<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := mustNew(t, c.src, "<|begin_of_text|>", "<|eot_id|>")
			if tm.Kind() != "jinja" {
				t.Fatalf("kind %q", tm.Kind())
			}
			renderEq(t, tm, c.msgs, true, c.want)
		})
	}
}

package chat

import (
	"strings"
	"testing"
)

// Reference templates as published in the models' tokenizer_config.json
// (JSON-decoded). Expected renders below were written by hand from each
// template's semantics, with bos_token "<s>" and eos_token "</s>".
const (
	tmplQwen2 = `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

	tmplChatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

	tmplLlama2 = `{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`

	tmplLlama3 = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`

	tmplMistral = `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}`

	tmplGranite = `{%- if tools %}
    {{- '<|start_of_role|>available_tools<|end_of_role|>
' }}
    {%- for tool in tools %}
    {{- tool | tojson(indent=4) }}
    {%- if not loop.last %}
        {{- '

' }}
    {%- endif %}
    {%- endfor %}
    {{- '<|end_of_text|>
' }}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] == 'system' %}
    {{- '<|start_of_role|>system<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'user' %}
    {{- '<|start_of_role|>user<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'assistant' %}
    {{- '<|start_of_role|>assistant<|end_of_role|>'  + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'assistant_tool_call' %}
    {{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'tool_response' %}
    {{- '<|start_of_role|>tool_response<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- endif %}
    {%- if loop.last and add_generation_prompt %}
    {{- '<|start_of_role|>assistant<|end_of_role|>' }}
    {%- endif %}
{%- endfor %}`

	tmplPhi3 = `{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}`

	tmplGemma = `{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`

	tmplZephyr = `{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}`
)

var (
	withSystem = []Message{
		{"system", "You are a helpful assistant"},
		{"user", "Hello"},
		{"assistant", "  Hi there  "},
		{"user", "Who are you"},
	}
	noSystem = withSystem[1:]
)

type renderCase struct {
	name, kind, src string
	msgs            []Message
	addGen          bool
	want            string
}

var cases = []renderCase{
	{"chatml", "chatml", tmplChatML, withSystem, true,
		"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
	{"chatml-nogen", "chatml", tmplChatML, noSystem[:1], false,
		"<|im_start|>user\nHello<|im_end|>\n"},
	{"qwen2", "chatml", tmplQwen2, withSystem, true,
		"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
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
		"<s><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
	{"zephyr", "zephyr", tmplZephyr, withSystem, true,
		"<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n<|assistant|>\n  Hi there  </s>\n<|user|>\nWho are you</s>\n<|assistant|>\n"},
}

func TestJinjaRendersReferenceTemplates(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, err := New(c.src, "<s>", "</s>")
			if err != nil {
				t.Fatal(err)
			}
			if tm.Kind() != "jinja" {
				t.Fatalf("kind %q, want the Jinja engine", tm.Kind())
			}
			got, err := tm.Render(c.msgs, c.addGen)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
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
			got, err := tm.Render(c.msgs, c.addGen)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestQwenDefaultSystem(t *testing.T) {
	tm, err := New(tmplQwen2, "", "<|im_end|>")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Render([]Message{{"user", "Hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
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
			_, err = tm.Render([]Message{{"user", "a"}, {"user", "b"}}, true)
			if err == nil || !strings.Contains(err.Error(), "alternate") {
				t.Errorf("%s (jinja=%v): err = %v, want the alternation exception", Detect(src), jinja, err)
			}
		}
	}
}

func TestNoTemplateIsChatML(t *testing.T) {
	tm, err := New("", "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Default || tm.Kind() != "chatml" {
		t.Fatalf("Default=%v Kind=%q", tm.Default, tm.Kind())
	}
	got, _ := tm.Render([]Message{{"user", "Hi"}}, true)
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestFallbackAndErrors(t *testing.T) {
	// The engine fails (unknown filter) but the text is recognisably ChatML.
	src := `{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] | no_such_filter + '<|im_end|>\n' }}{% endfor %}`
	tm, err := New(src, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if tm.Kind() != "chatml" {
		t.Fatalf("kind %q, want the chatml fallback", tm.Kind())
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
		out, _ := tm.Render([]Message{{"user", "x"}}, true)
		t.Fatalf("include rendered %q", out)
	}
}

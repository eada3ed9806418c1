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

	// Qwen3's template (Qwen/Qwen3-0.6B): ChatML, tools, and the reasoning
	// of earlier assistant turns dropped; enable_thinking=false pre-fills an
	// empty <think> block.
	tmplQwen3 = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`

	// Gemma 3's template (google/gemma-3-*-it): Gemma 2's turns, with the
	// system message put at the start of the first user turn.
	tmplGemma3 = `{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
`

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
	{"qwen3", "qwen3", tmplQwen3, withThinking, true,
		"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
	{"qwen3-last-turn", "qwen3", tmplQwen3, withThinking[1:3], false,
		"<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\nThe user greets.\n</think>\n\nHi there<|im_end|>\n"},
	{"qwen3-plain", "qwen3", tmplQwen3, withSystem, true,
		"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
	{"gemma3", "gemma3", tmplGemma3, withSystem, true,
		"<s><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
	{"gemma3-nosys", "gemma3", tmplGemma3, noSystem, true,
		"<s><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
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
			tm, err := New(c.src, "<s>", "</s>")
			if err != nil {
				t.Fatal(err)
			}
			want := "jinja"
			if engineFallback[c.name] {
				want = c.kind
			}
			if tm.Kind() != want {
				t.Fatalf("kind %q, want %q", tm.Kind(), want)
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
	got, err := tm.Render([]Message{{Role: "user", Content: "Hi"}}, true)
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
			_, err = tm.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, true)
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
	got, _ := tm.Render([]Message{{Role: "user", Content: "Hi"}}, true)
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
	// A Qwen-style template the engine cannot run keeps its default system turn.
	tm, err = New(strings.Replace(tmplQwen2, "message['content']", "message['content'] | no_such_filter", 1), "", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Render([]Message{{Role: "user", Content: "Hi"}}, true)
	want := "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if tm.Kind() != "chatml" || err != nil || got != want {
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
const tmplLlama31 = `{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
`

const tmplQwen25 = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`

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
			"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen2.5-nosys", tmplQwen25, noSystem[:1],
			"<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm, err := New(c.src, "<|begin_of_text|>", "<|eot_id|>")
			if err != nil {
				t.Fatal(err)
			}
			if tm.Kind() != "jinja" {
				t.Fatalf("kind %q", tm.Kind())
			}
			got, err := tm.Render(c.msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

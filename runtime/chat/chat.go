// Package chat turns a list of chat messages into a prompt string using the
// model's chat template (tokenizer.chat_template in GGUF).
//
// A template is rendered with a Jinja engine (gonja) configured like Hugging
// Face transformers (trim_blocks, lstrip_blocks, raise_exception). When the
// engine cannot render a template, a built-in Go equivalent is chosen from the
// template text (ChatML/Qwen, Qwen3 with its thinking tags, Llama 2, Llama 3,
// Mistral, Granite, Phi-3, Gemma 2, Gemma 3, Zephyr). A model without a
// template gets ChatML.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// Message is one turn of a conversation. An assistant turn may carry the
// tool calls it made; a "tool" turn is a call's result, with the call's id
// and the tool's name when the client sent them.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	// Reasoning is an assistant turn's reasoning as the client sends it
	// back (OpenAI's reasoning_content, Ollama's thinking): templates read
	// it as message.reasoning_content (Qwen3's renders it for the turns
	// after the last user message). Empty: the variable is undefined.
	Reasoning string `json:"reasoning_content,omitempty"`
}

// Template renders conversations for one model.
type Template struct {
	kind    string // "jinja" or a built-in name
	src     string
	jinja   *exec.Template
	builtin renderFunc
	bos     string
	eos     string
	// Default is true when the model had no template and ChatML was chosen.
	Default bool
}

// Kind names the renderer in use: "jinja", or the built-in format
// ("chatml", "qwen3", "llama2", "llama3", "mistral", "granite", "phi3",
// "gemma", "gemma3", "gemma4", "zephyr").
func (t *Template) Kind() string { return t.kind }

// New prepares the template src (the model's tokenizer.chat_template; empty
// means none). bos and eos are the texts of the model's BOS and EOS tokens,
// which templates reference as bos_token and eos_token.
func New(src, bos, eos string) (*Template, error) {
	t := &Template{src: src, bos: bos, eos: eos}
	if strings.TrimSpace(src) == "" {
		t.kind, t.builtin, t.Default = "chatml", renderChatML, true
		return t, nil
	}
	jt, jerr := compile(src)
	if jerr == nil {
		t.kind, t.jinja = "jinja", jt
		// Probe with a plain conversation: a template the engine parses but
		// cannot execute (an unsupported filter or method) falls back.
		probe := []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}
		if _, err := t.renderJinja(probe, Options{AddGenerationPrompt: true}); err == nil {
			return t, nil
		} else {
			jerr = err
		}
	}
	kind := Detect(src)
	if kind == "" {
		return nil, fmt.Errorf("chat template not supported: the Jinja engine failed (%v) and the text matches no built-in format", jerr)
	}
	t, err := Builtin(kind, bos, eos)
	if err != nil {
		return nil, err
	}
	t.src = src
	if kind == "chatml" { // Qwen's templates add a default system message
		if m := defaultSystem.FindStringSubmatch(src); m != nil {
			sys := strings.ReplaceAll(m[1], `\n`, "\n")
			t.builtin = func(msgs []Message, addGen bool, bos, eos string) (string, error) {
				if msgs[0].Role != "system" {
					msgs = append([]Message{{Role: "system", Content: sys}}, msgs...)
				}
				return renderChatML(msgs, addGen, bos, eos)
			}
		}
	}
	return t, nil
}

// defaultSystem finds a literal default system turn in a ChatML template.
var defaultSystem = regexp.MustCompile(`<\|im_start\|>system\\n([^'"{}<+]+)<\|im_end\|>`)

// Builtin returns the built-in renderer kind (see Kind) directly.
func Builtin(kind, bos, eos string) (*Template, error) {
	f, ok := builtins_[kind]
	if !ok {
		return nil, fmt.Errorf("unknown built-in chat format %q", kind)
	}
	return &Template{kind: kind, builtin: f, bos: bos, eos: eos}, nil
}

// Detect names the built-in format a template's text belongs to, or "".
func Detect(src string) string {
	has := func(s string) bool { return strings.Contains(src, s) }
	switch {
	case has("<|turn>") && has("<turn|>"):
		return "gemma4"
	case has("<|channel|>") && has("<|start|>"): // gpt-oss
		return "harmony"
	case has("<|im_start|>") && has("<think>"):
		return "qwen3"
	case has("<|im_start|>"):
		return "chatml"
	case has("<start_of_turn>") && has("first_user_prefix"):
		return "gemma3"
	case has("<|start_header_id|>"):
		return "llama3"
	case has("<start_of_turn>"):
		return "gemma"
	case has("<|start_of_role|>"):
		return "granite"
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("<|assistant|>") && has("<|user|>"):
		return "zephyr"
	case has("[INST]") && has("<<SYS>>"):
		return "llama2"
	case has("[INST]"):
		return "mistral"
	}
	return ""
}

// Render formats msgs; addGenerationPrompt appends the opening of the
// assistant's turn.
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	return t.RenderOptions(msgs, Options{AddGenerationPrompt: addGenerationPrompt})
}

// Options are the variables a conversation is rendered with.
type Options struct {
	// AddGenerationPrompt appends the opening of the assistant's turn.
	AddGenerationPrompt bool
	// EnableThinking sets the template variable enable_thinking (Qwen3's
	// switch: false makes the model answer without a <think> block); nil
	// leaves it undefined, the template's default (thinking on).
	EnableThinking *bool
	// Tools are the tool definitions the model may call, each a JSON
	// object {"type": "function", "function": {"name", "description",
	// "parameters"}}; the template gets them as tools. Only for a template
	// that SupportsTools.
	Tools []json.RawMessage
	// ReasoningEffort is gpt-oss's "Reasoning:" line (low, medium, high;
	// "" for medium); only the harmony format has it.
	ReasoningEffort string
	// ForceCall, with AddGenerationPrompt, opens the assistant's turn as
	// a call of the tool of that name, so the model writes only its
	// arguments (harmony only: the channel header names the recipient).
	ForceCall string
}

// RenderOptions formats msgs with o.
func (t *Template) RenderOptions(msgs []Message, o Options) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("chat: no messages")
	}
	if len(o.Tools) > 0 {
		if !t.SupportsTools() {
			return "", errors.New("chat: this model's template does not support tools")
		}
		if err := checkTools(o.Tools); err != nil {
			return "", err
		}
	}
	// Calls in the history that the template would drop are refused.
	readsCalls := t.SupportsTools() || (t.jinja != nil && strings.Contains(t.src, "tool_calls"))
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 && !readsCalls {
			return "", fmt.Errorf("chat: messages[%d]: this model's template does not support tool calls", i)
		}
	}
	if o.ForceCall != "" && t.kind != "harmony" {
		return "", errors.New("chat: only the harmony format opens a turn as a call")
	}
	if o.ReasoningEffort != "" && t.kind != "harmony" {
		return "", errors.New("chat: this model's template has no reasoning effort (only gpt-oss's harmony format)")
	}
	if t.jinja != nil {
		return t.renderJinja(msgs, o)
	}
	if t.kind == "harmony" {
		return renderHarmonyOptions(msgs, o)
	}
	if t.kind == "gemma4" { // its thinking switch and tools change the system turn too
		return renderGemma4(msgs, o, t.bos)
	}
	if t.SupportsTools() {
		var err error
		if msgs, err = t.builtinToolTurns(msgs, o.Tools); err != nil {
			return "", err
		}
	}
	out, err := t.builtin(msgs, o.AddGenerationPrompt, t.bos, t.eos)
	if err == nil && t.kind == "qwen3" && o.AddGenerationPrompt && o.EnableThinking != nil && !*o.EnableThinking {
		out += "<think>\n\n</think>\n\n" // Qwen3's template with enable_thinking false
	}
	return out, err
}

// SupportsThinking reports whether the template has a thinking switch
// (it mentions enable_thinking, or it is the built-in Qwen3 format), or
// is gpt-oss's harmony format, whose analysis channel the runtime writes
// between <think> and </think> (runtime/harmony.go).
func (t *Template) SupportsThinking() bool {
	return t.kind == "qwen3" || t.kind == "harmony" || t.kind == "gemma4" || strings.Contains(t.src, "enable_thinking")
}

// templateError is what raise_exception produces.
type templateError struct{ msg string }

func (e *templateError) Error() string { return "chat template: " + e.msg }

var environment = &exec.Environment{
	Context: exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables).
		Update(exec.NewContext(map[string]any{
			"raise_exception": func(msg string) (string, error) { return "", &templateError{msg} },
			"strftime_now":    strftimeNow,
		})).Update(exec.NewContext(meteredGlobals)), // meter.go
	Filters:           meteredFilters(filters()),
	Tests:             builtins.Tests,
	ControlStructures: builtins.ControlStructures,
	Methods:           meteredMethods(builtins.Methods),
}

// filters are gonja's with tojson as transformers defines it.
func filters() *exec.FilterSet {
	f := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	if err := f.Replace("tojson", filterToJSON); err != nil {
		panic(err) // gonja always has tojson
	}
	return f
}

// compile parses src and rewrites its tree for the meter (meter.go). A
// panic in the engine's parser or in the rewrite is an error: the template
// comes from a model file.
func compile(src string) (tpl *exec.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			tpl, err = nil, fmt.Errorf("chat template: engine failure while parsing: %v", p)
		}
	}()
	if strings.Contains(src, "__woolly_") { // the meter's names: a template must not reach them
		return nil, &errLimit{"names starting with __woolly_ are reserved"}
	}
	if tpl, err = parse(src, environment); err != nil {
		return nil, err
	}
	meterTree(tpl.Root())
	return tpl, nil
}

// parse parses src in env and refuses recursion.
func parse(src string, env *exec.Environment) (*exec.Template, error) {
	cfg := config.New()
	cfg.TrimBlocks = true // as transformers' apply_chat_template
	cfg.LeftStripBlocks = true
	// A loader that gives the template once, to compile it: {% include %},
	// {% extends %} and {% import %} reach nothing (not even the template
	// itself, which extended itself until the parser's stack overflowed).
	tpl, err := exec.NewTemplate(templateName, cfg, &onceLoader{src: src}, env)
	if err != nil {
		return nil, err
	}
	if err := checkRecursion(tpl.Root()); err != nil {
		return nil, err
	}
	return tpl, nil
}

func (t *Template) renderJinja(msgs []Message, o Options) (out string, err error) {
	jv := &jsonValues{}
	defer jv.forget()
	callsInContent := ""
	if !strings.Contains(t.src, "tool_calls") {
		callsInContent = t.ToolFormat()
	}
	list := make([]map[string]any, len(msgs))
	inBytes := 0
	for i, m := range msgs {
		if list[i], err = jinjaMessage(m, jv, callsInContent); err != nil {
			return "", fmt.Errorf("chat: messages[%d]: %w", i, err)
		}
		inBytes += len(m.Role) + len(m.Content) + len(m.Reasoning)
		for _, c := range m.ToolCalls {
			inBytes += len(c.Name) + len(c.Arguments)
		}
	}
	var rangeUsed atomic.Int64
	vars := map[string]any{
		"messages":              list,
		"add_generation_prompt": o.AddGenerationPrompt,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
		"range":                 boundedRange(&rangeUsed),
	}
	if o.EnableThinking != nil {
		vars["enable_thinking"] = *o.EnableThinking
	}
	if len(o.Tools) > 0 { // undefined otherwise: templates test "if tools" or "tools is not none"
		tools := make([]any, len(o.Tools))
		for i, raw := range o.Tools {
			if tools[i], err = jv.decode(raw); err != nil {
				return "", fmt.Errorf("chat: tools[%d]: %w", i, err)
			}
			inBytes += len(raw)
		}
		vars["tools"] = tools
	}
	maxOut := outputCap + 8*inBytes
	vars[meterVar] = newMeter(maxOut)
	ctx := exec.NewContext(vars)
	out, err = execute(t.jinja, ctx, maxOut)
	if err != nil {
		var te *templateError
		if errors.As(err, &te) {
			return "", te
		}
		var le *errLimit
		if errors.As(err, &le) {
			return "", le
		}
		msg := err.Error()
		if i := strings.Index(msg, "chat template: "); i >= 0 { // wrapped without %w
			msg = msg[i:]
		} else {
			msg = "chat template: " + msg
		}
		return "", errors.New(shortMessage(msg))
	}
	return out, nil
}

// maxErrorBytes bounds an engine error's text: gonja quotes the values a
// failing call was given, which a template may make megabytes long.
const maxErrorBytes = 1024

// shortMessage cuts msg to maxErrorBytes (at a character boundary),
// saying how long it was.
func shortMessage(msg string) string {
	if len(msg) <= maxErrorBytes {
		return msg
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", msg[:cut], len(msg))
}

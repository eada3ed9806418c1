package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/synth"
)

// TestHarmonyOut: a harmony reply's token stream becomes the analysis
// channel between <think> and </think> and the final channel as it is; the
// headers (role, channel names) print nothing; text outside the format
// passes unchanged.
func TestHarmonyOut(t *testing.T) {
	const ch, msg, end, start, call, constrain, txt = 1, 2, 3, 4, 5, 6, 100
	type tk struct {
		id   int32
		text string
	}
	run := func(toks []tk) string {
		h := &harmonyOut{channel: ch, message: msg, end: end, start: start, call: call}
		out := ""
		for _, k := range toks {
			out += h.piece(k.id, k.text)
		}
		return out + h.flush()
	}
	reply := []tk{{ch, ""}, {txt, "analysis"}, {msg, ""}, {txt, "Add "}, {txt, "them."}, {end, ""},
		{start, ""}, {txt, "assistant"}, {ch, ""}, {txt, "final"}, {msg, ""}, {txt, "4"}}
	if got, want := run(reply), "<think>Add them.</think>4"; got != want {
		t.Errorf("reply: %q, want %q", got, want)
	}
	if got := run([]tk{{txt, "plain "}, {txt, "text"}}); got != "plain text" {
		t.Errorf("plain: %q", got)
	}
	if got := run([]tk{{ch, ""}, {txt, "final"}, {msg, ""}, {txt, "only"}}); got != "only" {
		t.Errorf("final only: %q", got)
	}
	// A tool call (recipient in the role header or after the channel name)
	// becomes a hermes-style block; its header prints nothing.
	wantCall := `<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>`
	if got := run([]tk{{start, ""}, {txt, "assistant to=functions.f"}, {ch, ""}, {txt, "commentary json"}, {msg, ""}, {txt, `{"a": 1}`}, {call, ""}}); got != wantCall {
		t.Errorf("call in role header: %q", got)
	}
	if got := run([]tk{{ch, ""}, {txt, "analysis"}, {msg, ""}, {txt, "Use f."}, {end, ""}, {start, ""}, {txt, "assistant"}, {ch, ""},
		{txt, "commentary to=functions.f "}, {constrain, ""}, {txt, "json"}, {msg, ""}, {txt, `{"a": `}, {txt, `1}`}, {call, ""}}); got != "<think>Use f.</think>"+wantCall {
		t.Errorf("call after channel: %q", got)
	}
	// Right after the generation prompt (<|start|>assistant) the recipient is held until its channel token.
	if got := run([]tk{{txt, " to"}, {txt, "=functions.f"}, {ch, ""}, {txt, "commentary json"}, {msg, ""}, {txt, `{"a": 1}`}, {call, ""}}); got != wantCall {
		t.Errorf("leading recipient: %q", got)
	}
	if got := run([]tk{{txt, " to"}, {txt, "day"}}); got != " today" {
		t.Errorf("text like a recipient: %q", got)
	}
	if got := run([]tk{{txt, " to"}}); got != " to" {
		t.Errorf("held text at the end: %q", got)
	}
	// A message to another channel without a recipient prints its text only.
	if got := run([]tk{{start, ""}, {txt, "assistant"}, {ch, ""}, {txt, "commentary"}, {msg, ""}, {txt, "note"}}); got != "note" {
		t.Errorf("commentary: %q", got)
	}
}

// harmonySpecials are gpt-oss's (o200k_harmony) format tokens.
var harmonySpecials = []string{"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"}

// harmonyVocab writes the gpt-2 vocabulary with harmony's special tokens
// added as control tokens (their type in gpt-oss's file) and returns its path.
func harmonyVocab(t *testing.T) string {
	t.Helper()
	src := filepath.Join(sharedDir(t), "vocab", "ggml-vocab-gpt-2.gguf")
	f, err := loader.Open(src)
	require.NoError(t, err)
	defer f.Close()
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	require.True(t, ok)
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	require.True(t, ok)
	w := loader.NewWriter()
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			w.Set(kv.Key, kv.Value)
		}
	}
	toks = append(append([]string(nil), toks...), harmonySpecials...)
	types = append([]int32(nil), types...)
	for range harmonySpecials {
		types = append(types, 3) // control
	}
	w.SetStrings("tokenizer.ggml.tokens", toks)
	w.SetInt32s("tokenizer.ggml.token_type", types)
	path := filepath.Join(t.TempDir(), "vocab-gpt2-harmony.gguf")
	require.NoError(t, w.WriteFile(path))
	return path
}

// scripted is a test constraint: only the next token of a given stream may
// be sampled, so a random-weight model writes that stream.
type scripted struct {
	ids []int32
	at  int
}

func (s *scripted) Mask(logits []float32) error {
	if s.at >= len(s.ids) {
		return fmt.Errorf("scripted stream exhausted")
	}
	for i := range logits {
		if int32(i) != s.ids[s.at] {
			logits[i] = float32(math.Inf(-1))
		}
	}
	return nil
}

func (s *scripted) Accept(id int32) error {
	if s.at >= len(s.ids) || id != s.ids[s.at] {
		return fmt.Errorf("scripted: got token %d", id)
	}
	s.at++
	return nil
}

func (s *scripted) Finished() bool { return s.at == len(s.ids) }

// TestGptOssHarmonyEndToEnd: a gpt-oss mini whose vocabulary has harmony's
// special tokens, prompted with the harmony template's rendering of a
// conversation with tools, writes (forced token by token) a reply that
// reasons on the analysis channel and then calls a function on the
// commentary channel; generation ends at <|call|>, the reasoning comes out
// between <think> and </think>, the call as a block the harmony tool parser
// reads, and no header or special token text leaks.
func TestGptOssHarmonyEndToEnd(t *testing.T) {
	vocab := harmonyVocab(t)
	p, err := synth.FindPreset("gpt-oss-mini")
	require.NoError(t, err)
	p.Ctx = 4096
	path := writeSynth(t, p, "mxfp4", vocab, "gpt-oss-mini-harmony.gguf")
	m, err := Load(path, LoadOptions{Threads: 2, ContextLength: 1024})
	require.NoError(t, err)
	defer m.Close()
	tok := m.Tokenizer()
	for _, s := range harmonySpecials {
		_, ok := tok.ID(s)
		require.True(t, ok, s)
	}

	src, err := os.ReadFile(filepath.Join("chat", "testdata", "tools", "openai-gpt-oss-120b.jinja"))
	require.NoError(t, err)
	tm, err := chat.New(string(src), "", "<|return|>")
	require.NoError(t, err)
	require.Equal(t, "harmony", tm.Kind())
	weather := `{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	prompt, err := tm.RenderOptions([]chat.Message{{Role: "user", Content: "Weather in Paris?"}},
		chat.Options{AddGenerationPrompt: true, Tools: []json.RawMessage{json.RawMessage(weather)}, ReasoningEffort: "low"})
	require.NoError(t, err)
	require.Contains(t, prompt, "Reasoning: low")

	// The reply as gpt-oss writes it (recipient after the channel name).
	reply := "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>"
	ids, err := tok.Encode(reply, false, true)
	require.NoError(t, err)
	// The prompt's special tokens are single tokens.
	pids, err := tok.Encode(prompt, false, true)
	require.NoError(t, err)
	start, _ := tok.ID("<|start|>")
	require.Equal(t, strings.Count(prompt, "<|start|>"), countID(pids, start))

	var streamed strings.Builder
	res, err := m.Generate(context.Background(), GenerateOptions{Prompt: prompt, MaxTokens: len(ids) + 5,
		Sampler: SamplerOptions{Temperature: 0}, force: &scripted{ids: ids}}, func(tk Token) error {
		streamed.WriteString(tk.Text)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "stop", res.StopReason)
	require.Equal(t, ids, res.Tokens)
	want := `<think>Need the weather.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	require.Equal(t, want, res.Text)
	require.Equal(t, want, streamed.String())

	// A raw completion (Literal) keeps the format's own text, as llama-server prints it.
	lit, err := m.Generate(context.Background(), GenerateOptions{Prompt: prompt, MaxTokens: len(ids) + 5,
		Sampler: SamplerOptions{Temperature: 0}, force: &scripted{ids: ids}, Literal: true}, nil)
	require.NoError(t, err)
	require.Equal(t, ids, lit.Tokens)
	require.True(t, strings.HasPrefix(lit.Text, "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather"), lit.Text)
	require.NotContains(t, lit.Text, "<think>")

	content, calls := chat.ParseToolCalls(tm.ToolFormat(), strings.TrimPrefix(res.Text, "<think>Need the weather.</think>"))
	require.Equal(t, "", content)
	require.Len(t, calls, 1)
	require.Equal(t, "get_weather", calls[0].Name)
	require.JSONEq(t, `{"city":"Paris"}`, string(calls[0].Arguments))

	// answer is the text of a reply the model is made to write.
	answer := func(reply string) string {
		ids, err := tok.Encode(reply, false, true)
		require.NoError(t, err)
		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: prompt, MaxTokens: len(ids) + 5,
			Sampler: SamplerOptions{Temperature: 0}, force: &scripted{ids: ids}}, nil)
		require.NoError(t, err)
		return res.Text
	}
	// A plain answer on the final channel, ended by <|return|>.
	require.Equal(t, "<think>Easy.</think>Hello!", answer("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"))
	// Text held as a possible recipient (" to") is given out when generation ends.
	require.Equal(t, " to", answer(" to<|return|>"))
}

func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

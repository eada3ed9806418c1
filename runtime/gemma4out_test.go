package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// rewriteGemma4 runs text through a fresh gemma4Out in the given pieces.
func rewriteGemma4(pieces ...string) string {
	g := &gemma4Out{atStart: true}
	out := ""
	for _, p := range pieces {
		out += g.piece(p)
	}
	return out + g.flush()
}

// TestGemma4Out: Gemma 4's thought channel and calls come out as <think>
// blocks and hermes calls, whole and split at every byte boundary (in two
// pieces, and one byte at a time).
func TestGemma4Out(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>",
			`<think>Need the weather.</think><tool_call>{"name": "get_weather", "arguments": {"city":"Paris","days":2}}</tool_call>`},
		{"<|channel>thought\nHm.<channel|>It is 18C.", "<think>Hm.</think>It is 18C."},
		// Found by FuzzGemma4Out: whitespace after the name split across
		// pieces reached the thought.
		{"<|channel>thought \n\n Hm.<channel|>x", "<think>Hm.</think>x"},
		{"Hello!<|channel>thought\n<channel|>", "Hello!"}, // a trailing empty channel
		{"Hi<channel|>", "Hi"}, // a stray closing tag
		{"a < b <|x |> <|tool <channel", "a < b <|x |> <|tool <channel"}, // tag-like text
		{"<|channel><|channel>thought X<channel|>Y", "<think>X</think>Y"},
		{"A<|channel>thought\nB<channel|>", "A<|channel>thought\nB<channel|>"}, // a later channel with text stays
		{"<|channel>thought\nhmm", "<think>hmm"},                               // cut: an unclosed block
		{"<|channel>thou", "<|channel>thou"},
		{"x <|tool_call>call:f{a:<|\"|>b", "x <|tool_call>call:f{a:<|\"|>b"}, // cut mid-call
		{"<|tool_call>call:f{x:}<tool_call|>", "<|tool_call>call:f{x:}<tool_call|>"},
		{"<|tool_call>call:f[1]<tool_call|>", "<|tool_call>call:f[1]<tool_call|>"},
		{"<|tool_call>call:f{}<tool_call|>trailing", `<tool_call>{"name": "f", "arguments": {}}</tool_call>trailing`},
		{"<|tool_call>call:search{filters:{recent:true,site:<|\"|>x.org<|\"|>},none:None,query:<|\"|>a \"quoted\" {x} <b><|\"|>,score:-0.5e2,tags:[<|\"|>a<|\"|>, <|\"|>b<|\"|>],ok:False}<tool_call|><|tool_call>call:g{ <|\"|>k<|\"|> : [ ] }<tool_call|>",
			`<tool_call>{"name": "search", "arguments": {"filters":{"recent":true,"site":"x.org"},"none":null,"query":"a \"quoted\" {x} <b>","score":-0.5e2,"tags":["a","b"],"ok":false}}</tool_call>` +
				`<tool_call>{"name": "g", "arguments": {"k":[]}}</tool_call>`},
	} {
		if got := rewriteGemma4(c.in); got != c.want {
			t.Errorf("%q:\ngot  %q\nwant %q", c.in, got, c.want)
			continue
		}
		for i := 1; i < len(c.in); i++ {
			if got := rewriteGemma4(c.in[:i], c.in[i:]); got != c.want {
				t.Errorf("%q split at %d: got %q", c.in, i, got)
			}
		}
		var bytes []string
		for i := range len(c.in) {
			bytes = append(bytes, c.in[i:i+1])
		}
		if got := rewriteGemma4(bytes...); got != c.want {
			t.Errorf("%q byte by byte: got %q", c.in, got)
		}
	}
}

// TestGemma4OutCalls: a rewritten reply reads back, through the tool
// parser of the gemma4 format, as the model's content and calls.
func TestGemma4OutCalls(t *testing.T) {
	out := rewriteGemma4("Checking.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_call>call:get_time{tz:<|\"|>CET<|\"|>}<tool_call|>")
	content, calls := chat.ParseToolCalls(chat.ToolsGemma4, out)
	if content != "Checking." || len(calls) != 2 {
		t.Fatalf("content %q calls %v", content, calls)
	}
	for i, want := range []struct{ name, args string }{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"tz":"CET"}`}} {
		var a, b any
		json.Unmarshal(calls[i].Arguments, &a)
		json.Unmarshal([]byte(want.args), &b)
		if calls[i].Name != want.name || !jsonEqual(a, b) {
			t.Errorf("call %d: %s %s", i, calls[i].Name, calls[i].Arguments)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestGemma4EndToEnd: the gemma4 mini (synth's Gemma 4-style vocabulary,
// whose <|channel> and <channel|> are single user-defined tokens; the call
// tags are written piece by piece), prompted with the built-in Gemma 4
// rendering of a conversation with a tool and thinking on, writes (forced
// token by token) a thought, then a call: the reasoning comes out between
// <think> and </think> and the call as a block the gemma4 tool parser
// reads, streamed and whole; a raw completion (Literal) keeps the model's
// own text.
func TestGemma4EndToEnd(t *testing.T) {
	m, err := Load(gemma4Mini(t), LoadOptions{Threads: 2, ContextLength: 1024})
	require.NoError(t, err)
	defer m.Close()
	tok := m.Tokenizer()
	ch, _ := tok.ID("<|channel>")
	tm, err := chat.Builtin("gemma4", "", "<eos>")
	require.NoError(t, err)
	weather := `{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	on := true
	prompt, err := tm.RenderOptions([]chat.Message{{Role: "user", Content: "Weather in Paris?"}},
		chat.Options{AddGenerationPrompt: true, Tools: []json.RawMessage{json.RawMessage(weather)}, EnableThinking: &on})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(prompt, "<|turn>model\n"), prompt)

	reply := "<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><eos>"
	ids, err := tok.Encode(reply, false, true)
	require.NoError(t, err)
	require.Equal(t, 1, countID(ids, ch), "<|channel> is one token")
	run := func(literal bool) (*GenerateResult, string) {
		var streamed strings.Builder
		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: prompt, MaxTokens: len(ids) + 5,
			Sampler: SamplerOptions{Temperature: 0}, force: &scripted{ids: ids}, Literal: literal}, func(tk Token) error {
			streamed.WriteString(tk.Text)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, ids, res.Tokens)
		return res, streamed.String()
	}
	res, streamed := run(false)
	require.Equal(t, "stop", res.StopReason)
	want := `<think>Need the weather.</think><tool_call>{"name": "get_weather", "arguments": {"city":"Paris"}}</tool_call>`
	require.Equal(t, want, res.Text)
	require.Equal(t, want, streamed)
	content, calls := chat.ParseToolCalls(tm.ToolFormat(), strings.TrimPrefix(res.Text, "<think>Need the weather.</think>"))
	require.Equal(t, "", content)
	require.Len(t, calls, 1)
	require.Equal(t, "get_weather", calls[0].Name)
	require.JSONEq(t, `{"city":"Paris"}`, string(calls[0].Arguments))

	lit, _ := run(true)
	require.Equal(t, strings.TrimSuffix(reply, "<eos>"), lit.Text)
}

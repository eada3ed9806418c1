package runtime

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/loader"
)

// A control token generated mid-answer prints nothing (llama.cpp renders
// pieces without special tokens unless asked), while its id stays in the
// result. The stories260K model's greedy continuation is run twice: as
// shipped, and with its third generated token re-typed as a control token.
func TestGeneratedControlTokenHasNoText(t *testing.T) {
	const name = "stories260K-Q8_0"
	shipped := filepath.Join(sharedDir(t), "models", name+".gguf")
	gen := func(path string) *GenerateResult {
		m := loadPath(t, path, LoadOptions{Threads: 1})
		var streamed strings.Builder
		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: "Once upon a time", MaxTokens: 6},
			func(tk Token) error { streamed.WriteString(tk.Text); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if streamed.String() != res.Text {
			t.Fatalf("streamed %q but the result says %q", streamed.String(), res.Text)
		}
		return res
	}
	plain := gen(shipped)
	if len(plain.Tokens) < 4 {
		t.Fatalf("only %d tokens generated", len(plain.Tokens))
	}
	ctrl := plain.Tokens[2]

	m, err := Load(shipped, LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Tokenizer()
	concat := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			b.Write(tok.Piece(id))
		}
		return b.String()
	}
	if concat(plain.Tokens) != plain.Text {
		t.Fatalf("plain answer %q is not its pieces %q", plain.Text, concat(plain.Tokens))
	}
	want := concat(plain.Tokens[:2]) + concat(plain.Tokens[3:])
	m.Close()
	f, err := loader.Open(shipped)
	if err != nil {
		t.Fatal(err)
	}
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	f.Close()
	if !ok {
		t.Fatal("no tokenizer.ggml.token_type")
	}
	types = slices.Clone(types)
	types[ctrl] = 3 // CONTROL
	path := variant(t, name, map[string]*loader.Value{"tokenizer.ggml.token_type": {Type: loader.TypeArray,
		V: loader.Array{Elem: loader.TypeInt32, Values: types}}}, "")
	got := gen(path)
	if !slices.Equal(got.Tokens, plain.Tokens) {
		t.Fatalf("ids changed: %v vs %v", got.Tokens, plain.Tokens)
	}
	if got.Text != want {
		t.Fatalf("answer with token %d as control = %q, want %q (the plain answer %q without that piece)", ctrl, got.Text, want, plain.Text)
	}
}

func TestSamplerValidate(t *testing.T) {
	if err := DefaultSamplerOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (SamplerOptions{}).Validate(); err != nil {
		t.Fatalf("zero value (greedy) invalid: %v", err)
	}
	nan := float32(math.NaN())
	for _, c := range []struct {
		o     SamplerOptions
		field string
	}{
		{SamplerOptions{Temperature: -1}, "temperature"},
		{SamplerOptions{Temperature: nan}, "temperature"},
		{SamplerOptions{TopP: 1.5}, "top_p"},
		{SamplerOptions{MinP: -0.1}, "min_p"},
		{SamplerOptions{TopK: -1}, "top_k"},
		{SamplerOptions{RepeatPenalty: -1}, "repeat_penalty"},
		{SamplerOptions{FrequencyPenalty: 2.5}, "frequency_penalty"},
		{SamplerOptions{PresencePenalty: -3}, "presence_penalty"},
		{SamplerOptions{RepeatLastN: -2}, "repeat_last_n"},
	} {
		var re *SamplerRangeError
		err := c.o.Validate()
		if !errors.As(err, &re) || re.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want a range error naming %s", c.o, err, c.field)
		}
	}
}

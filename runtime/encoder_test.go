package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/synth"
)

// encoderMinis pins the bytes of the encoder synth presets (F16, seed 1,
// the built-in WordPiece vocabulary) that testdata/encoder was made from.
var encoderMinis = map[string]string{
	"bert-mini":        "d558ef2248aa638e67833c6705a3b6eb284608eb3724e3887d8cdd957c73c425",
	"nomic-bert-mini":  "771b438f1d83f322e39bfe694409daaba75a6b9dd121e56b378bdf4df842a854",
	"bert-rerank-mini": "bd17704c5295ce428d872da52e76006fee5c5249797638808b0b433923b4d1d4",
}

// encoderMini writes the synth preset name (F16) into a temporary
// directory, checks its pinned checksum and returns its path.
func encoderMini(t testing.TB, name string) string {
	t.Helper()
	p, err := synth.FindPreset(name)
	require.NoError(t, err)
	ft, err := quant.ParseFileType("f16")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name+"-F16.gguf")
	_, err = synth.WriteFile(path, synth.Options{Preset: p, Type: ft, Seed: 1, Threads: 2})
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	require.Equal(t, encoderMinis[name], hex.EncodeToString(h.Sum(nil)), "synth %s bytes changed: remake testdata/encoder (README.md)", name)
	return path
}

// TestEncoderTokenizerParity: the WordPiece tokenizer gives llama.cpp's
// ids (llama-tokenize, special tokens added and parsed) on the minis'
// vocabulary, through accents, CJK, punctuation, unknown characters,
// control characters and special-token text.
func TestEncoderTokenizerParity(t *testing.T) {
	var ref struct {
		Cases []struct {
			Prompt string  `json:"prompt"`
			IDs    []int32 `json:"ids"`
		} `json:"cases"`
	}
	readJSON(t, filepath.Join("testdata", "encoder", "tokens.json"), &ref)
	require.NotEmpty(t, ref.Cases)
	m := loadPath(t, encoderMini(t, "bert-mini"), LoadOptions{Threads: 1})
	for _, c := range ref.Cases {
		got, err := m.Tokenizer().Encode(c.Prompt, true, true)
		require.NoError(t, err)
		require.Equal(t, c.IDs, got, "prompt %q", c.Prompt)
	}
}

// TestEncoderEmbeddingOnly: an encoder refuses sessions (generation,
// logits, perplexity) with ErrEmbeddingOnly, and bad files fail to load
// with an error naming the key or tensor.
func TestEncoderEmbeddingOnly(t *testing.T) {
	path := encoderMini(t, "bert-mini")
	m := loadPath(t, path, LoadOptions{Threads: 1})
	require.True(t, m.IsEmbeddingOnly())
	_, err := m.NewSession(0)
	require.True(t, errors.Is(err, ErrEmbeddingOnly), "NewSession: %v", err)
	_, err = m.Embed(context.Background(), EmbedOptions{Inputs: []string{"hi"}, Pooling: PoolingRank})
	require.ErrorContains(t, err, "classification head")
	_, err = m.Rerank(context.Background(), "q", []string{"d"}, 0)
	require.ErrorContains(t, err, "not a reranker")

	u32 := func(v uint32) *loader.Value { x := loader.Value{Type: loader.TypeUint32, V: v}; return &x }
	for _, c := range []struct {
		name, file string
		set        map[string]*loader.Value
		drop, want string
	}{
		{"no position_embd", "bert-mini", nil, "position_embd.weight", "tensor position_embd.weight is missing"},
		{"no attn norm", "bert-mini", nil, "blk.1.attn_output_norm.bias", "tensor blk.1.attn_output_norm.bias is missing"},
		{"no ffn_gate", "nomic-bert-mini", nil, "blk.0.ffn_gate.weight", "tensor blk.0.ffn_gate.weight is missing"},
		{"no eps", "bert-mini", map[string]*loader.Value{"bert.attention.layer_norm_epsilon": nil}, "", "key bert.attention.layer_norm_epsilon is missing"},
		{"no token type count", "bert-mini", map[string]*loader.Value{"tokenizer.ggml.token_type_count": nil}, "", "tokenizer.ggml.token_type_count"},
		{"ffn lies", "bert-mini", map[string]*loader.Value{"bert.feed_forward_length": u32(96)}, "", "blk.0.ffn_up.weight has shape"},
		{"heads do not divide", "nomic-bert-mini", map[string]*loader.Value{"nomic-bert.attention.head_count": u32(3)}, "", "do not divide"},
		{"bad pooling", "bert-mini", map[string]*loader.Value{"bert.pooling_type": u32(9)}, "", "bert.pooling_type is not a pooling type"},
		{"rank without head", "bert-mini", map[string]*loader.Value{"bert.pooling_type": u32(4)}, "", "no classification head"},
		{"moe", "nomic-bert-mini", map[string]*loader.Value{"nomic-bert.moe_every_n_layers": u32(2)}, "", "moe_every_n_layers"},
		{"labels missing", "bert-rerank-mini", map[string]*loader.Value{"bert.classifier.output_labels": nil}, "", "classifier.output_labels is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := rewriteModel(t, encoderMini(t, c.file), c.set, c.drop)
			_, err := Load(bad, LoadOptions{Threads: 1})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

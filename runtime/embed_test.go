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

func embedOne(t *testing.T, m *Model, o EmbedOptions) *EmbedResult {
	t.Helper()
	r, err := m.Embed(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func norm2(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// The pooled vectors are the per-token hidden states pooled: mean, first,
// last; normalizing gives unit length; a causal model without
// {arch}.pooling_type pools none by default, as llama.cpp.
func TestEmbedPooling(t *testing.T) {
	m := loadStories(t)
	in := []string{"Once upon a time there was a cat."}
	if m.EmbeddingPooling() != PoolingNone {
		t.Fatalf("stories260K has no pooling_type: default pooling %v, want none", m.EmbeddingPooling())
	}
	none := embedOne(t, m, EmbedOptions{Inputs: in})
	if none.Pooling != PoolingNone {
		t.Fatalf("pooling %v", none.Pooling)
	}
	e := none.Embeddings[0]
	n, d := len(e.Tokens), m.Config().NEmbd
	if n < 5 || e.Vector != nil || len(e.TokenVectors) != n || len(e.TokenVectors[0]) != d || none.Tokens != n {
		t.Fatalf("none: %d tokens, %d token vectors, vector %v", n, len(e.TokenVectors), e.Vector != nil)
	}
	if e.Tokens[0] != m.Tokenizer().BOS() {
		t.Fatalf("first token %d, want BOS", e.Tokens[0])
	}
	rows := e.TokenVectors
	if slices.Equal(rows[0], rows[1]) {
		t.Fatal("two tokens have the same hidden state")
	}
	want := map[Pooling][]float32{PoolingCLS: rows[0], PoolingLast: rows[n-1], PoolingMean: make([]float32, d)}
	for j := 0; j < d; j++ {
		s := 0.0
		for _, r := range rows {
			s += float64(r[j])
		}
		want[PoolingMean][j] = float32(s / float64(n))
	}
	for p, w := range want {
		r := embedOne(t, m, EmbedOptions{Inputs: in, Pooling: p})
		if r.Pooling != p || !slices.Equal(r.Embeddings[0].Vector, w) || r.Embeddings[0].TokenVectors != nil {
			t.Errorf("%v: pooled vector differs from the hidden states pooled", p)
		}
		rn := embedOne(t, m, EmbedOptions{Inputs: in, Pooling: p, Normalize: true})
		v := rn.Embeddings[0].Vector
		if math.Abs(norm2(v)-1) > 1e-6 {
			t.Errorf("%v normalized: length %v", p, norm2(v))
		}
		scale := norm2(w)
		for j := range v {
			if math.Abs(float64(v[j])-float64(w[j])/scale) > 1e-6 {
				t.Fatalf("%v normalized: [%d] = %v, want %v", p, j, v[j], float64(w[j])/scale)
			}
		}
	}
}

// The embedding is the final-normed hidden state: multiplied by the output
// matrix it gives the logits Eval returns for the same position.
func TestEmbedIsHiddenBeforeOutput(t *testing.T) {
	m := loadStories(t)
	ids, err := m.Tokenizer().Encode("The dog ran home", true, true)
	if err != nil {
		t.Fatal(err)
	}
	r := embedOne(t, m, EmbedOptions{Tokens: [][]int32{ids}, Pooling: PoolingLast})
	h := r.Embeddings[0].Vector
	logits, err := newSession(t, m, 0).Eval(ids, false)
	if err != nil {
		t.Fatal(err)
	}
	out := m.w.Output
	if out.Type.String() != "F32" {
		t.Skipf("output matrix is %v, the test needs F32", out.Type)
	}
	row := make([]float32, out.Cols)
	worst := 0.0
	for v := 0; v < m.Config().NVocab; v++ {
		out.embedRow(v, row)
		dot := 0.0
		for j := range row {
			dot += float64(row[j]) * float64(h[j])
		}
		worst = max(worst, math.Abs(dot-float64(logits[v])))
	}
	if worst > 1e-3 {
		t.Fatalf("hidden state x output matrix differs from the logits by %g", worst)
	}
}

// Each input is evaluated alone: its embedding does not depend on the
// other inputs of the call, and the model's sessions and prefix cache are
// untouched.
func TestEmbedInputsIndependent(t *testing.T) {
	m := loadStories(t)
	a, b := "Lily liked to play.", "The sun was hot and the sky was blue."
	alone := embedOne(t, m, EmbedOptions{Inputs: []string{a}, Pooling: PoolingMean})
	both := embedOne(t, m, EmbedOptions{Inputs: []string{b, a}, Pooling: PoolingMean})
	if len(both.Embeddings) != 2 || !slices.Equal(alone.Embeddings[0].Vector, both.Embeddings[1].Vector) {
		t.Fatal("an input's embedding depends on the inputs before it")
	}
	if slices.Equal(both.Embeddings[0].Vector, both.Embeddings[1].Vector) {
		t.Fatal("different inputs have the same embedding")
	}

	// A generation session in progress gives the same logits with an
	// Embed in between, and the prefix cache sees no lookups.
	s, _ := m.NewSession(0)
	ids, _ := m.Tokenizer().Encode("Once upon a time", true, true)
	if _, err := s.Eval(ids, false); err != nil {
		t.Fatal(err)
	}
	before := m.CacheStats()
	embedOne(t, m, EmbedOptions{Inputs: []string{a, b}})
	if after := m.CacheStats(); after.Prefix.Hits != before.Prefix.Hits || after.Prefix.Misses != before.Prefix.Misses {
		t.Fatalf("Embed used the prefix cache: %+v -> %+v", before.Prefix, after.Prefix)
	}
	got, err := s.Eval([]int32{ids[1]}, false)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := m.NewSession(0)
	s2.Eval(ids, false)
	want, _ := s2.Eval([]int32{ids[1]}, false)
	if !slices.Equal(got, want) {
		t.Fatal("a session's logits changed after Embed")
	}
}

func TestEmbedTruncateAndErrors(t *testing.T) {
	m := loadStories(t)
	ctx := context.Background()
	long := strings.Repeat("The cat sat on the mat. ", 8)
	ids, _ := m.Tokenizer().Encode(long, true, true)
	if len(ids) <= 20 {
		t.Fatalf("long input has only %d tokens", len(ids))
	}
	_, err := m.Embed(ctx, EmbedOptions{Inputs: []string{"short", long}, NCtx: 20})
	var tl *InputTooLongError
	if !errors.As(err, &tl) || tl.Input != 1 || tl.Tokens != len(ids) || tl.NCtx != 20 {
		t.Fatalf("long input without truncation: err = %v", err)
	}
	r, err := m.Embed(ctx, EmbedOptions{Inputs: []string{long}, NCtx: 20, Truncate: true, Pooling: PoolingMean})
	if err != nil {
		t.Fatal(err)
	}
	e := r.Embeddings[0]
	if !e.Truncated || !slices.Equal(e.Tokens, ids[:20]) || r.Tokens != 20 {
		t.Fatalf("truncated to %v (truncated %v), want the first 20 of %v", e.Tokens, e.Truncated, ids)
	}
	direct := embedOne(t, m, EmbedOptions{Tokens: [][]int32{ids[:20]}, Pooling: PoolingMean})
	if !slices.Equal(direct.Embeddings[0].Vector, e.Vector) || direct.Embeddings[0].Truncated {
		t.Fatal("the truncated input's embedding differs from embedding its first 20 tokens")
	}

	// An input longer than one batch (512 tokens) is evaluated in chunks:
	// the same hidden states as a context that takes it at once would
	// give are not checked here, only that it works and pools all tokens.
	many := make([]int32, 600)
	for i := range many {
		many[i] = ids[1+i%(len(ids)-1)]
	}
	r, err = m.Embed(ctx, EmbedOptions{Tokens: [][]int32{many}, NCtx: 600, Pooling: PoolingNone})
	if err != nil || len(r.Embeddings[0].TokenVectors) != 600 {
		t.Fatalf("600-token input: %v", err)
	}

	empty := embedOne(t, m, EmbedOptions{Inputs: []string{}})
	if len(empty.Embeddings) != 0 || empty.Tokens != 0 {
		t.Fatalf("no inputs: %+v", empty)
	}
	for name, o := range map[string]EmbedOptions{
		"input 0 is empty":            {Tokens: [][]int32{{}}},
		"token id 99999 out of range": {Tokens: [][]int32{{1, 99999}}},
		"not both":                    {Inputs: []string{"a"}, Tokens: [][]int32{{1}}},
		"classification head":         {Inputs: []string{"a"}, Pooling: PoolingRank},
		"unknown pooling":             {Inputs: []string{"a"}, Pooling: 9},
		"negative":                    {Inputs: []string{"a"}, NCtx: -1},
	} {
		if _, err := m.Embed(ctx, o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Embed(cctx, EmbedOptions{Inputs: []string{"a"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v", err)
	}
}

// withPooling copies a model file with {arch}.pooling_type set to v.
func withPooling(t *testing.T, src string, v uint32) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "pooled.gguf")
	err := loader.CopyWith(src, dst, func(f *loader.File, w *loader.Writer) { w.SetUint32(f.Architecture()+".pooling_type", v) })
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// A file's {arch}.pooling_type is the default pooling; a bad value is a
// load error naming the key.
func TestEmbedFilePooling(t *testing.T) {
	src := filepath.Join(sharedDir(t), "models", "stories260K-F32.gguf")
	ref := loadStories(t)
	in := EmbedOptions{Inputs: []string{"A big red ball."}}
	for v, p := range map[uint32]Pooling{1: PoolingMean, 3: PoolingLast, 2: PoolingCLS} {
		m := loadPath(t, withPooling(t, src, v), LoadOptions{})
		if m.EmbeddingPooling() != p || m.Config().Pooling != p {
			t.Fatalf("pooling_type %d: pooling %v, want %v", v, m.EmbeddingPooling(), p)
		}
		got := embedOne(t, m, in)
		o := in
		o.Pooling = p
		want := embedOne(t, ref, o)
		if got.Pooling != p || !slices.Equal(got.Embeddings[0].Vector, want.Embeddings[0].Vector) {
			t.Fatalf("pooling_type %d: default pooling does not pool %v", v, p)
		}
	}
	if _, err := Load(withPooling(t, src, 7), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "llama.pooling_type") {
		t.Fatalf("pooling_type 7: err = %v", err)
	}
}

func TestParsePooling(t *testing.T) {
	for _, s := range []string{"default", "none", "mean", "cls", "last", "rank"} {
		p, err := ParsePooling(s)
		if err != nil || p.String() != s {
			t.Errorf("%s: %v %v", s, p, err)
		}
	}
	if _, err := ParsePooling("max"); err == nil {
		t.Error("max: no error")
	}
	v := []float32{3, 4}
	NormalizeL2(v)
	if v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("NormalizeL2(3, 4) = %v", v)
	}
	z := []float32{0, 0}
	NormalizeL2(z)
	if z[0] != 0 || z[1] != 0 {
		t.Errorf("NormalizeL2(0, 0) = %v", z)
	}
}

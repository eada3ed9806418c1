package runtime

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/kernels"
)

// TestKVCacheParity: with quantized KV caches (LoadOptions.CacheTypeK/V)
// the logits match llama.cpp's with the same -ctk/-ctv (flash attention on)
// at every position, the prompt in one batch and token by token, for the
// references in testdata/kvcache (README there says how they were made).
// The f16/f16 control of the same tool equals ../shared/ref bit for bit.
func TestKVCacheParity(t *testing.T) {
	refs, _ := filepath.Glob(filepath.Join("testdata", "kvcache", "*.json"))
	require.NotEmpty(t, refs)
	const tol = 1e-4
	for _, rf := range refs {
		base := filepath.Base(rf) // MODEL.K-V.TAG.json
		parts := strings.Split(base, ".")
		require.Len(t, parts, 4, base)
		model, kv := parts[0], strings.Split(parts[1], "-")
		t.Run(strings.TrimSuffix(base, ".json"), func(t *testing.T) {
			m := loadShared(t, model, LoadOptions{Threads: 2, CacheTypeK: kv[0], CacheTypeV: kv[1]})
			defer m.Close()
			kvParity(t, m, rf, tol)
		})
	}
}

// kvParity compares m's logits with the reference file rf (made with m's
// cache types): the prompt as the reference ran it (one batch), then the
// greedy tokens one at a time, each row's top logits within tol.
func kvParity(t *testing.T, m *Model, rf string, tol float64) {
	var ref refLogits
	readJSON(t, rf, &ref)
	ids, err := m.Tokenizer().Encode(ref.Prompt, m.Tokenizer().AddBOS(), true)
	require.NoError(t, err)
	require.Equal(t, ref.PromptIDs, ids)
	n := len(ref.PromptIDs)
	seq, tops := teacherForced(ref)
	nv := m.Info().NVocab
	s := newSession(t, m, 0)
	all := evalAll(t, s, seq[:n])
	batch, token := 0.0, 0.0
	for i := 0; i < n; i++ {
		batch = max(batch, compareTop(t, fmt.Sprintf("batch pos %d", i), all[i*nv:(i+1)*nv], tops[i], tol))
	}
	for i := n; i < len(seq); i++ {
		row, err := s.Eval(seq[i:i+1], false)
		require.NoError(t, err)
		token = max(token, compareTop(t, fmt.Sprintf("token pos %d", i), row, tops[i], tol))
	}
	t.Logf("%s: max |Δlogit| prompt batch %.3g, generated tokens %.3g", filepath.Base(rf), batch, token)
	if batch > tol || token > tol {
		t.Errorf("max |Δlogit| %.3g / %.3g exceeds %g", batch, token, tol)
	}
}

// Cache types: bad names are errors naming the option, the memory a
// position takes follows the types (q8_0 about half of f16), snapshots
// keep quantized rows, and prompt cache files refuse them.
func TestKVCacheTypes(t *testing.T) {
	for _, o := range []LoadOptions{{CacheTypeK: "q5_1"}, {CacheTypeV: "bf16"}} {
		_, err := Load(filepath.Join(sharedDir(t), "models", "synth-llama-mini-Q4_K_M.gguf"), o)
		require.Error(t, err)
		switch {
		case o.CacheTypeK == "q5_1":
			require.Contains(t, err.Error(), "cache-type-k")
		case o.CacheTypeV == "bf16":
			require.Contains(t, err.Error(), "cache-type-v")
		}
	}
	// head size 8: no quantized cache
	_, err := Load(filepath.Join(sharedDir(t), "models", "stories260K-Q8_0.gguf"), LoadOptions{CacheTypeK: "q8_0"})
	require.ErrorContains(t, err, "multiple of 32")

	f16 := loadShared(t, "synth-llama-mini-Q4_K_M", LoadOptions{Threads: 1})
	defer f16.Close()
	q8 := loadShared(t, "synth-llama-mini-Q4_K_M", LoadOptions{Threads: 1, CacheTypeK: "Q8_0", CacheTypeV: "q8_0"})
	defer q8.Close()
	q4 := loadShared(t, "synth-llama-mini-Q4_K_M", LoadOptions{Threads: 1, CacheTypeK: "q4_0", CacheTypeV: "q4_0"})
	defer q4.Close()
	kvd := int64(f16.cfg.KVDim())
	require.Equal(t, int64(f16.cfg.NLayer)*2*2*kvd, f16.KVBytesPerPosition())
	require.Equal(t, int64(f16.cfg.NLayer)*2*(kvd/32*34), q8.KVBytesPerPosition())
	require.Equal(t, int64(f16.cfg.NLayer)*2*(kvd/32*18), q4.KVBytesPerPosition())
	k, v := q8.CacheTypes()
	require.Equal(t, kernels.Q8_0, k)
	require.Equal(t, kernels.Q8_0, v)

	// Snapshot / Restore with a quantized cache: the same next logits.
	toks := []int32{1, 9038, 2501, 263, 931, 29892, 727}
	s := newSession(t, q8, 64)
	evalAll(t, s, toks)
	sn := s.Snapshot()
	want, err := s.Eval([]int32{338}, false)
	require.NoError(t, err)
	s2 := newSession(t, q8, 64)
	require.NoError(t, s2.Restore(sn))
	got, err := s2.Eval([]int32{338}, false)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.ErrorIs(t, s.PromptCacheSupported(), ErrPromptCache)
}

// With a quantized cache a sequence's logits are the same bits alone in a
// batch, beside others and outside any batch, as with f16.
func TestKVCacheBatchMatchesAlone(t *testing.T) {
	for _, kv := range [][2]string{{"q8_0", "q8_0"}, {"q4_0", "f16"}} {
		t.Run(kv[0]+"-"+kv[1], func(t *testing.T) {
			m := loadShared(t, "synth-llama-mini-Q4_K_M", LoadOptions{Threads: 2, ContextLength: 256,
				PrefixCache: Ptr(int64(0)), CacheTypeK: kv[0], CacheTypeV: kv[1]})
			defer m.Close()
			batchMatchesAlone(t, m, 16, 6)
		})
	}
}

package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/synth"
)

// gemma4Minis pins the bytes of `woolly synth --preset NAME` (seed 1,
// Q4_K_M, synth's built-in Gemma 4-style vocabulary), the files llama.cpp's
// references in testdata/gemma4 were made from.
var gemma4Minis = map[string]string{
	"gemma4-mini":     "e4547615a579d58c27a6d5aabb48d5e050ed971ad05fdde7fadbc00905ae85c9",
	"gemma4-moe-mini": "93ebe6428f73f43be2b162a7b8c73d3654cdef7be87ceaf614071c652f3aa042",
}

// gemma4Mini writes the dense gemma4 mini (gemma4MiniNamed).
func gemma4Mini(t testing.TB) string { return gemma4MiniNamed(t, "gemma4-mini") }

// gemma4MiniNamed writes the synth preset name into a temporary directory,
// checks its pinned checksum and returns its path.
func gemma4MiniNamed(t testing.TB, name string) string {
	t.Helper()
	return synthMini(t, name, "q4_k_m", "", "synth-"+name+"-Q4_K_M.gguf", gemma4Minis[name], "gemma4")
}

func gemma4Refs(t *testing.T, name string) map[string]refLogits {
	return miniRefs(t, "gemma4", "synth-"+name+"-Q4_K_M")
}

// TestGemma4Parity: the gemma4 mini's logits equal llama.cpp's following
// its procedure (prompt as one batch, greedy ids one at a time): the
// reference's bits (the JSON's 9 digits) at every row of the 6 prompts. Teacher-forced (prompt + greedy ids) as one batch, token by token
// and in uneven chunks, every row whose attention took the same path as the
// reference's, it and every row before it (f16 below 64 rows, tiled from
// 64), is within 0.1; the rows that cross paths are logged (the f16 path's rounding moves this
// mini's logits by up to ~0.6: its attention scale is 1 over RMS-normed q
// and k). Prompt ids, the 16 greedy ids and their text are identical.
func TestGemma4Parity(t *testing.T) {
	for _, name := range []string{"gemma4-mini", "gemma4-moe-mini"} {
		t.Run(name, func(t *testing.T) { gemma4Parity(t, name) })
	}
}

func gemma4Parity(t *testing.T, name string) {
	m := loadPath(t, gemma4MiniNamed(t, name), LoadOptions{Threads: 2, PrefixCache: Ptr(int64(0))})
	const tol, bits = 0.1, 1e-6
	nv := m.Info().NVocab
	worst, cross := map[string]float64{}, map[string]float64{}
	compared := map[string]int{}
	offBits := 0
	for tag, ref := range gemma4Refs(t, name) {
		ids, err := m.Tokenizer().Encode(ref.Prompt, m.Tokenizer().AddBOS(), true)
		require.NoError(t, err)
		require.Equal(t, ref.PromptIDs, ids, "%s: prompt ids", tag)
		seq, tops := teacherForced(ref)
		np := len(ref.PromptIDs)
		// refTiled: llama.cpp computed row i with the tiled attention path.
		refTiled := func(i int) bool { return i < np && np >= 64 }
		// A row is comparable while its path and that of every row before
		// it (its KV history) are the reference's.
		diverged := map[string]bool{}
		check := func(mode string, i int, row []float32, tiled bool) {
			if diverged[mode] = diverged[mode] || tiled != refTiled(i); diverged[mode] {
				cross[mode] = max(cross[mode], compareTop(t, "", row, tops[i], 1e9))
				return
			}
			compared[mode]++
			worst[mode] = max(worst[mode], compareTop(t, fmt.Sprintf("%s %s pos %d", tag, mode, i), row, tops[i], tol))
		}

		s := newSession(t, m, 0)
		pr := evalAll(t, s, ref.PromptIDs)
		proc := func(what string, row []float32, top refTop) {
			d := compareTop(t, what, row, top, tol)
			worst["procedure"] = max(worst["procedure"], d)
			if d > bits {
				offBits++
				t.Logf("%s: |Δlogit| %.3g (not the reference's bits)", what, d)
			}
		}
		for i := range ref.PromptIDs {
			proc(fmt.Sprintf("%s prompt pos %d", tag, i), pr[i*nv:(i+1)*nv], ref.Positions[i].Top)
		}
		for k := 1; k < len(ref.Greedy.Steps); k++ {
			row, err := s.Eval([]int32{ref.Greedy.IDs[k-1]}, false)
			require.NoError(t, err)
			proc(fmt.Sprintf("%s step %d", tag, k), row, ref.Greedy.Steps[k].Top)
		}

		s.Reset()
		all := evalAll(t, s, seq)
		for i := range seq {
			check("batch", i, all[i*nv:(i+1)*nv], len(seq) >= 64)
		}
		s.Reset()
		for i, id := range seq {
			row, err := s.Eval([]int32{id}, false)
			require.NoError(t, err)
			check("token", i, row, false)
		}
		s.Reset()
		for i := 0; i < len(seq); {
			n := min(len(seq)-i, 1+(i*7)%23) // 1, 8, 16, ... tokens per pass (all below 64)
			rows, err := s.Eval(seq[i:i+n], true)
			require.NoError(t, err)
			for j := 0; j < n; j++ {
				check("chunks", i+j, rows[j*nv:(j+1)*nv], false)
			}
			i += n
		}

		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: ref.Prompt, MaxTokens: len(ref.Greedy.IDs), NCtx: 512}, nil)
		require.NoError(t, err)
		require.Equal(t, ref.Greedy.IDs, res.Tokens, "%s: greedy ids", tag)
		want := ref.Greedy.Text
		if last := ref.Greedy.IDs[len(ref.Greedy.IDs)-1]; m.Tokenizer().IsEOG(last) {
			// Generate stops at the end token without printing it; refdump
			// renders every piece.
			want = strings.TrimSuffix(want, string(m.Tokenizer().Piece(last)))
		}
		require.Equal(t, want, res.Text, "%s: greedy text", tag)
	}
	t.Logf("%s max |Δlogit| vs llama.cpp: its procedure %.3g (%d rows off its bits); teacher-forced, same path: batch %.3g (%d rows), token by token %.3g (%d), chunked %.3g (%d); across paths: batch %.3g, token %.3g, chunked %.3g",
		name, worst["procedure"], offBits, worst["batch"], compared["batch"], worst["token"], compared["token"], worst["chunks"], compared["chunks"],
		cross["batch"], cross["token"], cross["chunks"])
	for _, k := range []string{"batch", "token", "chunks"} {
		require.Greater(t, compared[k], 50, "%s: too few rows on the reference's path", k)
	}
	for k, v := range worst {
		if v > tol {
			t.Errorf("%s: max |Δlogit| %.3g exceeds %g", k, v, tol)
		}
	}
	if offBits > 0 {
		t.Errorf("%d rows of llama.cpp's procedure differ from its bits", offBits)
	}
}

// TestGemma4Perplexity: llama-perplexity's figure for the mini on the shared
// dev text (c = 128, 10 chunks, llama.cpp's native build) to 4 decimals.
func TestGemma4Perplexity(t *testing.T) {
	for _, name := range []string{"gemma4-mini", "gemma4-moe-mini"} {
		got, want := miniPerplexity(t, "gemma4", name, gemma4MiniNamed(t, name))
		require.InDelta(t, want, got, 5e-5, "%s: PPL to 4 decimals", name)
	}
}

// TestGemma4Tokenizer: the mini's Gemma 4-style vocabulary (tokenizer model
// gemma4: BPE over raw UTF-8, spaces as U+2581, runs of newlines split off
// and kept whole when they are a token, <0xNN> byte fallback, BOS always)
// gives llama-tokenize's ids for every text of testdata/gemma4/tokenizer.json,
// and decoding them gives the text back.
func TestGemma4Tokenizer(t *testing.T) {
	m := loadPath(t, gemma4Mini(t), LoadOptions{Threads: 1})
	var cases []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	}
	readJSON(t, filepath.Join("testdata", "gemma4", "tokenizer.json"), &cases)
	require.GreaterOrEqual(t, len(cases), 20)
	tk := m.Tokenizer()
	require.Equal(t, "gemma4", tk.Model())
	require.True(t, tk.AddBOS())
	for _, c := range cases {
		ids, err := tk.Encode(c.Text, true, true)
		require.NoError(t, err)
		require.Equal(t, c.IDs, ids, "%q", c.Text)
		require.Equal(t, c.Text, tk.Decode(ids[1:]), "decode %q", c.Text)
	}
}

// TestGemma4BadFiles: a gemma4 file with a missing or contradicting key or
// tensor fails to load with one error naming it.
func TestGemma4BadFiles(t *testing.T) {
	path := gemma4Mini(t)
	bools := func(b ...bool) *loader.Value {
		x := loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: loader.TypeBool, Values: b}}
		return &x
	}
	cases := []badFile{
		{"shared KV exceeds layers", map[string]*loader.Value{"gemma4.attention.shared_kv_layers": u32(7)}, "", "attention.shared_kv_layers 7 leaves fewer than 2 of the 6 layers"},
		{"shared KV of the wrong kind", map[string]*loader.Value{"gemma4.attention.shared_kv_layers": u32(1)}, "", "layer 5 (global, 1 KV heads of 32) cannot share the cache of layer 4 (sliding-window"},
		{"no key_length_swa", map[string]*loader.Value{"gemma4.attention.key_length_swa": nil}, "", "key gemma4.attention.key_length_swa is missing"},
		{"value_length_swa differs", map[string]*loader.Value{"gemma4.attention.value_length_swa": u32(32)}, "", "value_length_swa 32 differs from key_length_swa 16"},
		{"no window pattern", map[string]*loader.Value{"gemma4.attention.sliding_window_pattern": nil}, "", "key gemma4.attention.sliding_window_pattern is missing"},
		{"short window pattern", map[string]*loader.Value{"gemma4.attention.sliding_window_pattern": bools(true, false)}, "", "sliding_window_pattern has 2 entries for 6 layers"},
		{"no window", map[string]*loader.Value{"gemma4.attention.sliding_window": nil}, "", "key gemma4.attention.sliding_window is missing"},
		{"no per-layer width", map[string]*loader.Value{"gemma4.embedding_length_per_layer_input": nil}, "", "key gemma4.embedding_length_per_layer_input is missing"},
		{"no eps", map[string]*loader.Value{"gemma4.attention.layer_norm_rms_epsilon": nil}, "", "key gemma4.attention.layer_norm_rms_epsilon is missing"},
		{"rotated dims too wide", map[string]*loader.Value{"gemma4.rope.dimension_count_swa": u32(32)}, "", "rope.dimension_count_swa 32 is invalid for head size 16"},
		{"experts without their width", map[string]*loader.Value{"gemma4.expert_count": u32(4), "gemma4.expert_used_count": u32(2)}, "", "key gemma4.expert_feed_forward_length is missing or 0"},
		{"no per-layer embeddings", nil, "per_layer_token_embd.weight", "tensor per_layer_token_embd.weight is missing"},
		{"no rope_freqs", nil, "rope_freqs.weight", "tensor rope_freqs.weight is missing"},
		{"no k in an own-KV layer", nil, "blk.1.attn_k.weight", "tensor blk.1.attn_k.weight is missing"},
		{"no inp_gate", nil, "blk.4.inp_gate.weight", "tensor blk.4.inp_gate.weight is missing"},
		{"ffn width contradicts", map[string]*loader.Value{"gemma4.feed_forward_length": u32(128)}, "", "blk.3.ffn_gate.weight has shape"},
	}
	requireBadFiles(t, path, "", cases)
	// The mixture-of-experts layers' own keys and tensors.
	moe := gemma4MiniNamed(t, "gemma4-moe-mini")
	requireBadFiles(t, moe, "moe/", []badFile{
		{"no router scale", nil, "blk.1.ffn_gate_inp.scale", "tensor blk.1.ffn_gate_inp.scale is missing"},
		{"no fused gate_up", nil, "blk.2.ffn_gate_up_exps.weight", "tensor blk.2.ffn_gate_exps.weight is missing"},
		{"no down experts", nil, "blk.3.ffn_down_exps.weight", "tensor blk.3.ffn_down_exps.weight is missing"},
		{"no pre norm 2", nil, "blk.0.pre_ffw_norm_2.weight", "tensor blk.0.pre_ffw_norm_2.weight is missing"},
		{"used exceeds count", map[string]*loader.Value{"gemma4.expert_used_count": u32(5)}, "", "expert_used_count 5 is not in 1..expert_count 4"},
		{"no expert count", map[string]*loader.Value{"gemma4.expert_count": nil, "gemma4.expert_used_count": nil}, "", "ffn_gate_inp.weight is present but key gemma4.expert_count is missing"},
		{"expert width contradicts", map[string]*loader.Value{"gemma4.expert_feed_forward_length": u32(64)}, "", "ffn_down_exps.weight has shape"},
	})
}

// TestGemma4BatchAndPrefix: sequences evaluated together in one Batch get
// the logits they get alone, bit for bit (each with its own caches, the
// shared layers reading their own sequence's), and a follow-up request
// that extends a stored conversation reuses its KV prefix (shared layers
// included) with the tokens and logits of a run from scratch.
func TestGemma4BatchAndPrefix(t *testing.T) {
	for _, name := range []string{"gemma4-mini", "gemma4-moe-mini"} {
		t.Run(name, func(t *testing.T) { gemma4BatchAndPrefix(t, name) })
	}
}

func gemma4BatchAndPrefix(t *testing.T, name string) {
	path := gemma4MiniNamed(t, name)
	m := loadPath(t, path, LoadOptions{Threads: 2, ContextLength: 256, PrefixCache: Ptr(int64(0))})
	prompts, _ := batchTogetherMatchesAlone(t, m, 16, 6)

	pm := loadPath(t, path, LoadOptions{Threads: 2})
	seq := append(slices.Clone(prompts[3]), prompts[2]...) // 51 tokens: past the 32-position window
	_, turn2 := followUp(t, pm, m, seq, 5, 6, 7, 8)
	require.Greater(t, turn2.CachedTokens, len(seq)-1, "turn 2 must reuse turn 1's prefix")
}

// A quantized KV cache is refused at load when a layer's head size is not
// a multiple of its block (the mini's local layers have 16), as llama.cpp
// refuses it, naming the size.
func TestGemma4RefusesQuantizedKV(t *testing.T) {
	_, err := Load(gemma4Mini(t), LoadOptions{Threads: 1, CacheTypeK: "q8_0"})
	require.ErrorContains(t, err, "needs head sizes that are a multiple of 32; this gemma4 model has 16 (layer 0)")
}

// gemma4KV32Mini writes gemma4-mini with head sizes 32 (local) and 64
// (global), which a quantized cache's 32-value blocks divide (llama.cpp
// refuses the mini's 16), and checks its pinned sha256.
func gemma4KV32Mini(t *testing.T) string {
	t.Helper()
	p, err := synth.FindPreset("gemma4-mini")
	require.NoError(t, err)
	g := *p.G4
	g.HeadDimSWA, g.RotSWA = 32, 32
	p.G4, p.HeadDim, p.Rot = &g, 64, 64
	path := writeSynth(t, p, "q4_k_m", "", "synth-gemma4-kv32-mini-Q4_K_M.gguf")
	require.Equal(t, "819fc0c89c6ce77771e834bc9bafe4a157acba77d5b2d560e81b58c640213fd5", fileSHA256(t, path),
		"synth bytes changed: remake testdata/kvcache/gemma4 (README.md)")
	return path
}

// TestGemma4KVCacheParity: gemma4 with quantized K and V caches (per-layer
// head sizes, shared-KV layers reading another layer's quantized rows)
// gives llama.cpp's logits with the same cache types
// (testdata/kvcache/gemma4, README there) within 1e-4, the prompt in one
// batch and the generated tokens one at a time; f16-f16 is the control.
func TestGemma4KVCacheParity(t *testing.T) {
	path := gemma4KV32Mini(t)
	refs, _ := filepath.Glob(filepath.Join("testdata", "kvcache", "gemma4", "*.json"))
	require.Len(t, refs, 10)
	for _, rf := range refs {
		kv := strings.Split(strings.Split(filepath.Base(rf), ".")[1], "-")
		t.Run(strings.TrimSuffix(filepath.Base(rf), ".json"), func(t *testing.T) {
			m, err := Load(path, LoadOptions{Threads: 2, ContextLength: 256, CacheTypeK: kv[0], CacheTypeV: kv[1]})
			require.NoError(t, err)
			defer m.Close()
			kvParity(t, m, rf, 1e-4)
		})
	}
}

// TestGemma4QuantKVBatch: with quantized caches, gemma4 prompts evaluated
// together in one batch (in chunks) and generated together give each
// sequence the logits it has alone.
func TestGemma4QuantKVBatch(t *testing.T) {
	m := loadPath(t, gemma4KV32Mini(t), LoadOptions{Threads: 2, ContextLength: 256, PrefixCache: Ptr(int64(0)), CacheTypeK: "q8_0", CacheTypeV: "q4_0"})
	batchTogetherMatchesAlone(t, m, 16, 6)
}

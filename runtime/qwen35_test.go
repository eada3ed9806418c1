package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/loader"
)

// deltaNetMinis pins the bytes of `woolly synth --preset NAME --vocab
// ../shared/vocab/ggml-vocab-gpt-2.gguf` (seed 1, Q4_K_M), the files
// llama.cpp's references in testdata/qwen35 were made from.
var deltaNetMinis = map[string]string{
	"qwen35-mini":    "8479c17d99a63edfd13e2907d53bfeae81c28b371e0cf53d20499301786ca4ef",
	"qwen35moe-mini": "528ee11264bfd5aba3c263c5e5a356f87d578560f35f163c71cab43980234edf",
	"qwen3next-mini": "a879e607201fa950bd5dd18f231d31d816f49c411251298b6964358c092c055a",
	// Qwen3.5-0.8B's shapes cut to 4 layers (90 MiB; refs from the
	// AVX-512 build without AMX, testdata/qwen35/README.md).
	"qwen35-0.8b-4l": "05b0f66a193b7f45ccf24751189c426b4dd7aa6098056386e8f1476afeb54059",
}

// qwen35Mini writes the qwen35 mini into a temporary directory, checks its
// pinned checksum and returns its path.
func qwen35Mini(t testing.TB) string { return deltaNetMini(t, "qwen35-mini") }

// deltaNetMini writes the synth preset name into a temporary directory,
// checks its pinned checksum and returns its path.
func deltaNetMini(t testing.TB, name string) string {
	t.Helper()
	vocab := filepath.Join(sharedDir(t), "vocab", "ggml-vocab-gpt-2.gguf")
	return synthMini(t, name, "q4_k_m", vocab, "synth-"+name+"-Q4_K_M.gguf", deltaNetMinis[name], "qwen35")
}

// qwen35Refs reads llama.cpp's references for the mini name.
func qwen35Refs(t *testing.T, name string) map[string]refLogits {
	return miniRefs(t, "qwen35", "synth-"+name+"-Q4_K_M")
}

// teacherForced is the reference's prompt plus its greedy ids but the last,
// and the top list of every position of that sequence.
func teacherForced(ref refLogits) ([]int32, []refTop) {
	n := len(ref.PromptIDs)
	seq := append(slices.Clone(ref.PromptIDs), ref.Greedy.IDs[:len(ref.Greedy.IDs)-1]...)
	tops := make([]refTop, len(seq))
	for i, p := range ref.Positions {
		tops[i] = p.Top
	}
	for k, st := range ref.Greedy.Steps {
		if n-1+k < len(tops) {
			tops[n-1+k] = st.Top
		}
	}
	return seq, tops
}

// TestQwen35Parity: the qwen35, qwen35moe and qwen3next minis' logits equal
// llama.cpp's within the contract's tolerance for quantized files,
// evaluated as one batch, token by token and in uneven chunks (the
// recurrent state carried between passes); prompt ids and the 16 greedy
// ids are identical.
func TestQwen35Parity(t *testing.T) {
	for _, name := range []string{"qwen35-mini", "qwen35moe-mini", "qwen3next-mini"} {
		t.Run(name, func(t *testing.T) { deltaNetParity(t, name) })
	}
}

func deltaNetParity(t *testing.T, name string) {
	m := loadPath(t, deltaNetMini(t, name), LoadOptions{Threads: 2, PrefixCache: Ptr(int64(0))})
	// Every mini reproduces the reference's bits following its procedure
	// (qwen3next-mini too, since the DeltaNet follows ggml's float order).
	refParity(t, m, name, qwen35Refs(t, name), 0.1, 0, true)
}

// TestQwen35BatchKeepsStates: sequences evaluated together in one Batch
// (their rows in shared passes) get the logits they get alone, bit for
// bit: each keeps its own conv and SSM state.
func TestQwen35BatchKeepsStates(t *testing.T) {
	m := loadPath(t, qwen35Mini(t), LoadOptions{Threads: 2, ContextLength: 256, PrefixCache: Ptr(int64(0))})
	batchTogetherMatchesAlone(t, m, 16, 6)
}

// TestQwen35PrefixReuse: a recurrent state cannot be rolled back, so
// Truncate keeps all positions or none; a follow-up request that extends a
// stored conversation restores its snapshot (state included) and evaluates
// only the new tokens, with the logits of a run from scratch.
func TestQwen35PrefixReuse(t *testing.T) {
	path := qwen35Mini(t)
	m := loadPath(t, path, LoadOptions{Threads: 2})
	s := newSession(t, m, 256)
	seq := []int32{7454, 2402, 257, 640, 11, 612, 373, 257}
	evalAll(t, s, seq)
	err := s.Truncate(3)
	require.Error(t, err)
	require.Contains(t, err.Error(), "recurrent state")
	require.NoError(t, s.Truncate(len(seq)))
	require.NoError(t, s.Truncate(0))
	require.Equal(t, 0, s.Pos())

	fresh := loadPath(t, path, LoadOptions{Threads: 2, PrefixCache: Ptr(int64(0))})
	turn1, turn2 := followUp(t, m, fresh, seq, 198, 464, 1310, 3290)
	// The last generated token was sampled, never evaluated: the snapshot
	// holds the prompt and all but the last reply token.
	require.Equal(t, len(seq)+len(turn1.Tokens)-1, turn2.CachedTokens, "turn 2 must reuse what turn 1 evaluated")
}

// TestQwen35BadFiles: a qwen35 file with a missing or contradicting key or
// tensor fails to load with one error naming it.
func TestQwen35BadFiles(t *testing.T) {
	path := qwen35Mini(t)
	cases := []badFile{
		{"no conv tensor", nil, "blk.0.ssm_conv1d.weight", "tensor blk.0.ssm_conv1d.weight is missing"},
		{"no ssm_a", nil, "blk.1.ssm_a", "tensor blk.1.ssm_a is missing"},
		{"no gated q", nil, "blk.3.attn_q.weight", "tensor blk.3.attn_q.weight is missing"},
		{"no conv kernel key", map[string]*loader.Value{"qwen35.ssm.conv_kernel": nil}, "", "key qwen35.ssm.conv_kernel is missing"},
		{"no group count", map[string]*loader.Value{"qwen35.ssm.group_count": nil}, "", "key qwen35.ssm.group_count is missing"},
		{"inner size lies", map[string]*loader.Value{"qwen35.ssm.inner_size": u32(96)}, "", "ssm.inner_size 96"},
		{"state size lies", map[string]*loader.Value{"qwen35.ssm.state_size": u32(32), "qwen35.ssm.inner_size": u32(128)}, "", "blk.0.attn_qkv.weight has shape"},
		{"no sections", map[string]*loader.Value{"qwen35.rope.dimension_sections": nil}, "", "key qwen35.rope.dimension_sections is missing"},
		{"heads not a multiple", map[string]*loader.Value{"qwen35.ssm.time_step_rank": u32(3), "qwen35.ssm.inner_size": u32(48)}, "", "not a multiple of ssm.group_count"},
		{"nextn too large", map[string]*loader.Value{"qwen35.nextn_predict_layers": u32(4)}, "", "nextn_predict_layers"},
		{"interval zero", map[string]*loader.Value{"qwen35.full_attention_interval": u32(0)}, "", "full_attention_interval has invalid value 0"},
	}
	requireBadFiles(t, path, "", cases)
	// The MoE variants' own tensors and keys.
	for _, c := range []struct {
		mini, drop, want string
		set              map[string]*loader.Value
	}{
		{"qwen35moe-mini", "blk.2.ffn_gate_inp_shexp.weight", "tensor blk.2.ffn_gate_inp_shexp.weight is missing", nil},
		{"qwen35moe-mini", "blk.3.ffn_down_exps.weight", "tensor blk.3.ffn_down_exps.weight is missing", nil},
		{"qwen35moe-mini", "", "expert_shared_feed_forward_length 48", map[string]*loader.Value{"qwen35moe.expert_shared_feed_forward_length": u32(48)}},
		{"qwen3next-mini", "blk.0.ssm_ba.weight", "tensor blk.0.ssm_ba.weight is missing", nil},
		{"qwen3next-mini", "", "key qwen3next.expert_count is missing", map[string]*loader.Value{"qwen3next.expert_count": nil}},
	} {
		t.Run(c.mini+"/"+c.want, func(t *testing.T) {
			bad := rewriteModel(t, deltaNetMini(t, c.mini), c.set, c.drop)
			_, err := Load(bad, LoadOptions{Threads: 1})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// rewriteModel writes a copy of the model at path with metadata changed
// (a nil value deletes the key) and tensor drop left out.
func rewriteModel(t *testing.T, path string, set map[string]*loader.Value, drop string) string {
	t.Helper()
	return rewriteFile(t, path, "bad.gguf", set, drop, nil, nil)
}

// TestIMRoPETables: for text tokens, ggml's interleaved multi-section RoPE
// rotates pair i by the position unless its sector (i mod the sections'
// sum) falls to the fourth section, whose position is 0. Sections
// [3, 1, 2, 2] over 8 pairs: sectors 4 (4%3 = 1, not < 3*1) and 7 are
// unrotated; Qwen3.5's real [11, 11, 10, 0] (and the mini's [3, 3, 2, 0])
// rotate every pair.
func TestIMRoPETables(t *testing.T) {
	for _, tc := range []struct {
		secs [4]int
		e    []int
	}{{[4]int{3, 1, 2, 2}, []int{4, 7}}, {[4]int{3, 3, 2, 0}, nil}, {[4]int{1, 1, 1, 0}, nil}} {
		c := &Config{NRot: 16, RopeAttnFactor: 1, RopeSections: tc.secs}
		const ntok, pos0 = 3, 5
		cos, sin := make([]float32, ntok*8), make([]float32, ntok*8)
		ropeTables(c, 10000, 1, nil, pos0, ntok, cos, sin)
		wantC, wantS := slices.Clone(cos), slices.Clone(sin)
		for t := 0; t < ntok; t++ {
			for _, i := range tc.e {
				wantC[t*8+i], wantS[t*8+i] = 1, 0
			}
		}
		imropeTables(c, ntok, cos, sin)
		require.Equal(t, wantC, cos, "sections %v", tc.secs)
		require.Equal(t, wantS, sin, "sections %v", tc.secs)
	}
}

// TestQwen35Perplexity: llama-perplexity's figure on the shared dev text
// (c = 128, 4 chunks, llama.cpp's native build). qwen35-mini and
// qwen3next-mini give it to 4 decimals; qwen35moe-mini within 1e-3
// relative (measured 2.0e-4: its 128-token batches are not yet bit-exact,
// see docs/models-2026.md).
func TestQwen35Perplexity(t *testing.T) {
	for _, name := range []string{"qwen35-mini", "qwen35moe-mini", "qwen3next-mini"} {
		got, want := miniPerplexity(t, "qwen35", name, deltaNetMini(t, name))
		if name != "qwen35moe-mini" {
			require.InDelta(t, want, got, 5e-5, "%s: PPL to 4 decimals", name)
		} else {
			require.InEpsilon(t, want, got, 1e-3, name)
		}
	}
}

// TestQwen35Checkpoints: Generate keeps the recurrent state at 64-token
// prompt positions, 8 tokens before the end of each prompt and at its end,
// a few at a time; a later
// prompt that diverges inside the conversation goes back to the last
// checkpoint at or before the divergence (in the same session and through
// the prefix cache in another one) and evaluates only from there, with the
// logits of a run from scratch bit for bit.
func TestQwen35Checkpoints(t *testing.T) {
	path := qwen35Mini(t)
	m := loadPath(t, path, LoadOptions{Threads: 2, ContextLength: 512})
	fresh := loadPath(t, path, LoadOptions{Threads: 2, ContextLength: 512, PrefixCache: Ptr(int64(0))})
	ids := func(n int, seed int32) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = 300 + (seed*7919+int32(i)*104729)%20000
		}
		return out
	}
	promptOnly := func(s *Session, toks []int32) (*GenerateResult, []float32) {
		t.Helper()
		r, err := s.Generate(context.Background(), GenerateOptions{Tokens: toks, PromptOnly: true}, nil)
		require.NoError(t, err)
		return r, slices.Clone(s.last)
	}
	scratch := func(toks []int32) []float32 {
		t.Helper()
		s := newSession(t, fresh, 512)
		r, last := promptOnly(s, toks)
		require.Zero(t, r.CachedTokens)
		return last
	}

	a := ids(200, 1)
	s := newSession(t, m, 512)
	_, last := promptOnly(s, a)
	requireSameBits(t, scratch(a), last, "turn 1")
	require.Equal(t, []int{128, 192, 200}, s.Checkpoints()) // 64s within 128 of the end, 8 before it, the end
	err := s.Truncate(150)
	require.ErrorContains(t, err, "checkpoint")

	// From the end-of-prompt checkpoint at 200, not on a 64 boundary: the
	// pieces evaluated then (200-256, 256-260) are not those of a run from
	// scratch (one 260-token batch), and Woolly's attention takes another
	// path for batches of 64 tokens and more, so the reference is a session
	// that evaluates the same pieces without going back: a followed by y.
	s3 := newSession(t, m, 512)
	promptOnly(s3, a)
	x := append(slices.Clone(a), ids(3, 4)...)
	r, _ := promptOnly(s3, x)
	require.Equal(t, 200, r.CachedTokens)
	y := append(slices.Clone(a), ids(60, 5)...)
	r, last = promptOnly(s3, y) // diverges at 200 from x: back to 200
	require.Equal(t, 200, r.CachedTokens)
	ref := newSession(t, fresh, 512)
	promptOnly(ref, a)
	r, want := promptOnly(ref, y)
	require.Equal(t, 200, r.CachedTokens)
	requireSameBits(t, want, last, "from the end-of-prompt checkpoint")

	// Diverges at 150: back to 128, evaluate 128..
	b := append(slices.Clone(a[:150]), ids(30, 2)...)
	r, last = promptOnly(s, b)
	require.Equal(t, 128, r.CachedTokens)
	requireSameBits(t, scratch(b), last, "same session, diverged at 150")
	require.Equal(t, []int{128, 172, 180}, s.Checkpoints())

	// Another session: the prefix cache's snapshot of b (checkpoints
	// included) serves a prompt diverging at 170 from 128.
	c := append(slices.Clone(b[:170]), ids(12, 3)...)
	s2 := newSession(t, m, 512)
	r, last = promptOnly(s2, c)
	require.Equal(t, 128, r.CachedTokens)
	requireSameBits(t, scratch(c), last, "prefix cache, diverged at 170")

	// Truncate goes back to a checkpoint; the state is the one there
	// (compared with a fresh session that evaluates the same pieces).
	require.ErrorContains(t, s.Truncate(64), "checkpoint (128, 172, 180)")
	require.NoError(t, s.Truncate(128))
	require.Equal(t, []int{128}, s.Checkpoints())
	got, err := s.Eval(b[128:160], false)
	require.NoError(t, err)
	ref = newSession(t, fresh, 512)
	promptOnly(ref, b[:128])
	want, err = ref.Eval(b[128:160], false)
	require.NoError(t, err)
	requireSameBits(t, want, got, "truncated to 128, then evaluated to 160")

	// A prompt diverging 3 tokens before the end of the previous one (a
	// generation prompt rendered otherwise in history) goes back to the
	// checkpoint 8 tokens before that end.
	e := ids(150, 6)
	s4 := newSession(t, m, 512)
	promptOnly(s4, e)
	require.Equal(t, []int{64, 128, 142, 150}, s4.Checkpoints())
	r, _ = promptOnly(s4, append(slices.Clone(e[:147]), ids(10, 7)...))
	require.Equal(t, 142, r.CachedTokens)
}

// TestQwen35AcquireByCheckpoint: Acquire picks the idle session that can
// keep the most of a prompt, counting a hybrid model's checkpoints: not the
// one sharing the longest raw prefix, whose last checkpoint before the
// divergence comes earlier.
func TestQwen35AcquireByCheckpoint(t *testing.T) {
	m := loadPath(t, qwen35Mini(t), LoadOptions{Threads: 2, ContextLength: 512, PrefixCache: Ptr(int64(0))})
	b, err := m.NewBatch(BatchOptions{})
	require.NoError(t, err)
	a := make([]int32, 200)
	for i := range a {
		a[i] = 300 + int32(i*104729)%20000
	}
	gen := func(ids []int32) *Session {
		s, err := b.Acquire(ids, 512)
		require.NoError(t, err)
		_, err = s.Generate(context.Background(), GenerateOptions{Tokens: ids, MaxTokens: 3, Sampler: SamplerOptions{Temperature: 0}}, nil)
		require.NoError(t, err)
		return s
	}
	sa := gen(a)       // checkpoints 128, 192, 200
	sb := gen(a[:196]) // 128, 188, 192, 196
	require.True(t, sa != sb)
	b.Release(sa)
	b.Release(sb)
	require.Equal(t, []int{128, 188, 192, 196}, sb.Checkpoints())
	// Shares 197 tokens with a (its session keeps 192), 196 with a[:196]
	// and its reply (kept: its end-of-prompt checkpoint).
	p := append(slices.Clone(a[:197]), 7, 8, 9)
	require.NotEqual(t, p[196], sb.Tokens()[196], "the reply must differ from a[196]")
	s, err := b.Acquire(p, 512)
	require.NoError(t, err)
	require.True(t, s == sb, "Acquire took the session that keeps %d positions, not the one that keeps 196", s.reusable(p))
	r, err := s.Generate(context.Background(), GenerateOptions{Tokens: p, PromptOnly: true}, nil)
	require.NoError(t, err)
	require.Equal(t, 196, r.CachedTokens)
}

// TestQwen35RealShapes: the Gated DeltaNet at Qwen3.5-0.8B's real head and
// state sizes (16 heads, state 128 x 128, 2048-wide convolution; head_dim
// 256 attention) gives llama.cpp's logits: 3 DeltaNet layers and 1
// attention layer (synth preset qwen35-0.8b-4l), the same procedures and
// checks as the minis. Skipped with -short (it writes a 90 MiB file).
func TestQwen35RealShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 90 MiB model; run without -short")
	}
	deltaNetParity(t, "qwen35-0.8b-4l")
}

// TestQwen35Trace is a diagnostic, not a check: with WOOLLY_TRACE_MODEL (a
// GGUF) and WOOLLY_TRACE_DIR set it evaluates WOOLLY_TRACE_TOKENS (comma-
// separated ids, default 1,500,1000,2000,3000,4000,5000,6000) in one batch
// and writes the tensors traceHook sees as DIR/NAME-LAYER.f32 (float32 LE),
// the names llama.cpp's graph uses, for tools/tensordump/compare.py.
func TestQwen35Trace(t *testing.T) {
	model, dir := os.Getenv("WOOLLY_TRACE_MODEL"), os.Getenv("WOOLLY_TRACE_DIR")
	if model == "" || dir == "" {
		t.Skip("diagnostic: set WOOLLY_TRACE_MODEL and WOOLLY_TRACE_DIR")
	}
	toks := os.Getenv("WOOLLY_TRACE_TOKENS")
	if toks == "" {
		toks = "1,500,1000,2000,3000,4000,5000,6000"
	}
	var ids []int32
	for _, f := range strings.Split(toks, ",") {
		v, err := strconv.Atoi(f)
		require.NoError(t, err)
		ids = append(ids, int32(v))
	}
	m := loadPath(t, model, LoadOptions{Threads: 2, PrefixCache: Ptr(int64(0))})
	last, suffix := 0, ""
	traceHook = func(name string, layer int, data []float32) {
		if layer < 0 { // the FFN's tensors: the layer last traced
			layer = last
		}
		last = layer
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d%s.f32", name, layer, suffix)), f32Bytes(data), 0o644))
	}
	defer func() { traceHook = nil }()
	s := newSession(t, m, 0)
	evalAll(t, s, ids)
	// WOOLLY_TRACE_THEN: ids decoded one at a time after the batch, their
	// tensors named NAME-LAYER#2.f32, #3, ... (tensordump's --then).
	if then := os.Getenv("WOOLLY_TRACE_THEN"); then != "" {
		for k, f := range strings.Split(then, ",") {
			v, err := strconv.Atoi(f)
			require.NoError(t, err)
			suffix = fmt.Sprintf("#%d", k+2)
			_, err = s.Eval([]int32{int32(v)}, false)
			require.NoError(t, err)
		}
	}
}

package runtime

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// randomTokens returns n valid ids (BOS first when the vocabulary adds it).
func randomTokens(m *Model, n int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(3 + r.IntN(m.cfg.NVocab-3))
	}
	if tok := m.Tokenizer(); tok.AddBOS() && tok.BOS() >= 0 {
		ids[0] = tok.BOS()
	}
	return ids
}

func sameBits(a, b []float32) (int, float64) {
	diff, maxd := 0, 0.0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			diff++
			maxd = max(maxd, math.Abs(float64(a[i]-b[i])))
		}
	}
	return diff, maxd
}

// TestSnapshotRestoreBitIdentical: logits after Restore + Eval of the suffix
// are bit-identical to evaluating the same batches from scratch, and to one
// batch from scratch where the attention path is the same (< 64 rows). The
// gemma minis' sliding window is 16 positions, far shorter than the
// restored prefixes; the MoE mini routes every token afresh.
func TestSnapshotRestoreBitIdentical(t *testing.T) {
	for _, name := range []string{"synth-llama-mini-Q4_K_M", "stories260K-Q8_0", "synth-gemma2-mini-Q4_K_M",
		"synth-gemma3-mini-Q4_K_M", "synth-qwen3moe-mini-Q4_K_M"} {
		t.Run(name, func(t *testing.T) {
			m := loadShared(t, name, LoadOptions{PrefixCache: Ptr(int64(0))})
			for _, tc := range []struct{ prefix, suffix int }{{40, 20}, {150, 90}, {300, 7}} {
				toks := randomTokens(m, tc.prefix+tc.suffix, uint64(tc.prefix))
				pre, suf := toks[:tc.prefix], toks[tc.prefix:]

				// From scratch, the same split.
				a, _ := m.NewSession(512)
				evalAll(t, a, pre)
				want := evalAll(t, a, suf)

				// Snapshot, then change the source session: the snapshot must
				// not alias it.
				b, _ := m.NewSession(512)
				evalAll(t, b, pre)
				snap := b.Snapshot()
				if snap.Len() != tc.prefix || snap.Bytes() <= 0 {
					t.Fatalf("snapshot len %d bytes %d", snap.Len(), snap.Bytes())
				}
				if err := b.Truncate(tc.prefix / 2); err != nil {
					t.Fatal(err)
				}
				evalAll(t, b, randomTokens(m, tc.prefix/2+10, 99))

				c, _ := m.NewSession(512)
				evalAll(t, c, randomTokens(m, 30, 5)) // stale state to overwrite
				if err := c.Restore(snap); err != nil {
					t.Fatal(err)
				}
				if c.Pos() != tc.prefix || !slices.Equal(c.Tokens(), pre) {
					t.Fatalf("restored pos %d tokens differ", c.Pos())
				}
				got := evalAll(t, c, suf)
				if n, d := sameBits(want, got); n != 0 {
					t.Fatalf("prefix %d + %d: %d logits differ after restore (max %g)", tc.prefix, tc.suffix, n, d)
				}

				// One batch from scratch: identical when both use the f16
				// attention path (< 64 rows per batch).
				if tc.prefix+tc.suffix < 64 {
					one, _ := m.NewSession(512)
					all := evalAll(t, one, toks)
					if n, d := sameBits(all[tc.prefix*m.cfg.NVocab:], got); n != 0 {
						t.Fatalf("prefix %d + %d: %d logits differ from one batch (max %g)", tc.prefix, tc.suffix, n, d)
					}
				}
			}
		})
	}
}

func TestRestoreErrors(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{})
	other := loadShared(t, "stories260K-Q8_0", LoadOptions{})
	s, _ := m.NewSession(64)
	evalAll(t, s, randomTokens(m, 40, 1))
	snap := s.Snapshot()
	small, _ := m.NewSession(16)
	if err := small.Restore(snap); err == nil {
		t.Error("restoring 40 positions into a 16-position context: no error")
	}
	o, _ := other.NewSession(64)
	if err := o.Restore(snap); err == nil {
		t.Error("restoring another model's snapshot: no error")
	}
	if err := o.Restore(nil); err == nil {
		t.Error("nil snapshot: no error")
	}
}

// TestGeneratePrefixReuse: fresh Generate calls reuse the model's prefix
// cache (also when the cached sequence diverges from the new prompt) and
// give the tokens a model without the cache gives.
func TestGeneratePrefixReuse(t *testing.T) {
	name := "synth-llama-mini-Q4_K_M"
	with := loadShared(t, name, LoadOptions{})
	without := loadShared(t, name, LoadOptions{PrefixCache: Ptr(int64(0))})
	ctx := context.Background()
	hist := randomTokens(with, 30, 3)
	greedy := GenerateOptions{MaxTokens: 8, Sampler: SamplerOptions{Temperature: 0}}

	run := func(m *Model, toks []int32) *GenerateResult {
		o := greedy
		o.Tokens = toks
		res, err := m.Generate(ctx, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := run(with, hist)
	if first.CachedTokens != 0 {
		t.Fatalf("first request reused %d tokens", first.CachedTokens)
	}
	// A follow-up: history + reply + new tokens (total < 64: same attention
	// path with and without reuse, so the same tokens are expected).
	follow := append(append(slices.Clone(hist), first.Tokens...), randomTokens(with, 10, 4)[1:]...)
	// And a prompt that diverges inside the stored sequence.
	diverge := append(slices.Clone(hist[:20]), randomTokens(with, 12, 8)[1:]...)
	for _, p := range [][]int32{follow, diverge} {
		got, want := run(with, p), run(without, p)
		if got.CachedTokens == 0 {
			t.Fatalf("no prefix reuse for a prompt sharing a prefix")
		}
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("reuse of %d tokens: %v, without reuse %v", got.CachedTokens, got.Tokens, want.Tokens)
		}
	}
	st := with.CacheStats()
	if !st.PrefixEnabled || st.Prefix.Hits < 2 || st.Prefix.Entries == 0 || st.Prefix.Bytes <= 0 || st.Prefix.TokensReused < 40 {
		t.Fatalf("prefix stats %+v", st.Prefix)
	}
	if without.CacheStats().PrefixEnabled {
		t.Fatal("PrefixCache -1 should turn reuse off")
	}
}

// TestPrefixReuseTTFT logs the time to first token of a follow-up turn
// after a long history, with and without the prefix cache.
func TestPrefixReuseTTFT(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	name := "synth-llama-mini-Q4_K_M"
	if v := os.Getenv("WOOLLY_TTFT_MODEL"); v != "" {
		name = v // an absolute path, e.g. /work/main/models/tinyllama-1.1b-q4_k_m.gguf
	}
	for _, pc := range []*int64{Ptr(int64(0)), nil} {
		m := loadShared(t, name, LoadOptions{PrefixCache: pc})
		hist := randomTokens(m, 400, 11)
		o := GenerateOptions{Tokens: hist, MaxTokens: 1, Sampler: SamplerOptions{Temperature: 0}}
		if _, err := m.Generate(context.Background(), o, nil); err != nil {
			t.Fatal(err)
		}
		var best time.Duration
		for i := 0; i < 3; i++ {
			o.Tokens = append(slices.Clone(hist), randomTokens(m, 21, uint64(12+i))[1:]...)
			res, err := m.Generate(context.Background(), o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 || res.PromptDuration < best {
				best = res.PromptDuration
			}
		}
		t.Logf("prefix cache %v: follow-up of 20 tokens after 400: TTFT %v (best of 3; prefix cache: %v)", pc, best, m.CacheStats().Prefix)
	}
}

// TestCachesConcurrent: sessions sharing a prefix cache (restoring the same
// snapshots) give the results of a lone run. Run with -race.
func TestCachesConcurrent(t *testing.T) {
	plain := loadShared(t, "stories260K-Q8_0", LoadOptions{PrefixCache: Ptr(int64(0))})
	pm := loadShared(t, "stories260K-Q8_0", LoadOptions{})
	o := GenerateOptions{Tokens: randomTokens(plain, 40, 21), MaxTokens: 6, Sampler: SamplerOptions{Temperature: 0}}
	ctx := context.Background()
	wantP, err := plain.Generate(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pm.Generate(ctx, o, nil); err != nil { // stores the snapshot the others restore
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			res, err := pm.Generate(ctx, o, nil)
			if err == nil && !slices.Equal(res.Tokens, wantP.Tokens) {
				err = fmt.Errorf("concurrent run gave %v, want %v (reused %d)", res.Tokens, wantP.Tokens, res.CachedTokens)
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := pm.CacheStats(); st.Prefix.Hits == 0 {
		t.Fatalf("prefix cache unused: %+v", st.Prefix)
	}
}

// LoadOptions.PrefixCache: nil is the default budget, 0 is off, a value is
// that budget, a negative one an error.
func TestPrefixCacheOptionUnsetZeroValue(t *testing.T) {
	const name = "stories260K-Q8_0"
	for _, c := range []struct {
		opt    *int64
		on     bool
		budget int64
	}{{nil, true, DefaultPrefixCache}, {Ptr(int64(0)), false, 0}, {Ptr(int64(1 << 20)), true, 1 << 20}} {
		m := loadShared(t, name, LoadOptions{PrefixCache: c.opt})
		st := m.CacheStats()
		if st.PrefixEnabled != c.on || (c.on && st.Prefix.Budget != c.budget) {
			t.Errorf("PrefixCache %v: enabled %v budget %d, want %v %d", c.opt, st.PrefixEnabled, st.Prefix.Budget, c.on, c.budget)
		}
	}
	if _, err := Load(filepath.Join(sharedDir(t), "models", name+".gguf"), LoadOptions{PrefixCache: Ptr(int64(-1))}); err == nil {
		t.Error("a negative prefix cache budget was accepted")
	}
}

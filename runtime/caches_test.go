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

// TestDequantCache: with a budget that holds the working set, a second
// generation finds every tensor cached (no dequantization); results stay
// close to the quantized kernels'.
func TestDequantCache(t *testing.T) {
	name := "synth-llama-mini-Q4_K_M"
	m := loadShared(t, name, LoadOptions{PrefixCache: Ptr(int64(0)), DequantCache: 1 << 30})
	ctx := context.Background()
	dc := m.caches.dequant.Load()
	if dc == nil {
		t.Fatal("dequant cache off")
	}
	gen := func(seed uint64) *GenerateResult {
		res, err := m.Generate(ctx, GenerateOptions{Tokens: randomTokens(m, 48, seed), MaxTokens: 2,
			Sampler: SamplerOptions{Temperature: 0}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		dc.Wait()
		return res
	}
	gen(1)
	s1 := m.CacheStats().Dequant
	if s1.Loads+s1.Prefetched == 0 || s1.Entries != 7*m.cfg.NLayer || s1.Bytes != m.DequantWorkingSet() {
		t.Fatalf("after the first request: %+v (working set %d)", s1, m.DequantWorkingSet())
	}
	gen(2)
	s2 := m.CacheStats().Dequant
	lookups := (s2.Hits + s2.Misses) - (s1.Hits + s1.Misses)
	if lookups != int64(7*m.cfg.NLayer) || s2.Hits-s1.Hits != lookups || s2.Loads != s1.Loads || s2.Prefetched != s1.Prefetched {
		t.Fatalf("second request: lookups %d, stats before %+v after %+v", lookups, s1.Stats, s2.Stats)
	}

	// The f32 path skips the activations' quantization, so it is not
	// bit-identical: on an F16 model (activations rounded to f16 otherwise)
	// the logits stay within the F16 parity tolerance; on Q4_K_M the
	// difference (Q8_K activations) is logged.
	for _, tc := range []struct {
		name string
		tol  float64
	}{{"synth-llama-mini-F16", 1e-2}, {name, math.Inf(1)}} {
		on := loadShared(t, tc.name, LoadOptions{PrefixCache: Ptr(int64(0)), DequantCache: 1 << 30})
		off := loadShared(t, tc.name, LoadOptions{PrefixCache: Ptr(int64(0))})
		toks := randomTokens(on, 48, 3)
		a, _ := on.NewSession(64)
		b, _ := off.NewSession(64)
		la, lb := evalAll(t, a, toks), evalAll(t, b, toks)
		n, d := sameBits(la, lb)
		nv, agree := on.cfg.NVocab, 0
		for r := range len(toks) {
			if argmax(la[r*nv:(r+1)*nv]) == argmax(lb[r*nv:(r+1)*nv]) {
				agree++
			}
		}
		t.Logf("%s: f32 cached weights vs quantized kernels: %d of %d logits differ, max |Δ| %g, top-1 agrees on %d/%d rows",
			tc.name, n, len(la), d, agree, len(toks))
		if d > tc.tol || on.CacheStats().Dequant.Hits+on.CacheStats().Dequant.Loads == 0 {
			t.Fatalf("%s: max |Δlogit| %g > %g, or the cache was not used (%+v)", tc.name, d, tc.tol, on.CacheStats().Dequant)
		}
	}

	// Turning it off keeps the statistics out of the way and the model usable.
	if err := m.SetDequantCache(0); err != nil {
		t.Fatal(err)
	}
	if m.CacheStats().DequantEnabled {
		t.Fatal("SetDequantCache(0) left the cache on")
	}
	gen(4)
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

// TestCachesConcurrent: sessions sharing a cache (restoring the same
// snapshots; filling and reading the dequant cache) give the results of a
// lone run. Run with -race. (The two caches are on different models: with
// the dequant cache on, reuse changes which batches take the f32 path.)
func TestCachesConcurrent(t *testing.T) {
	plain := loadShared(t, "stories260K-Q8_0", LoadOptions{PrefixCache: Ptr(int64(0))})
	pm := loadShared(t, "stories260K-Q8_0", LoadOptions{})
	dm := loadShared(t, "stories260K-Q8_0", LoadOptions{PrefixCache: Ptr(int64(0)), DequantCache: 1 << 30})
	o := GenerateOptions{Tokens: randomTokens(plain, 40, 21), MaxTokens: 6, Sampler: SamplerOptions{Temperature: 0}}
	ctx := context.Background()
	wantP, err := plain.Generate(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantD, err := dm.Generate(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pm.Generate(ctx, o, nil); err != nil { // stores the snapshot the others restore
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		m, want := pm, wantP
		if i%2 == 1 {
			m, want = dm, wantD
		}
		go func() {
			res, err := m.Generate(ctx, o, nil)
			if err == nil && !slices.Equal(res.Tokens, want.Tokens) {
				err = fmt.Errorf("concurrent run gave %v, want %v (reused %d)", res.Tokens, want.Tokens, res.CachedTokens)
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
	if st := dm.CacheStats(); st.Dequant.Hits == 0 {
		t.Fatalf("dequant cache unused: %+v", st.Dequant)
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

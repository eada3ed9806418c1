package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

// testTensor is a quantized tensor with its f32 values computed in the test
// from the block format (Q8_0: f16 scale d, 32 int8 q; value = d*q).
type testTensor struct {
	name string
	typ  kernels.Type
	data []byte
	want []float32
}

func makeQ8_0(r *rand.Rand, name string, n int) testTensor {
	tt := testTensor{name: name, typ: kernels.Q8_0, want: make([]float32, n)}
	for b := 0; b < n/32; b++ {
		h := kernels.F32ToF16(r.Float32()*0.1 + 0.001)
		d := kernels.F16ToF32(h)
		tt.data = binary.LittleEndian.AppendUint16(tt.data, h)
		for i := 0; i < 32; i++ {
			q := int8(r.Intn(255) - 127)
			tt.data = append(tt.data, byte(q))
			tt.want[b*32+i] = d * float32(q)
		}
	}
	return tt
}

func makeF16(r *rand.Rand, name string, n int) testTensor {
	tt := testTensor{name: name, typ: kernels.F16, want: make([]float32, n)}
	for i := range tt.want {
		h := kernels.F32ToF16(r.Float32()*2 - 1)
		tt.data = binary.LittleEndian.AppendUint16(tt.data, h)
		tt.want[i] = kernels.F16ToF32(h)
	}
	return tt
}

// fakeModel is L layers of 4 Q8_0 tensors of n elements each.
func fakeModel(layers, n int) [][]testTensor {
	r := rand.New(rand.NewSource(1))
	m := make([][]testTensor, layers)
	for l := range m {
		for _, s := range []string{"attn_q", "attn_k", "ffn_up", "ffn_down"} {
			m[l] = append(m[l], makeQ8_0(r, fmt.Sprintf("blk.%d.%s.weight", l, s), n))
		}
	}
	return m
}

// dequantFixture is fakeModel(layers, n), a cache whose budget holds 1/div
// of the model's f32 weights, and a counter for generate's dequantizations.
func dequantFixture(t *testing.T, layers, n, div int) ([][]testTensor, *DequantCache, *atomic.Int64) {
	return fakeModel(layers, n), newDC(t, int64(layers*4*n*4/div)), new(atomic.Int64)
}

func newDC(t *testing.T, budget int64) *DequantCache { return mustNew(t, NewDequantCache, budget) }

// mustNew is newCache(budget); an error fails the test.
func mustNew[C any](t *testing.T, newCache func(int64) (C, error), budget int64) C {
	t.Helper()
	c, err := newCache(budget)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// generate is one "request": the prompt path reads every tensor, layer by
// layer. loads counts loader calls.
func generate(d *DequantCache, model string, m [][]testTensor, loads *atomic.Int64) error {
	for _, layer := range m {
		for _, tt := range layer {
			w, err := d.Get(model, tt.name, len(tt.want), func(dst []float32) error {
				loads.Add(1)
				return kernels.Dequant(tt.typ, tt.data, dst)
			})
			if err != nil {
				return err
			}
			if !slices.Equal(w, tt.want) {
				return fmt.Errorf("%s: wrong values", tt.name)
			}
		}
	}
	return nil
}

func TestDequantSecondGenerationAllHits(t *testing.T) {
	const layers, n = 6, 1024
	m, d, loads := dequantFixture(t, layers, n, 1) // budget = working set
	// Two "requests" on different goroutines sharing the model's cache.
	for req := 0; req < 2; req++ {
		done := make(chan error)
		go func() { done <- generate(d, "m", m, loads) }()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s := d.Stats()
		if req == 0 && (loads.Load() != layers*4 || s.Misses != layers*4 || s.Hits != 0) {
			t.Fatalf("first request: %d loads, %v", loads.Load(), s.Stats)
		}
	}
	s := d.Stats()
	if loads.Load() != layers*4 {
		t.Fatalf("second request dequantized %d tensors, want 0", loads.Load()-layers*4)
	}
	// Statistics survive across requests: both are counted.
	if s.Hits != layers*4 || s.Misses != layers*4 || s.HitRate() != 0.5 || s.TimeSaved <= 0 {
		t.Fatalf("stats after two requests: %v", s.Stats)
	}
	if s.Bytes != s.Budget || s.Evictions != 0 {
		t.Fatalf("cache not full or evicting: %v", s.Stats)
	}
}

func TestDequantBudgetNeverExceededConcurrently(t *testing.T) {
	const layers, n = 8, 512
	m, d, loads := dequantFixture(t, layers, n, 3)
	budget := int64(layers * 4 * n * 4 / 3)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for rep := 0; rep < 3; rep++ {
				if err := generate(d, "m", m, loads); err != nil {
					errs <- err
					return
				}
				if s := d.Stats(); s.Bytes > budget {
					errs <- fmt.Errorf("bytes %d > budget %d", s.Bytes, budget)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := d.Stats()
	if s.PeakBytes > budget || s.Bytes > budget {
		t.Fatalf("budget %d exceeded: %v (peak %d)", budget, s.Stats, s.PeakBytes)
	}
	if s.Hits+s.Misses != 8*3*layers*4 {
		t.Fatalf("lookups %d, want %d", s.Hits+s.Misses, 8*3*layers*4)
	}
}

func TestDequantOversizeServedUncached(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	big := makeQ8_0(r, "token_embd.weight", 4096)
	small := makeQ8_0(r, "output_norm", 256)
	d := newDC(t, 4096*4-1) // one element short of the big tensor
	var loads atomic.Int64
	for i := 0; i < 2; i++ {
		for _, tt := range []testTensor{big, small} {
			w, err := d.Get("m", tt.name, len(tt.want), func(dst []float32) error {
				loads.Add(1)
				return kernels.Dequant(tt.typ, tt.data, dst)
			})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if !slices.Equal(w, tt.want) {
				t.Fatalf("%s: wrong values", tt.name)
			}
		}
	}
	s := d.Stats()
	if loads.Load() != 3 || s.Uncacheable != 2 || s.Entries != 1 || s.Bytes != 256*4 {
		t.Fatalf("loads %d, stats %v", loads.Load(), s.Stats)
	}
}

func TestDequantErrors(t *testing.T) {
	d := newDC(t, 1<<20)
	if _, err := d.Get("m", "t", 0, func([]float32) error { return nil }); err == nil {
		t.Error("n = 0 accepted")
	}
	if _, err := d.Get("m", "t", 4, nil); err == nil {
		t.Error("nil loader accepted")
	}
	if _, err := d.Get("m", "t", 4, func([]float32) error { return errors.New("disk on fire") }); err == nil {
		t.Error("loader error not returned")
	}
	if _, err := d.Get("m", "t", 4, func([]float32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get("m", "t", 8, func([]float32) error { return nil }); err == nil {
		t.Error("size mismatch with the cached tensor not reported")
	}
	if _, err := NewDequantCache(-5); err == nil {
		t.Error("negative budget accepted")
	}
	bad := []PrefetchItem{
		{Tensor: "", Type: kernels.F32, Data: make([]byte, 16), N: 4},
		{Tensor: "x", Type: kernels.Q8_K, Data: make([]byte, 292), N: 256},
		{Tensor: "x", Type: kernels.Type(99), Data: make([]byte, 16), N: 4},
		{Tensor: "x", Type: kernels.F32, Data: make([]byte, 15), N: 4},
		{Tensor: "x", Type: kernels.Q8_0, Data: make([]byte, 34), N: 31},
		{Tensor: "x", Type: kernels.F32, Data: make([]byte, 16), N: 0},
	}
	for i, it := range bad {
		if err := d.Prefetch("m", []PrefetchItem{it}); err == nil {
			t.Errorf("bad prefetch item %d accepted", i)
		}
	}
	d.Wait()
}

func TestDequantPrefetchThenHits(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	tts := []testTensor{makeQ8_0(r, "blk.1.attn_q.weight", 2048), makeF16(r, "blk.1.attn_k.weight", 1000), makeQ8_0(r, "blk.1.ffn_up.weight", 4096)}
	var items []PrefetchItem
	for _, tt := range tts {
		items = append(items, PrefetchItem{Tensor: tt.name, Type: tt.typ, Data: tt.data, N: len(tt.want)})
	}
	d := newDC(t, 1<<20)
	if err := d.Prefetch("m", items); err != nil {
		t.Fatal(err)
	}
	if err := d.Prefetch("m", items); err != nil { // duplicate: must not dequantize twice
		t.Fatal(err)
	}
	d.Wait()
	for _, tt := range tts {
		w, err := d.Get("m", tt.name, len(tt.want), func([]float32) error {
			return errors.New("prefetched tensor dequantized again")
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w, tt.want) {
			t.Fatalf("%s: prefetched values differ from the block format", tt.name)
		}
	}
	s := d.Stats()
	if s.Prefetched != 3 || s.Loads != 3 || s.Hits != 3 || s.Misses != 0 || s.PrefetchErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
	// Another model's tensors with the same names are separate entries.
	w, ok, err := d.TryGet("other", tts[0].name, len(tts[0].want), func(dst []float32) error { dst[0] = 1; return nil })
	if err != nil || !ok || w[0] != 1 {
		t.Fatalf("TryGet with free space: ok %v, err %v", ok, err)
	}
	if s := d.Stats(); s.Misses != 1 {
		t.Fatalf("other model's tensor hit the first model's entry: %v", s.Stats)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Hits != 3 {
		t.Fatalf("after Close: %v", s.Stats)
	}
}

// A layer-by-layer scan with a budget for a quarter of the model, with the
// next layer prefetched as the runtime would: ~25% hits, and the prefetches
// never evict the stable subset.
func TestDequantCyclicScanWithPrefetch(t *testing.T) {
	const layers, n = 16, 256
	m, d, loads := dequantFixture(t, layers, n, 4)
	var hits0, look0 int64
	for pass := 0; pass < 6; pass++ {
		if pass == 2 {
			s := d.Stats()
			hits0, look0 = s.Hits, s.Hits+s.Misses
		}
		for l, layer := range m {
			if l+1 < layers {
				var items []PrefetchItem
				for _, tt := range m[l+1] {
					items = append(items, PrefetchItem{Tensor: tt.name, Type: tt.typ, Data: tt.data, N: len(tt.want)})
				}
				if err := d.Prefetch("m", items); err != nil {
					t.Fatal(err)
				}
			}
			if err := generate(d, "m", [][]testTensor{layer}, loads); err != nil {
				t.Fatal(err)
			}
			d.Wait()
		}
	}
	s := d.Stats()
	rate := float64(s.Hits-hits0) / float64(s.Hits+s.Misses-look0)
	if rate < 0.24 || rate > 0.26 {
		t.Fatalf("steady-state hit rate %.3f, want ~0.25 (%v)", rate, s.Stats)
	}
	if s.PeakBytes > s.Budget {
		t.Fatalf("peak %d > budget %d", s.PeakBytes, s.Budget)
	}
	if s.PrefetchErrors != 0 {
		t.Fatal(s.LastPrefetchError)
	}
}

// TryGet: the runtime's path. Tensors the cache will not keep are not
// dequantized at all (ok = false), cached ones are served, and the lookups
// are counted.
func TestDequantTryGet(t *testing.T) {
	const layers, n = 8, 256
	m, d, loads := dequantFixture(t, layers, n, 4)
	var served, skipped int
	for pass := 0; pass < 4; pass++ {
		for _, layer := range m {
			for _, tt := range layer {
				w, ok, err := d.TryGet("m", tt.name, len(tt.want), func(dst []float32) error {
					loads.Add(1)
					return kernels.Dequant(tt.typ, tt.data, dst)
				})
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if w != nil {
						t.Fatal("TryGet returned values with ok = false")
					}
					if pass > 0 {
						skipped++
					}
					continue
				}
				if !slices.Equal(w, tt.want) {
					t.Fatalf("%s: wrong values", tt.name)
				}
				if pass > 0 {
					served++
				}
			}
		}
	}
	s := d.Stats()
	// First pass: everything loads (plain LRU fills and evicts); then the
	// stable quarter is served and the rest is skipped without loading.
	if loads.Load() != layers*4 || served != 3*layers || skipped != 3*3*layers {
		t.Fatalf("loads %d, served %d, skipped %d; %v", loads.Load(), served, skipped, s.Stats)
	}
	if s.Hits+s.Misses != 4*layers*4 || s.Rejected != int64(skipped) {
		t.Fatalf("lookups not counted: %v", s.Stats)
	}
	// Larger than the budget: skipped, never loaded.
	if _, ok, err := d.TryGet("m", "huge", 1<<20, func([]float32) error { return errors.New("loaded") }); ok || err != nil {
		t.Fatalf("oversize TryGet: ok %v, err %v", ok, err)
	}
	if s := d.Stats(); s.Uncacheable != 1 {
		t.Fatalf("oversize not counted: %v", s.Stats)
	}
	if _, _, err := d.TryGet("m", "x", 0, func([]float32) error { return nil }); err == nil {
		t.Fatal("n = 0 accepted")
	}
}

package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// modelLayers opens a shared model and returns its 2-D block tensors grouped
// by layer, in file order, as prefetch items.
func modelLayers(t *testing.T, name string) (*loader.File, [][]PrefetchItem) {
	t.Helper()
	path := filepath.Join("..", "..", "shared", "models", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared model %s not available (%v): skipping", path, err)
	}
	f, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var layers [][]PrefetchItem
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		var l int
		if len(ti.Shape) != 2 || !strings.HasPrefix(ti.Name, "blk.") {
			continue
		}
		if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &l); err != nil {
			t.Fatalf("tensor name %q: %v", ti.Name, err)
		}
		for len(layers) <= l {
			layers = append(layers, nil)
		}
		layers[l] = append(layers[l], PrefetchItem{Tensor: ti.Name, Type: ti.Type, Data: f.Data(ti), N: int(ti.Elements())})
	}
	if len(layers) == 0 {
		t.Fatalf("%s has no block tensors", name)
	}
	return f, layers
}

// promptPass reads every block tensor layer by layer, prefetching the next
// layer, and checks each against a direct kernels.Dequant.
func promptPass(t *testing.T, d *DequantCache, model string, layers [][]PrefetchItem, loads *atomic.Int64, check bool) {
	t.Helper()
	for l, layer := range layers {
		if l+1 < len(layers) {
			if err := d.Prefetch(model, layers[l+1]); err != nil {
				t.Fatal(err)
			}
		}
		for _, it := range layer {
			w, err := d.Get(model, it.Tensor, it.N, func(dst []float32) error {
				loads.Add(1)
				return kernels.Dequant(it.Type, it.Data, dst)
			})
			if err != nil {
				t.Fatal(err)
			}
			if check {
				want := make([]float32, it.N)
				if err := kernels.Dequant(it.Type, it.Data, want); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(w, want) {
					t.Fatalf("%s: cached values differ from kernels.Dequant", it.Tensor)
				}
			}
		}
	}
	d.Wait()
}

func TestDequantRealModelSecondPassNoDequant(t *testing.T) {
	for _, name := range []string{"stories260K-Q4_K_M.gguf", "synth-llama-mini-Q4_K_M.gguf"} {
		t.Run(name, func(t *testing.T) {
			_, layers := modelLayers(t, name)
			var ws int64
			n := 0
			for _, l := range layers {
				for _, it := range l {
					ws += 4 * int64(it.N)
					n++
				}
			}
			d := newDC(t, ws)
			var loads atomic.Int64
			promptPass(t, d, name, layers, &loads, true)
			first := d.Stats()
			if first.Bytes != ws || first.Entries != n {
				t.Fatalf("after the first pass: %v (working set %d bytes, %d tensors)", first.Stats, ws, n)
			}
			loads0 := loads.Load()
			promptPass(t, d, name, layers, &loads, false)
			s := d.Stats()
			if loads.Load() != loads0 || s.Loads != first.Loads {
				t.Fatalf("second pass dequantized %d tensors (loader) / %d (all loads), want 0", loads.Load()-loads0, s.Loads-first.Loads)
			}
			if s.Hits-first.Hits != int64(n) || s.Misses != first.Misses {
				t.Fatalf("second pass: %d hits of %d", s.Hits-first.Hits, n)
			}
			if s.PrefetchErrors != 0 {
				t.Fatal(s.LastPrefetchError)
			}
			t.Logf("%d tensors, %.1f MB f32; first pass: %d prefetched, %d by Get; time saved on the second pass %v",
				n, float64(ws)/1e6, first.Prefetched, loads0, s.TimeSaved-first.TimeSaved)
		})
	}
}

func TestDequantRealModelQuarterBudget(t *testing.T) {
	_, layers := modelLayers(t, "synth-llama-mini-Q4_K_M.gguf")
	var ws int64
	for _, l := range layers {
		for _, it := range l {
			ws += 4 * int64(it.N)
		}
	}
	d := newDC(t, ws/4)
	var loads atomic.Int64
	promptPass(t, d, "m", layers, &loads, false)
	s0 := d.Stats()
	for i := 0; i < 3; i++ {
		promptPass(t, d, "m", layers, &loads, false)
	}
	s := d.Stats()
	rate := float64(s.Hits-s0.Hits) / float64(s.Hits+s.Misses-s0.Hits-s0.Misses)
	if s.PeakBytes > s.Budget || s.Bytes < s.Budget/2 {
		t.Fatalf("budget %d: peak %d, held %d", s.Budget, s.PeakBytes, s.Bytes)
	}
	if rate < 0.15 {
		t.Fatalf("quarter budget: steady-state hit rate %.3f, want about 0.25 (plain LRU: 0)", rate)
	}
	t.Logf("quarter budget: steady-state hit rate %.3f, %v", rate, s.Stats)
}

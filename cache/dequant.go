package cache

import (
	"fmt"
	"sync"

	"github.com/woolly-llm/woolly/kernels"
)

// DefaultPrefetchBytes is the software-prefetch distance handed to
// kernels.DequantBulk by Prefetch.
const DefaultPrefetchBytes = 1024

// tensorKey identifies one weight tensor of one loaded model.
type tensorKey struct {
	model, tensor string
}

// PrefetchItem is one tensor for DequantCache.Prefetch: N elements of Type
// stored in Data (the file mapping; not modified, not retained after the
// prefetch).
type PrefetchItem struct {
	Tensor string
	Type   kernels.Type
	Data   []byte
	N      int
}

// DequantStats are a DequantCache's counters: the cache's, plus the
// background prefetches.
type DequantStats struct {
	Stats
	Prefetches        int64  // Prefetch calls that ran
	Prefetched        int64  // tensors stored by Prefetch
	PrefetchErrors    int64  // Prefetch runs that failed
	LastPrefetchError string // the latest failure, "" if none
}

// DequantCache keeps dequantized (f32) weight tensors, keyed by (model id,
// tensor name), under a byte budget, with the scan-resistant admission
// policy (see the package documentation). Make one per loaded model and keep
// it for the model's lifetime so that every request shares it and its
// statistics accumulate. All methods are safe for concurrent use. Returned
// slices are shared: read-only.
type DequantCache struct {
	c             *Cache[tensorKey, []float32]
	prefetchBytes int
	wg            sync.WaitGroup
	sem           chan struct{} // one bulk dequantization at a time

	mu      sync.Mutex // guards the prefetch counters
	pst     DequantStats
	lastErr error
}

// NewDequantCache returns a dequantized-weight cache of budgetBytes bytes
// (4 bytes per cached element).
func NewDequantCache(budgetBytes int64) (*DequantCache, error) {
	c, err := New[tensorKey, []float32](budgetBytes, Options[tensorKey, []float32]{ScanResistant: true})
	if err != nil {
		return nil, fmt.Errorf("dequant cache: %w", err)
	}
	return &DequantCache{c: c, prefetchBytes: DefaultPrefetchBytes, sem: make(chan struct{}, 1)}, nil
}

// Get returns the n f32 values of tensor in model: from the cache, or by
// calling load with a new n-element slice to fill, then caching the result
// when the budget and admission policy allow. A tensor larger than the whole
// budget is loaded and returned but not stored (counted as uncacheable).
// Concurrent Gets of the same tensor load it once; a Get of a tensor that a
// Prefetch is dequantizing waits for it.
func (d *DequantCache) Get(model, tensor string, n int, load func(dst []float32) error) ([]float32, error) {
	if n <= 0 {
		return nil, fmt.Errorf("dequant cache: %s/%s: element count %d must be positive", model, tensor, n)
	}
	if load == nil {
		return nil, fmt.Errorf("dequant cache: %s/%s: nil load function", model, tensor)
	}
	v, err := d.c.GetOrLoad(tensorKey{model, tensor}, func() ([]float32, int64, error) {
		dst := make([]float32, n)
		if err := load(dst); err != nil {
			return nil, 0, err
		}
		return dst, 4 * int64(n), nil
	})
	if err != nil {
		return nil, fmt.Errorf("dequant cache: %s/%s: %w", model, tensor, err)
	}
	if len(v) != n {
		return nil, fmt.Errorf("dequant cache: %s/%s holds %d elements, asked for %d", model, tensor, len(v), n)
	}
	return v, nil
}

// TryGet is Get for the runtime's prompt path: when the tensor is neither
// cached nor being loaded and the cache would not keep it (too large, or
// refused by the scan-resistant policy), it dequantizes nothing and returns
// ok = false, so the caller can use the quantized kernels instead of paying
// a dequantization per batch. The lookup is counted either way.
func (d *DequantCache) TryGet(model, tensor string, n int, load func(dst []float32) error) (w []float32, ok bool, err error) {
	if n <= 0 {
		return nil, false, fmt.Errorf("dequant cache: %s/%s: element count %d must be positive", model, tensor, n)
	}
	if load == nil {
		return nil, false, fmt.Errorf("dequant cache: %s/%s: nil load function", model, tensor)
	}
	v, ok, err := d.c.TryGetOrLoad(tensorKey{model, tensor}, 4*int64(n), func() ([]float32, int64, error) {
		dst := make([]float32, n)
		if err := load(dst); err != nil {
			return nil, 0, err
		}
		return dst, 4 * int64(n), nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("dequant cache: %s/%s: %w", model, tensor, err)
	}
	if !ok {
		return nil, false, nil
	}
	if len(v) != n {
		return nil, false, fmt.Errorf("dequant cache: %s/%s holds %d elements, asked for %d", model, tensor, len(v), n)
	}
	return v, true, nil
}

// Prefetch dequantizes items in the background with kernels.DequantBulk
// (one bulk call, prefetch hints on) and caches them. It skips tensors that
// are cached, being loaded, or that the cache would not keep, so it never
// evicts the stable subset kept against a cyclic scan. Items are checked
// now; a failure of the background work is counted in the statistics (Gets
// of those tensors then load them themselves).
func (d *DequantCache) Prefetch(model string, items []PrefetchItem) error {
	for i, it := range items {
		if it.Tensor == "" {
			return fmt.Errorf("dequant cache: prefetch item %d has no tensor name", i)
		}
		if !it.Type.Known() || it.Type == kernels.Q8_K {
			return fmt.Errorf("dequant cache: prefetch %s/%s: cannot dequantize type %v", model, it.Tensor, it.Type)
		}
		if it.N <= 0 {
			return fmt.Errorf("dequant cache: prefetch %s/%s: element count %d must be positive", model, it.Tensor, it.N)
		}
		need, err := it.Type.RowBytes(int64(it.N))
		if err != nil {
			return fmt.Errorf("dequant cache: prefetch %s/%s: %w", model, it.Tensor, err)
		}
		if int64(len(it.Data)) < need {
			return fmt.Errorf("dequant cache: prefetch %s/%s: %d bytes of %v data, %d elements need %d",
				model, it.Tensor, len(it.Data), it.Type, it.N, need)
		}
	}
	if len(items) == 0 {
		return nil
	}
	items = append([]PrefetchItem(nil), items...)
	d.wg.Go(func() {
		// One at a time: prefetches that fall behind then find their
		// tensors already loaded and skip them, instead of allocating
		// buffers for several layers at once.
		d.sem <- struct{}{}
		defer func() { <-d.sem }()
		d.prefetch(model, items)
	})
	return nil
}

func (d *DequantCache) prefetch(model string, items []PrefetchItem) {
	keys := make([]tensorKey, len(items))
	sizes := make([]int64, len(items))
	for i, it := range items {
		keys[i] = tensorKey{model, it.Tensor}
		sizes[i] = 4 * int64(it.N)
	}
	stored, err := d.c.LoadMany(keys, sizes, func(idx []int) ([][]float32, error) {
		tasks := make([]kernels.DequantTask, len(idx))
		vals := make([][]float32, len(idx))
		for j, i := range idx {
			vals[j] = make([]float32, items[i].N)
			tasks[j] = kernels.DequantTask{Type: items[i].Type, Src: items[i].Data, Dst: vals[j]}
		}
		if err := kernels.DequantBulk(tasks, d.prefetchBytes); err != nil {
			return nil, err
		}
		return vals, nil
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pst.Prefetches++
	d.pst.Prefetched += int64(stored)
	if err != nil {
		d.pst.PrefetchErrors++
		d.lastErr = fmt.Errorf("dequant cache: prefetch for %s: %w", model, err)
	}
}

// Wait blocks until every background prefetch has finished.
func (d *DequantCache) Wait() { d.wg.Wait() }

// Close waits for the background prefetches and drops every entry (call it
// when the model is unloaded). Statistics are kept.
func (d *DequantCache) Close() error {
	d.wg.Wait()
	d.c.Purge()
	return nil
}

// LastPrefetchError returns the latest background prefetch failure, or nil.
func (d *DequantCache) LastPrefetchError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// Stats returns a snapshot of the counters.
func (d *DequantCache) Stats() DequantStats {
	s := d.c.Stats()
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.pst
	out.Stats = s
	if d.lastErr != nil {
		out.LastPrefetchError = d.lastErr.Error()
	}
	return out
}

// SetBudget changes the byte budget, evicting as needed.
func (d *DequantCache) SetBudget(budgetBytes int64) error {
	if err := d.c.SetBudget(budgetBytes); err != nil {
		return fmt.Errorf("dequant cache: %w", err)
	}
	return nil
}

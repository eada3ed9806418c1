package cache

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newT[K comparable, V any](t *testing.T, budget int64, o Options[K, V]) *Cache[K, V] {
	t.Helper()
	c, err := New[K, V](budget, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRejectsNegativeBudget(t *testing.T) {
	if _, err := New[string, int](-1, Options[string, int]{}); err == nil {
		t.Fatal("New(-1) succeeded")
	}
}

func TestBudgetLRUOrderAndEvictedCallback(t *testing.T) {
	var evicted []string
	c := newT(t, 100, Options[string, int]{OnEvicted: func(k string, v int) { evicted = append(evicted, fmt.Sprintf("%s=%d", k, v)) }})
	for i, k := range []string{"a", "b", "c"} {
		if !c.Add(k, i, 30) {
			t.Fatalf("Add(%s) not stored", k)
		}
	}
	if _, ok := c.Get("a"); !ok { // a becomes most recent; b is now oldest
		t.Fatal("a missing")
	}
	c.Add("d", 3, 30) // 120 > 100: evict b
	if got := fmt.Sprint(evicted); got != "[b=1]" {
		t.Fatalf("evicted %s, want [b=1]", got)
	}
	s := c.Stats()
	if s.Bytes != 90 || s.Entries != 3 || s.Evictions != 1 || s.Hits != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Replacement frees the old size first.
	c.Add("a", 10, 50) // 30(c)+30(d)+50 = 110 > 100: evicts c (oldest)
	s = c.Stats()
	if s.Bytes != 80 || s.Entries != 2 {
		t.Fatalf("after replace: %+v", s)
	}
	if v, _ := c.Get("a"); v != 10 {
		t.Fatalf("a = %d, want 10", v)
	}
	if !c.Remove("d") || c.Remove("d") {
		t.Fatal("Remove result wrong")
	}
	if err := c.SetBudget(10); err != nil {
		t.Fatal(err)
	}
	if s = c.Stats(); s.Bytes != 0 || s.Entries != 0 {
		t.Fatalf("after SetBudget(10): %+v", s)
	}
	// Uncacheable: larger than the budget, or negative.
	if c.Add("big", 1, 11) || c.Add("neg", 1, -1) {
		t.Fatal("oversize/negative entry stored")
	}
	if s = c.Stats(); s.Uncacheable != 2 || s.Bytes != 0 {
		t.Fatalf("uncacheable: %+v", s)
	}
	c.Add("x", 1, 5)
	c.Purge()
	if s = c.Stats(); s.Bytes != 0 || s.Entries != 0 {
		t.Fatalf("after Purge: %+v", s)
	}
	if s.PeakBytes > 100 {
		t.Fatalf("peak %d above budget 100", s.PeakBytes)
	}
}

// The engine this replaces deadlocked on its first hit. A hit through
// GetOrLoad must return, and must not load again.
func TestFirstHitDoesNotDeadlockOrReload(t *testing.T) {
	c := newT(t, 1<<20, Options[string, []byte]{})
	loads := 0
	load := func() ([]byte, int64, error) { loads++; return make([]byte, 100), 100, nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			if _, err := c.GetOrLoad("k", load); err != nil {
				t.Error(err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("GetOrLoad did not return: deadlock on hit")
	}
	if loads != 1 {
		t.Fatalf("%d loads, want 1", loads)
	}
	if s := c.Stats(); s.Hits != 2 || s.Misses != 1 || s.Loads != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestTimeSaved(t *testing.T) {
	c := newT(t, 1<<20, Options[int, int]{})
	const d = 20 * time.Millisecond
	if _, err := c.GetOrLoad(1, func() (int, int64, error) { time.Sleep(d); return 7, 8, nil }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if v, err := c.GetOrLoad(1, func() (int, int64, error) { return 0, 0, errors.New("loaded twice") }); err != nil || v != 7 {
			t.Fatalf("hit: %v %v", v, err)
		}
	}
	s := c.Stats()
	if s.LoadTime < d || s.TimeSaved < 3*d || s.TimeSaved > 3*s.LoadTime {
		t.Fatalf("load time %v, time saved %v (want ≥ %v and = 3× load time)", s.LoadTime, s.TimeSaved, 3*d)
	}
}

func TestConcurrentMissesLoadOnce(t *testing.T) {
	c := newT(t, 1<<20, Options[string, int]{})
	const n = 16
	var loads atomic.Int32
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Go(func() {
			started.Done()
			v, err := c.GetOrLoad("k", func() (int, int64, error) {
				loads.Add(1)
				<-release
				return 42, 1, nil
			})
			if err != nil || v != 42 {
				errs <- fmt.Errorf("got %d, %v", v, err)
			}
		})
	}
	started.Wait()
	// Wait until every goroutine is either loading or waiting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := c.Stats()
		if s.Misses+s.Hits == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if loads.Load() != 1 {
		t.Fatalf("%d loads for one key, want 1", loads.Load())
	}
	s := c.Stats()
	if s.Loads != 1 || s.Hits+s.Misses != n || s.Shared != s.Misses-1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLoadErrorAndPanic(t *testing.T) {
	c := newT(t, 1<<20, Options[string, int]{})
	if _, err := c.GetOrLoad("e", func() (int, int64, error) { return 0, 0, errors.New("boom") }); err == nil {
		t.Fatal("load error not returned")
	}
	if _, err := c.GetOrLoad("p", func() (int, int64, error) { panic("kaboom") }); err == nil {
		t.Fatal("panicking load gave no error")
	}
	// Nothing stored, cache still usable, the key can load again.
	if v, err := c.GetOrLoad("p", func() (int, int64, error) { return 5, 1, nil }); err != nil || v != 5 {
		t.Fatalf("after panic: %d %v", v, err)
	}
	if s := c.Stats(); s.LoadErrors != 2 || s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOversizeServedUncached(t *testing.T) {
	c := newT(t, 100, Options[string, []byte]{})
	loads := 0
	for i := 0; i < 2; i++ {
		v, err := c.GetOrLoad("huge", func() ([]byte, int64, error) { loads++; return make([]byte, 500), 500, nil })
		if err != nil || len(v) != 500 {
			t.Fatalf("oversize load: %d bytes, %v", len(v), err)
		}
	}
	s := c.Stats()
	if loads != 2 || s.Uncacheable != 2 || s.Bytes != 0 || s.Entries != 0 {
		t.Fatalf("loads %d, stats %+v", loads, s)
	}
}

// cyclicHitRate runs passes over n keys of equal size through c and returns
// the hit rate of the passes after the first warm ones.
func cyclicHitRate(t *testing.T, c *Cache[int, int], keys []int, warm, passes int) float64 {
	t.Helper()
	var hits, total int
	for p := 0; p < warm+passes; p++ {
		for _, k := range keys {
			h0 := c.Stats().Hits
			if _, err := c.GetOrLoad(k, func() (int, int64, error) { return k, 10, nil }); err != nil {
				t.Fatal(err)
			}
			if p >= warm {
				total++
				if c.Stats().Hits > h0 {
					hits++
				}
			}
		}
	}
	return float64(hits) / float64(total)
}

func seq(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

func TestCyclicScanPlainLRUThrashes(t *testing.T) {
	const n = 64
	c := newT(t, 10*n/4, Options[int, int]{})
	if r := cyclicHitRate(t, c, seq(0, n), 1, 5); r != 0 {
		t.Fatalf("plain LRU hit rate %.3f on a cyclic scan 4× its budget, expected 0 (test premise)", r)
	}
}

func TestCyclicScanKeepsStableSubset(t *testing.T) {
	const n = 64
	c := newT(t, 10*n/4, Options[int, int]{ScanResistant: true})
	r := cyclicHitRate(t, c, seq(0, n), 1, 8)
	if r < 0.24 || r > 0.26 {
		t.Fatalf("scan-resistant hit rate %.3f, want ~0.25", r)
	}
	s := c.Stats()
	if s.Bytes > s.Budget || s.PeakBytes > s.Budget {
		t.Fatalf("budget exceeded: %+v", s)
	}
	// Uneven budget: room for 40 of 64.
	c2 := newT(t, 10*40, Options[int, int]{ScanResistant: true})
	if r := cyclicHitRate(t, c2, seq(0, n), 1, 8); r < 40.0/64-0.01 {
		t.Fatalf("budget for 40/64: hit rate %.3f, want %.3f", r, 40.0/64)
	}
}

func TestScanResistantFullBudgetIsLRU(t *testing.T) {
	const n = 64
	c := newT(t, 10*n, Options[int, int]{ScanResistant: true})
	if r := cyclicHitRate(t, c, seq(0, n), 1, 3); r != 1 {
		t.Fatalf("budget = working set: hit rate %.3f after the first pass, want 1", r)
	}
	if s := c.Stats(); s.Loads != n || s.Rejected != 0 || s.Evictions != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestScanResistantAdaptsToNewWorkingSet(t *testing.T) {
	const n = 64
	c := newT(t, 10*n/4, Options[int, int]{ScanResistant: true})
	cyclicHitRate(t, c, seq(0, n), 1, 3)
	// A different cycle of the same length: within two passes it must reach
	// its own stable subset.
	if r := cyclicHitRate(t, c, seq(1000, n), 2, 4); r < 0.24 {
		t.Fatalf("new working set: hit rate %.3f, want ~0.25", r)
	}
	// A small hot set whose keys were evicted earlier must get back in
	// once the resident entries stop being used.
	hot := seq(0, 4) // in the ghost list from the first scan (evicted)
	if r := cyclicHitRate(t, c, hot, 300, 5); r != 1 {
		t.Fatalf("hot set of previously evicted keys: hit rate %.3f after warm-up, want 1", r)
	}
}

// Parallel stress under -race: random operations from many goroutines; the
// budget must hold at every eviction and values must match their keys.
func TestParallelStress(t *testing.T) {
	for _, scan := range []bool{false, true} {
		t.Run(fmt.Sprintf("scan=%v", scan), func(t *testing.T) {
			const budget = 4000
			var c *Cache[int, []int]
			var over atomic.Int32
			c = newT(t, budget, Options[int, []int]{ScanResistant: scan, OnEvicted: func(k int, v []int) {
				// Runs under the lock: reading c.bytes here is safe.
				if c.bytes > c.budget || c.bytes < 0 {
					over.Add(1)
				}
				if len(v) == 0 || v[0] != k {
					over.Add(1)
				}
			}})
			onGoroutines(8, func(r *rand.Rand) {
				for i := 0; i < 3000; i++ {
					k := r.Intn(200)
					size := int64(10 + k*3)
					switch op := r.Intn(10); {
					case op < 6:
						v, err := c.GetOrLoad(k, func() ([]int, int64, error) {
							if k%97 == 13 && r.Intn(4) == 0 {
								return nil, 0, errors.New("flaky")
							}
							return []int{k}, size, nil
						})
						if err == nil && v[0] != k {
							t.Errorf("key %d got value %d", k, v[0])
						}
					case op < 8:
						if v, ok := c.Get(k); ok && v[0] != k {
							t.Errorf("key %d got value %d", k, v[0])
						}
					case op == 8:
						c.Add(k, []int{k}, size)
					default:
						c.Remove(k)
					}
					if s := c.Stats(); s.Bytes > s.Budget {
						t.Errorf("bytes %d > budget %d", s.Bytes, s.Budget)
						return
					}
				}
			})
			if over.Load() != 0 {
				t.Fatalf("%d budget or value violations seen in OnEvicted", over.Load())
			}
			s := c.Stats()
			if s.PeakBytes > budget {
				t.Fatalf("peak %d > budget", s.PeakBytes)
			}
			if len(c.inflight) != 0 {
				t.Fatalf("%d in-flight loads left", len(c.inflight))
			}
		})
	}
}

func TestLoadManyDeduplicatesWithGetOrLoad(t *testing.T) {
	c := newT(t, 1000, Options[string, int]{})
	release := make(chan struct{})
	claimed := make(chan []int, 1)
	var bulkDone sync.WaitGroup
	bulkDone.Go(func() {
		n, err := c.LoadMany([]string{"a", "b", "c"}, []int64{10, 10, 10}, func(idx []int) ([]int, error) {
			claimed <- idx
			<-release
			return []int{1, 2, 3}, nil
		})
		if err != nil || n != 3 {
			t.Errorf("LoadMany stored %d, %v", n, err)
		}
	})
	if idx := <-claimed; len(idx) != 3 {
		t.Fatalf("claimed %v", idx)
	}
	got := make(chan int, 1)
	go func() {
		v, err := c.GetOrLoad("b", func() (int, int64, error) { return -1, 10, errors.New("loaded although a bulk load had it") })
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	if v := <-got; v != 2 {
		t.Fatalf("b = %d, want 2", v)
	}
	bulkDone.Wait()
	// Already cached: nothing to claim.
	n, err := c.LoadMany([]string{"a", "c"}, []int64{10, 10}, func(idx []int) ([]int, error) {
		return nil, errors.New("should not run")
	})
	if n != 0 || err != nil {
		t.Fatalf("second LoadMany: %d, %v", n, err)
	}
}

func TestLoadManyFailureLetsWaitersLoad(t *testing.T) {
	c := newT(t, 1000, Options[string, int]{})
	release := make(chan struct{})
	claimed := make(chan struct{})
	go func() {
		c.LoadMany([]string{"a"}, []int64{10}, func(idx []int) ([]int, error) {
			close(claimed)
			<-release
			return nil, errors.New("bulk failed")
		})
	}()
	<-claimed
	got := make(chan error, 1)
	go func() {
		v, err := c.GetOrLoad("a", func() (int, int64, error) { return 9, 10, nil })
		if err == nil && v != 9 {
			err = fmt.Errorf("a = %d", v)
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("waiter after failed bulk load: %v", err)
	}
}

func TestTryGetOrLoad(t *testing.T) {
	c := newT(t, 100, Options[string, int]{})
	loads := 0
	load := func() (int, int64, error) { loads++; return 1, 50, nil }
	if _, ok, err := c.TryGetOrLoad("big", 200, load); ok || err != nil || loads != 0 {
		t.Fatalf("oversize: ok %v err %v loads %d", ok, err, loads)
	}
	if v, ok, err := c.TryGetOrLoad("a", 50, load); !ok || err != nil || v != 1 || loads != 1 {
		t.Fatalf("fits: %d %v %v loads %d", v, ok, err, loads)
	}
	if v, ok, err := c.TryGetOrLoad("a", 50, load); !ok || err != nil || v != 1 || loads != 1 {
		t.Fatalf("hit: %d %v %v loads %d", v, ok, err, loads)
	}
	if _, _, err := c.TryGetOrLoad("a", -1, load); err == nil {
		t.Fatal("negative size accepted")
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 2 || s.Uncacheable != 1 {
		t.Fatalf("stats %+v", s)
	}
}

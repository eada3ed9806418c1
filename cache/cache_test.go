package cache

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"
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

// Parallel stress under -race: random operations from many goroutines; the
// budget must hold at every eviction and values must match their keys.
func TestParallelStress(t *testing.T) {
	const budget = 4000
	var c *Cache[int, []int]
	var over atomic.Int32
	c = newT(t, budget, Options[int, []int]{OnEvicted: func(k int, v []int) {
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
				if v, ok := c.Get(k); ok && v[0] != k {
					t.Errorf("key %d got value %d", k, v[0])
				} else if !ok {
					c.Add(k, []int{k}, size)
				}
			case op < 9:
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
}

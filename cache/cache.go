package cache

import (
	"fmt"
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
)

// Options configures a Cache.
type Options[K comparable, V any] struct {
	// OnEvicted, if set, is called for every entry that leaves the cache:
	// eviction to respect the budget, Remove, replacement by Add and Purge.
	// It runs under the cache's lock and must not call any method of the
	// cache (that would deadlock); it may release the value's resources only
	// if no reader can still hold the value (values returned by Get stay in
	// their callers' hands after eviction).
	OnEvicted func(key K, value V)
}

// Stats is a snapshot of a cache's counters. Hits+Misses counts every Get.
type Stats struct {
	Hits        int64 // lookups served from the cache
	Misses      int64 // lookups not served from the cache
	Evictions   int64 // entries dropped to respect the budget
	Uncacheable int64 // entries larger than the whole budget (never stored)
	Entries     int   // entries held now
	Bytes       int64 // bytes held now (sum of entry sizes), never above Budget
	PeakBytes   int64 // highest Bytes seen
	Budget      int64 // byte budget
	// TimeSaved is an estimate of the work hits saved, filled in by the
	// cache's owner (PrefixCache's user: runtime).
	TimeSaved time.Duration
}

// HitRate is Hits / (Hits + Misses), or 0 before the first lookup.
func (s Stats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

func (s Stats) String() string {
	return fmt.Sprintf("hits=%d misses=%d (%.1f%%) evictions=%d uncacheable=%d entries=%d bytes=%d/%d time_saved=%v",
		s.Hits, s.Misses, 100*s.HitRate(), s.Evictions, s.Uncacheable, s.Entries, s.Bytes, s.Budget, s.TimeSaved)
}

// entry is the value stored in the lru.Cache.
type entry[V any] struct {
	val  V
	size int64
}

// Cache is a concurrency-safe LRU cache of values of known size with a byte
// budget, built on github.com/golang/groupcache/lru (which is not safe for
// concurrent use and is wrapped here).
//
// Concurrency rules:
//   - One mutex guards the LRU list, the byte count and the counters. Every
//     method takes it briefly.
//   - Options.OnEvicted runs under that mutex: it must not call back into the
//     cache.
//   - Values are shared between all callers that get them: treat them as
//     read-only.
type Cache[K comparable, V any] struct {
	mu        sync.Mutex
	lru       *lru.Cache // K -> *entry[V]
	budget    int64
	bytes     int64
	onEvicted func(K, V)
	st        Stats
}

// New returns a cache that holds at most budgetBytes bytes of entries.
func New[K comparable, V any](budgetBytes int64, o Options[K, V]) (*Cache[K, V], error) {
	if budgetBytes < 0 {
		return nil, fmt.Errorf("cache: negative budget %d", budgetBytes)
	}
	c := &Cache[K, V]{lru: lru.New(0), budget: budgetBytes, onEvicted: o.OnEvicted}
	c.lru.OnEvicted = c.removed
	return c, nil
}

// removed is the lru.Cache callback; it runs under c.mu.
func (c *Cache[K, V]) removed(k lru.Key, v interface{}) {
	e := v.(*entry[V])
	c.bytes -= e.size
	if c.onEvicted != nil {
		c.onEvicted(k.(K), e.val)
	}
	var zero V
	e.val = zero // drop the cache's reference so the buffer can be collected
}

// Get returns the cached value for key and counts a hit or a miss.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.get(key)
}

func (c *Cache[K, V]) get(key K) (V, bool) {
	if v, ok := c.lru.Get(key); ok {
		e := v.(*entry[V])
		c.st.Hits++
		return e.val, true
	}
	c.st.Misses++
	var zero V
	return zero, false
}

// peek returns the cached value without touching counters (recency is
// updated).
func (c *Cache[K, V]) peek(key K) (V, bool) {
	if v, ok := c.lru.Get(key); ok {
		return v.(*entry[V]).val, true
	}
	var zero V
	return zero, false
}

// Contains reports whether key is cached, without counting a lookup. Like a
// use, it makes the entry the most recently used one (groupcache's lru has no
// side-effect-free lookup); call it only for keys about to be used.
func (c *Cache[K, V]) Contains(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.contains(key)
}

func (c *Cache[K, V]) contains(key K) bool {
	_, ok := c.lru.Get(key)
	return ok
}

// Add stores value under key with the given size in bytes, evicting least
// recently used entries as needed. It reports whether the value was stored:
// a value larger than the whole budget, or with a negative size, is not
// stored. An existing entry for key is
// replaced.
func (c *Cache[K, V]) Add(key K, value V, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.insert(key, value, size)
}

// insert runs under c.mu.
func (c *Cache[K, V]) insert(key K, value V, size int64) bool {
	c.lru.Remove(key) // replacement: the old value leaves first
	if size < 0 || size > c.budget {
		c.st.Uncacheable++
		return false
	}
	for c.bytes+size > c.budget && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
		c.st.Evictions++
	}
	c.lru.Add(key, &entry[V]{val: value, size: size})
	c.bytes += size
	if c.bytes > c.st.PeakBytes {
		c.st.PeakBytes = c.bytes
	}
	return true
}

// Remove drops key from the cache and reports whether it was there.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.lru.Len()
	c.lru.Remove(key)
	return c.lru.Len() < n
}

// Purge drops every entry (OnEvicted runs for each). Counters are kept.
func (c *Cache[K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Clear()
	c.bytes = 0
}

// SetBudget changes the byte budget, evicting least recently used entries
// until the cache fits.
func (c *Cache[K, V]) SetBudget(budgetBytes int64) error {
	if budgetBytes < 0 {
		return fmt.Errorf("cache: negative budget %d", budgetBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = budgetBytes
	for c.bytes > c.budget && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
		c.st.Evictions++
	}
	return nil
}

// Stats returns a snapshot of the counters.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Entries = c.lru.Len()
	s.Bytes = c.bytes
	s.Budget = c.budget
	return s
}

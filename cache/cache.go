package cache

import (
	"fmt"
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
)

// DefaultGhostEntries is the default number of evicted keys a scan-resistant
// cache remembers to detect a cyclic scan larger than its budget.
const DefaultGhostEntries = 4096

// Options configures a Cache.
type Options[K comparable, V any] struct {
	// OnEvicted, if set, is called for every entry that leaves the cache:
	// eviction to respect the budget, Remove, replacement by Add and Purge.
	// It runs under the cache's lock and must not call any method of the
	// cache (that would deadlock); it may release the value's resources only
	// if no reader can still hold the value (values returned by Get stay in
	// their callers' hands after eviction).
	OnEvicted func(key K, value V)

	// ScanResistant turns on the stable-subset admission policy described in
	// the package documentation. Off, the cache is a plain LRU.
	ScanResistant bool

	// GhostEntries bounds how many evicted keys the scan-resistant policy
	// remembers (0 = DefaultGhostEntries). It should exceed the number of
	// distinct keys in the largest cyclic scan the cache is meant to survive.
	GhostEntries int
}

// Stats is a snapshot of a cache's counters. Hits+Misses counts every Get,
// Lookup and GetOrLoad call.
type Stats struct {
	Hits        int64 // lookups served from the cache
	Misses      int64 // lookups not served from the cache
	Loads       int64 // load functions run (by GetOrLoad or a bulk load)
	Shared      int64 // misses that waited for another caller's in-flight load instead of loading
	LoadErrors  int64 // load functions that failed
	Evictions   int64 // entries dropped to respect the budget
	Rejected    int64 // entries not stored by the scan-resistant admission policy
	Uncacheable int64 // entries larger than the whole budget (returned, never stored)
	Entries     int   // entries held now
	Bytes       int64 // bytes held now (sum of entry sizes), never above Budget
	PeakBytes   int64 // highest Bytes seen
	Budget      int64 // byte budget
	// LoadTime is the total time spent in load functions; TimeSaved the sum,
	// over hits, of the load time of the entry that was hit.
	LoadTime  time.Duration
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
	return fmt.Sprintf("hits=%d misses=%d (%.1f%%) loads=%d shared=%d evictions=%d rejected=%d uncacheable=%d entries=%d bytes=%d/%d time_saved=%v",
		s.Hits, s.Misses, 100*s.HitRate(), s.Loads, s.Shared, s.Evictions, s.Rejected, s.Uncacheable,
		s.Entries, s.Bytes, s.Budget, s.TimeSaved)
}

// entry is the value stored in the lru.Cache.
type entry[V any] struct {
	val  V
	size int64
	cost time.Duration // time it took to load
}

// call is one in-flight load; waiters block on done.
type call[V any] struct {
	done chan struct{}
	val  V
	err  error
	soft bool // a background (bulk) load: on failure, waiters load for themselves
}

// Cache is a concurrency-safe LRU cache of values of known size with a byte
// budget, built on github.com/golang/groupcache/lru (which is not safe for
// concurrent use and is wrapped here).
//
// Concurrency rules:
//   - One mutex guards the LRU list, the byte count, the counters, the ghost
//     list and the table of in-flight loads. Every method takes it briefly.
//   - Options.OnEvicted runs under that mutex: it must not call back into the
//     cache.
//   - Load functions (GetOrLoad, LoadMany) run outside the mutex. Concurrent
//     GetOrLoad calls for the same key run the load once; the others wait for
//     it (de-duplication, the role of groupcache's singleflight, done with an
//     in-flight table under the cache's own mutex so that "is it cached?" and
//     "is someone loading it?" are answered in one step and a bulk load can
//     claim many keys at once).
//   - A load that panics is turned into an error for the caller and for every
//     waiter; the cache stays usable.
//   - Values are shared between all callers that get them: treat them as
//     read-only.
type Cache[K comparable, V any] struct {
	mu        sync.Mutex
	lru       *lru.Cache // K -> *entry[V]
	budget    int64
	bytes     int64
	onEvicted func(K, V)
	evicting  bool // set while the cache evicts for space (vs. Remove/Purge)

	scan       bool
	ghost      *lru.Cache // recently evicted keys (scan-resistant policy)
	missStreak int64      // misses since the last hit

	inflight map[K]*call[V]
	st       Stats
}

// New returns a cache that holds at most budgetBytes bytes of entries.
func New[K comparable, V any](budgetBytes int64, o Options[K, V]) (*Cache[K, V], error) {
	if budgetBytes < 0 {
		return nil, fmt.Errorf("cache: negative budget %d", budgetBytes)
	}
	c := &Cache[K, V]{
		lru:       lru.New(0),
		budget:    budgetBytes,
		onEvicted: o.OnEvicted,
		scan:      o.ScanResistant,
		inflight:  make(map[K]*call[V]),
	}
	if c.scan {
		n := o.GhostEntries
		if n <= 0 {
			n = DefaultGhostEntries
		}
		c.ghost = lru.New(n)
	}
	c.lru.OnEvicted = c.removed
	return c, nil
}

// removed is the lru.Cache callback; it runs under c.mu.
func (c *Cache[K, V]) removed(k lru.Key, v interface{}) {
	e := v.(*entry[V])
	c.bytes -= e.size
	if c.evicting && c.ghost != nil {
		c.ghost.Add(k, nil)
	}
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
		c.st.TimeSaved += e.cost
		c.missStreak = 0
		return e.val, true
	}
	c.st.Misses++
	c.missStreak++
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
// a value larger than the whole budget, with a negative size, or refused by
// the scan-resistant policy is not stored. An existing entry for key is
// replaced.
func (c *Cache[K, V]) Add(key K, value V, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.insert(key, value, size, 0)
}

// insert runs under c.mu.
func (c *Cache[K, V]) insert(key K, value V, size int64, cost time.Duration) bool {
	c.lru.Remove(key) // replacement: the old value leaves first
	if size < 0 || size > c.budget {
		c.st.Uncacheable++
		return false
	}
	if c.bytes+size > c.budget && c.scan && !c.admitScan(key) {
		c.st.Rejected++
		return false
	}
	c.evicting = true
	for c.bytes+size > c.budget && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
		c.st.Evictions++
	}
	c.evicting = false
	c.lru.Add(key, &entry[V]{val: value, size: size, cost: cost})
	c.bytes += size
	if c.bytes > c.st.PeakBytes {
		c.st.PeakBytes = c.bytes
	}
	if c.ghost != nil {
		c.ghost.Remove(key)
	}
	return true
}

// admitScan decides, under c.mu, whether key may evict other entries (the
// scan-resistant policy; see the package documentation).
func (c *Cache[K, V]) admitScan(key K) bool {
	if _, seen := c.ghost.Get(key); !seen {
		return true // a new key, or one evicted too long ago to tell: plain LRU
	}
	// The key was evicted and is wanted again: its reuse distance exceeds
	// the budget, so admitting it would only evict another member of the
	// same cycle. Keep the resident subset, unless it has stopped being
	// used: a run of misses without a single hit that is longer than any
	// cycle the ghost list can describe means the working set moved on.
	return c.missStreak > c.staleAfter()
}

func (c *Cache[K, V]) staleAfter() int64 {
	return 2*int64(c.ghost.Len()) + int64(c.lru.Len()) + 16
}

// admits reports, under c.mu, whether an entry of this size for key would be
// stored now (used to skip useless prefetches).
func (c *Cache[K, V]) admits(key K, size int64) bool {
	if size < 0 || size > c.budget {
		return false
	}
	if c.bytes+size <= c.budget || !c.scan {
		return true
	}
	return c.admitScan(key)
}

// Remove drops key from the cache and reports whether it was there.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.lru.Len()
	c.lru.Remove(key)
	return c.lru.Len() < n
}

// Purge drops every entry (OnEvicted runs for each) and forgets the ghost
// list. Counters are kept.
func (c *Cache[K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Clear()
	c.bytes = 0
	if c.ghost != nil {
		c.ghost.Clear()
	}
	c.missStreak = 0
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
	c.evicting = true
	for c.bytes > c.budget && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
		c.st.Evictions++
	}
	c.evicting = false
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

// GetOrLoad returns the cached value for key, or runs load, stores its result
// (value and size in bytes) and returns it. Concurrent calls for the same key
// run load once. A value too large for the budget, or refused by the
// scan-resistant policy, is returned without being stored. A load error is
// returned and nothing is stored.
func (c *Cache[K, V]) GetOrLoad(key K, load func() (V, int64, error)) (V, error) {
	v, _, err := c.getOrLoad(key, -1, load)
	return v, err
}

// TryGetOrLoad is GetOrLoad for callers that have a path of their own for
// values the cache will not keep: if key is neither cached nor being loaded
// and an entry of size bytes would not be stored now (larger than the
// budget, or refused by the scan-resistant policy), it runs nothing and
// returns ok = false (counted as a miss, and as Uncacheable or Rejected).
// Otherwise it behaves like GetOrLoad and returns ok = true.
func (c *Cache[K, V]) TryGetOrLoad(key K, size int64, load func() (V, int64, error)) (v V, ok bool, err error) {
	if size < 0 {
		var zero V
		return zero, false, fmt.Errorf("cache: negative size %d", size)
	}
	return c.getOrLoad(key, size, load)
}

// getOrLoad implements GetOrLoad (size < 0) and TryGetOrLoad.
func (c *Cache[K, V]) getOrLoad(key K, size int64, load func() (V, int64, error)) (V, bool, error) {
	c.mu.Lock()
	if v, ok := c.get(key); ok {
		c.mu.Unlock()
		return v, true, nil
	}
	for {
		cl := c.inflight[key]
		if cl == nil {
			break
		}
		c.st.Shared++
		c.mu.Unlock()
		<-cl.done
		if cl.err == nil || !cl.soft {
			return cl.val, true, cl.err
		}
		// A background load failed: try again, loading ourselves if needed.
		c.mu.Lock()
		c.st.Shared--
		if v, ok := c.peek(key); ok {
			c.mu.Unlock()
			return v, true, nil
		}
	}
	if size >= 0 && !c.admits(key, size) {
		if size > c.budget {
			c.st.Uncacheable++
		} else {
			c.st.Rejected++
		}
		c.mu.Unlock()
		var zero V
		return zero, false, nil
	}
	cl := &call[V]{done: make(chan struct{})}
	c.inflight[key] = cl
	c.st.Loads++
	c.mu.Unlock()

	start := time.Now()
	v, n, err := safeLoad(key, load)
	cost := time.Since(start)

	c.mu.Lock()
	delete(c.inflight, key)
	c.st.LoadTime += cost
	if err != nil {
		c.st.LoadErrors++
	} else {
		c.insert(key, v, n, cost)
	}
	c.mu.Unlock()
	cl.val, cl.err = v, err
	close(cl.done)
	return v, true, err
}

func safeLoad[K comparable, V any](key K, load func() (V, int64, error)) (v V, size int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero V
			v, size, err = zero, 0, fmt.Errorf("cache: load of %v panicked: %v", key, r)
		}
	}()
	return load()
}

// LoadMany loads, in one call of load, the keys that are neither cached nor
// being loaded and that the cache would store now (size within the budget,
// admitted by the scan-resistant policy), then stores the results. load
// receives the indexes (into keys and sizes) it must produce, and returns one
// value per index, in order. GetOrLoad calls for a claimed key wait for this
// load; if it fails they run their own. LoadMany returns how many values it
// stored and load's error. Lookups are not counted: this is a prefetch.
func (c *Cache[K, V]) LoadMany(keys []K, sizes []int64, load func(idx []int) ([]V, error)) (int, error) {
	if len(keys) != len(sizes) {
		return 0, fmt.Errorf("cache: LoadMany: %d keys but %d sizes", len(keys), len(sizes))
	}
	c.mu.Lock()
	var idx []int
	var calls []*call[V]
	claimed := make(map[K]bool, len(keys))
	for i, k := range keys {
		if claimed[k] || c.inflight[k] != nil || c.contains(k) || !c.admits(k, sizes[i]) {
			continue
		}
		cl := &call[V]{done: make(chan struct{}), soft: true}
		c.inflight[k] = cl
		claimed[k] = true
		idx = append(idx, i)
		calls = append(calls, cl)
	}
	if len(idx) == 0 {
		c.mu.Unlock()
		return 0, nil
	}
	c.st.Loads += int64(len(idx))
	c.mu.Unlock()

	start := time.Now()
	vals, err := safeLoadMany(load, idx)
	cost := time.Since(start)
	if err == nil && len(vals) != len(idx) {
		err = fmt.Errorf("cache: LoadMany: load returned %d values for %d keys", len(vals), len(idx))
	}

	var total int64
	for _, i := range idx {
		total += sizes[i]
	}
	stored := 0
	c.mu.Lock()
	c.st.LoadTime += cost
	for j, i := range idx {
		delete(c.inflight, keys[i])
		if err != nil {
			continue
		}
		// Apportion the bulk load time by size.
		share := cost
		if total > 0 {
			share = time.Duration(float64(cost) * float64(sizes[i]) / float64(total))
		}
		if c.insert(keys[i], vals[j], sizes[i], share) {
			stored++
		}
	}
	if err != nil {
		c.st.LoadErrors++
	}
	c.mu.Unlock()
	for j, cl := range calls {
		if err == nil {
			cl.val = vals[j]
		}
		cl.err = err
		close(cl.done)
	}
	return stored, err
}

func safeLoadMany[V any](load func(idx []int) ([]V, error), idx []int) (vals []V, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, fmt.Errorf("cache: bulk load panicked: %v", r)
		}
	}()
	return load(idx)
}

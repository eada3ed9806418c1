package cache

import (
	"fmt"
	"slices"
	"sync"
)

// Snapshot is the KV state of a sequence after some tokens, captured by the
// runtime. The cache never looks inside it; Bytes is its memory cost, counted
// against the budget. A stored snapshot is shared by every request that
// reuses it, so restoring must copy out of it, never modify it.
type Snapshot interface {
	Bytes() int64
}

// prefixOverhead is the bookkeeping cost charged per entry on top of the
// snapshot and the token copy.
const prefixOverhead = 64

type prefixKey struct {
	n int    // prefix length in tokens
	h uint64 // hash of the first n tokens
}

type prefixEntry struct {
	tokens []int32
	snap   Snapshot
}

// PrefixStats are a PrefixCache's counters. Hits and Misses count Longest
// calls that found / did not find a stored prefix; Bytes, Entries, Evictions
// and Uncacheable come from the underlying byte-budget LRU.
type PrefixStats struct {
	Stats
	TokensLookedUp int64 // sum of len(tokens) over Longest calls
	TokensReused   int64 // sum of the returned prefix lengths
}

// PrefixCache maps token prefixes to KV snapshots, least recently used first
// out under a byte budget. A request calls Longest with its tokens, restores
// the snapshot of the longest stored prefix and evaluates only the tokens
// after it; at turn boundaries it stores a new snapshot with Put.
//
// Lookups cost O(len(tokens)): one pass hashes the prefixes at the stored
// lengths, each distinct stored length (longest first) is probed with one
// map lookup, and a candidate is confirmed by comparing its tokens, so a
// hash collision can cost a miss but never returns a wrong snapshot.
//
// Concurrency: every method takes the PrefixCache's mutex, then the inner
// cache's; evictions (which update the table of stored lengths) only happen
// inside PrefixCache methods, so under both locks.
type PrefixCache struct {
	mu      sync.Mutex
	c       *Cache[prefixKey, *prefixEntry]
	lengths map[int]int // stored prefix length -> number of entries
	byLen   []int       // distinct stored lengths, descending
	st      PrefixStats
}

// NewPrefixCache returns a prefix cache holding at most budgetBytes bytes of
// snapshots (plus their token copies and a small per-entry overhead).
func NewPrefixCache(budgetBytes int64) (*PrefixCache, error) {
	p := &PrefixCache{lengths: make(map[int]int)}
	c, err := New[prefixKey, *prefixEntry](budgetBytes, Options[prefixKey, *prefixEntry]{
		OnEvicted: p.evicted,
	})
	if err != nil {
		return nil, err
	}
	p.c = c
	return p, nil
}

// evicted runs under p.mu and the inner cache's mutex.
func (p *PrefixCache) evicted(k prefixKey, e *prefixEntry) {
	p.lengths[k.n]--
	if p.lengths[k.n] == 0 {
		delete(p.lengths, k.n)
		if i, ok := slices.BinarySearchFunc(p.byLen, k.n, descending); ok {
			p.byLen = slices.Delete(p.byLen, i, i+1)
		}
	}
	e.tokens, e.snap = nil, nil // release our references
}

func descending(a, b int) int { return b - a }

// hasher is FNV-1a over the little-endian bytes of token ids; its state
// after i tokens is the hash of the first i tokens.
type hasher uint64

const hashSeed hasher = 14695981039346656037

func (h hasher) add(t int32) hasher {
	u := uint32(t)
	for b := 0; b < 4; b++ {
		h ^= hasher(u & 0xff)
		h *= 1099511628211
		u >>= 8
	}
	return h
}

func hashTokens(tokens []int32) uint64 {
	h := hashSeed
	for _, t := range tokens {
		h = h.add(t)
	}
	return uint64(h)
}

// Put stores snap as the KV state after tokens (a copy of tokens is kept).
// It replaces any snapshot stored for exactly these tokens and reports
// whether snap was stored (not stored: empty tokens, nil snap, negative size,
// or larger than the whole budget).
func (p *PrefixCache) Put(tokens []int32, snap Snapshot) bool {
	if len(tokens) == 0 || snap == nil {
		return false
	}
	sb := snap.Bytes()
	if sb < 0 {
		return false
	}
	key := prefixKey{len(tokens), hashTokens(tokens)}
	e := &prefixEntry{tokens: slices.Clone(tokens), snap: snap}
	size := sb + 4*int64(len(tokens)) + prefixOverhead

	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.c.insert(key, e, size, 0) {
		return false
	}
	p.lengths[key.n]++
	if p.lengths[key.n] == 1 {
		i, _ := slices.BinarySearchFunc(p.byLen, key.n, descending)
		p.byLen = slices.Insert(p.byLen, i, key.n)
	}
	return true
}

// Longest returns the longest stored prefix of tokens: its length n (0 when
// none) and its snapshot. The prefix may be all of tokens; a caller that needs
// the logits of the last token should look up tokens[:len(tokens)-1] so that
// at least one token is left to evaluate.
func (p *PrefixCache) Longest(tokens []int32) (int, Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.TokensLookedUp += int64(len(tokens))
	if len(tokens) > 0 && len(p.byLen) > 0 {
		// One pass over tokens, keeping the hash at each stored length
		// (byLen is descending, so walk it from the end).
		hs := make([]uint64, len(p.byLen))
		j := len(p.byLen) - 1
		h := hashSeed
		for i, t := range tokens {
			if j < 0 {
				break
			}
			h = h.add(t)
			if i+1 == p.byLen[j] {
				hs[j] = uint64(h)
				j--
			}
		}
		p.c.mu.Lock()
		for k, n := range p.byLen {
			if n > len(tokens) {
				continue
			}
			e, ok := p.c.peek(prefixKey{n, hs[k]})
			if !ok || !slices.Equal(e.tokens, tokens[:n]) {
				continue
			}
			snap := e.snap
			p.c.mu.Unlock()
			p.st.Hits++
			p.st.TokensReused += int64(n)
			return n, snap
		}
		p.c.mu.Unlock()
	}
	p.st.Misses++
	return 0, nil
}

// Stats returns a snapshot of the counters.
func (p *PrefixCache) Stats() PrefixStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	inner := p.c.Stats()
	s := p.st
	hits, misses := s.Hits, s.Misses
	s.Stats = inner
	s.Hits, s.Misses = hits, misses
	return s
}

// Purge drops every stored snapshot. Counters are kept.
func (p *PrefixCache) Purge() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.Purge()
}

// SetBudget changes the byte budget, evicting as needed.
func (p *PrefixCache) SetBudget(budgetBytes int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.c.SetBudget(budgetBytes); err != nil {
		return fmt.Errorf("prefix cache: %w", err)
	}
	return nil
}

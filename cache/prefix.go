package cache

import (
	"fmt"
	"sync"
)

// Snapshot is the KV state of a sequence after some tokens, captured by the
// runtime. The cache never looks inside it; Bytes is its memory cost, counted
// against the budget. A stored snapshot is shared by every request that
// reuses it, so restoring must copy out of it, never modify it.
type Snapshot interface {
	Bytes() int64
}

// Bookkeeping charged against the budget on top of each snapshot: per entry,
// and per token (a trie node; shared prefixes are charged once per entry, so
// this is an upper bound).
const (
	prefixOverhead  = 64
	prefixTokenCost = 64
)

// trieNode is one token of a stored sequence. Nodes with no entry at or
// below them are deleted, so every node leads to at least one entry.
type trieNode struct {
	tok      int32
	depth    int
	parent   *trieNode
	children []*trieNode // few per node in practice; linear search
	sub      int         // entries ending at or below this node
	end      *prefixEntry
}

func (n *trieNode) child(t int32) *trieNode {
	for _, c := range n.children {
		if c.tok == t {
			return c
		}
	}
	return nil
}

type prefixEntry struct {
	node *trieNode
	snap Snapshot
}

// PrefixStats are a PrefixCache's counters. Hits and Misses count lookups
// (Longest, LongestCommon) that found / did not find a usable prefix; Bytes,
// Entries, Evictions and Uncacheable come from the underlying byte-budget LRU.
type PrefixStats struct {
	Stats
	TokensLookedUp int64 // sum of len(tokens) over lookups
	TokensReused   int64 // sum of the returned prefix lengths
}

// PrefixCache maps token sequences to KV snapshots, least recently used first
// out under a byte budget. A request looks up its tokens, restores the
// snapshot found and evaluates only the tokens after the reused prefix; at
// turn boundaries it stores a new snapshot with Put.
//
// The sequences are kept in a trie of tokens, so a lookup walks tokens once:
// O(len(tokens)) whatever the number of entries (plus, for LongestCommon, one
// walk down to the nearest stored sequence).
//
// Concurrency: every method takes the PrefixCache's mutex, then the inner
// cache's; evictions (which unlink entries from the trie in OnEvicted) only
// happen inside PrefixCache methods, so under both locks.
type PrefixCache struct {
	mu   sync.Mutex
	c    *Cache[*trieNode, *prefixEntry] // keyed by the node where the sequence ends
	root trieNode
	st   PrefixStats
}

// NewPrefixCache returns a prefix cache holding at most budgetBytes bytes of
// snapshots (plus a bookkeeping charge per entry and per token).
func NewPrefixCache(budgetBytes int64) (*PrefixCache, error) {
	p := &PrefixCache{}
	c, err := New[*trieNode, *prefixEntry](budgetBytes, Options[*trieNode, *prefixEntry]{
		OnEvicted: p.evicted,
	})
	if err != nil {
		return nil, err
	}
	p.c = c
	return p, nil
}

// evicted runs under p.mu and the inner cache's mutex.
func (p *PrefixCache) evicted(n *trieNode, e *prefixEntry) {
	n.end = nil
	p.unlink(n)
	e.node, e.snap = nil, nil // release our references
}

// unlink drops one entry count along the path from n to the root, deleting
// nodes that no longer lead to an entry.
func (p *PrefixCache) unlink(n *trieNode) {
	for x := n; x != nil; x = x.parent {
		x.sub--
		if x.sub == 0 && x.parent != nil {
			ch := x.parent.children
			for i, c := range ch {
				if c == x {
					ch[i] = ch[len(ch)-1]
					ch[len(ch)-1] = nil
					x.parent.children = ch[:len(ch)-1]
					break
				}
			}
		}
	}
}

// Put stores snap as the KV state after tokens, replacing any snapshot
// stored for exactly these tokens, and reports whether snap was stored (not
// stored: empty tokens, nil snap, negative size, or larger than the budget).
func (p *PrefixCache) Put(tokens []int32, snap Snapshot) bool {
	if len(tokens) == 0 || snap == nil {
		return false
	}
	sb := snap.Bytes()
	if sb < 0 {
		return false
	}
	size := sb + prefixTokenCost*int64(len(tokens)) + prefixOverhead

	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	// Drop the old entry for these tokens, if any.
	if n := p.find(tokens); n != nil && n.end != nil {
		p.c.lru.Remove(n)
	}
	// Link the path first (counting the new entry), so that evictions made
	// room for it cannot delete the nodes it needs.
	n := &p.root
	n.sub++
	for _, t := range tokens {
		c := n.child(t)
		if c == nil {
			c = &trieNode{tok: t, depth: n.depth + 1, parent: n}
			n.children = append(n.children, c)
		}
		c.sub++
		n = c
	}
	e := &prefixEntry{node: n, snap: snap}
	n.end = e
	if !p.c.insert(n, e, size) {
		n.end = nil
		p.unlink(n)
		return false
	}
	return true
}

// Contains reports whether a snapshot is stored for exactly tokens (so the
// caller can skip taking a snapshot that would only replace it). It does not
// count as a lookup.
func (p *PrefixCache) Contains(tokens []int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.find(tokens)
	return n != nil && n != &p.root && n.end != nil
}

// find returns the node of exactly tokens, or nil.
func (p *PrefixCache) find(tokens []int32) *trieNode {
	n := &p.root
	for _, t := range tokens {
		if n = n.child(t); n == nil {
			return nil
		}
	}
	return n
}

// Longest returns the longest stored sequence that is a prefix of tokens:
// its length n (0 when none) and its snapshot. The prefix may be all of
// tokens; a caller that needs the logits of the last token should look up
// tokens[:len(tokens)-1] so that at least one token is left to evaluate.
func (p *PrefixCache) Longest(tokens []int32) (int, Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.TokensLookedUp += int64(len(tokens))
	var best *trieNode
	n := &p.root
	for _, t := range tokens {
		if n = n.child(t); n == nil {
			break
		}
		if n.end != nil {
			best = n
		}
	}
	if best == nil {
		p.st.Misses++
		return 0, nil
	}
	return p.hit(best, best.depth)
}

// LongestCommon returns the stored snapshot that shares the longest common
// prefix with tokens: n, the length of that common prefix (0 when none), the
// snapshot, and snapLen, the number of tokens the snapshot holds (≥ n). The
// caller restores the snapshot and, when snapLen > n, truncates it to n
// positions: the KV state of the first n positions depends only on the
// first n tokens. Among candidates it prefers one that ends exactly at n,
// else the shortest one below (the least to copy).
func (p *PrefixCache) LongestCommon(tokens []int32) (n int, snap Snapshot, snapLen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.TokensLookedUp += int64(len(tokens))
	x := &p.root
	for _, t := range tokens {
		c := x.child(t)
		if c == nil {
			break
		}
		x = c
	}
	if x == &p.root {
		p.st.Misses++
		return 0, nil, 0
	}
	n = x.depth
	// Every node leads to an entry: take the shallowest one at or below x
	// (breadth first).
	level := []*trieNode{x}
	for len(level) > 0 {
		var next []*trieNode
		for _, y := range level {
			if y.end != nil {
				m, s := p.hit(y, n)
				return m, s, y.depth
			}
			next = append(next, y.children...)
		}
		level = next
	}
	p.st.Misses++ // cannot happen: nodes without entries are deleted
	return 0, nil, 0
}

// hit counts a lookup that reuses n tokens of the entry at node e and marks
// the entry as recently used.
func (p *PrefixCache) hit(e *trieNode, n int) (int, Snapshot) {
	p.c.mu.Lock()
	ent, ok := p.c.peek(e)
	p.c.mu.Unlock()
	if !ok { // cannot happen: entries leave the trie when they leave the cache
		p.st.Misses++
		return 0, nil
	}
	p.st.Hits++
	p.st.TokensReused += int64(n)
	return n, ent.snap
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

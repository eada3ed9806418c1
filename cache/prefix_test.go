package cache

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"
)

type sizedSnap struct {
	id   string
	size int64
}

func (s sizedSnap) Bytes() int64 { return s.size }

func newPC(t *testing.T, budget int64) *PrefixCache {
	t.Helper()
	pc, err := NewPrefixCache(budget)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

func TestPrefixLongest(t *testing.T) {
	p := newPC(t, 1<<20)
	a := []int32{1, 2, 3}
	ab := []int32{1, 2, 3, 4, 5}
	abc := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	other := []int32{1, 9, 3, 4, 5}
	for _, s := range [][]int32{a, ab, abc, other} {
		if !p.Put(s, sizedSnap{fmt.Sprint(s), 100}) {
			t.Fatalf("Put(%v) not stored", s)
		}
	}
	cases := []struct {
		q    []int32
		want int
	}{
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 8},
		{[]int32{1, 2, 3, 4, 5, 6, 7}, 5},
		{[]int32{1, 2, 3, 4, 5}, 5}, // exact
		{[]int32{1, 2, 3, 4}, 3},
		{[]int32{1, 2}, 0},
		{[]int32{1, 9, 3, 4, 5, 6}, 5},
		{[]int32{2, 2, 3}, 0},
		{nil, 0},
	}
	for _, c := range cases {
		n, snap := p.Longest(c.q)
		if n != c.want {
			t.Errorf("Longest(%v) = %d, want %d", c.q, n, c.want)
			continue
		}
		if n == 0 {
			if snap != nil {
				t.Errorf("Longest(%v): no prefix but a snapshot", c.q)
			}
			continue
		}
		if got, want := snap.(sizedSnap).id, fmt.Sprint(c.q[:n]); got != want {
			t.Errorf("Longest(%v) returned the snapshot of %s", c.q, got)
		}
	}
	s := p.Stats()
	if s.Hits != 5 || s.Misses != 3 || s.TokensReused != 8+5+5+3+5 || s.Entries != 4 {
		t.Fatalf("stats %+v", s)
	}
	if !p.Contains(ab) || p.Contains(ab[:4]) || p.Contains(nil) || p.Contains([]int32{4}) {
		t.Fatal("Contains wrong")
	}
	// Replacement: same tokens, new snapshot.
	p.Put(ab, sizedSnap{"new", 50})
	if _, snap := p.Longest(ab); snap.(sizedSnap).id != "new" {
		t.Fatal("Put did not replace the snapshot")
	}
	if s := p.Stats(); s.Entries != 4 {
		t.Fatalf("replacement changed the entry count: %+v", s)
	}
	if p.Put(nil, sizedSnap{"x", 1}) || p.Put(a, nil) || p.Put(a, sizedSnap{"neg", -1}) {
		t.Fatal("invalid Put stored")
	}
	// The caller's slice may change after Put.
	buf := []int32{7, 7, 7}
	p.Put(buf, sizedSnap{"777", 1})
	buf[0] = 8
	if n, _ := p.Longest([]int32{7, 7, 7, 1}); n != 3 {
		t.Fatal("Put kept a reference to the caller's tokens")
	}
}

// checkTrie verifies the trie's invariants against the inner cache.
func checkTrie(t *testing.T, p *PrefixCache) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	ends := 0
	var walk func(n *trieNode) int
	walk = func(n *trieNode) int {
		sub := 0
		if n.end != nil {
			sub++
			ends++
			if n.end.node != n {
				t.Errorf("entry at depth %d points to another node", n.depth)
			}
		}
		for _, c := range n.children {
			if c.parent != n || c.depth != n.depth+1 {
				t.Errorf("bad child link at depth %d", n.depth)
			}
			sub += walk(c)
		}
		if n.sub != sub {
			t.Errorf("node at depth %d counts %d entries, has %d", n.depth, n.sub, sub)
		}
		if sub == 0 && n != &p.root {
			t.Errorf("node at depth %d leads to no entry", n.depth)
		}
		return sub
	}
	walk(&p.root)
	if ends != p.c.lru.Len() {
		t.Errorf("trie holds %d entries, cache %d", ends, p.c.lru.Len())
	}
}

func TestPrefixLongestCommon(t *testing.T) {
	p := newPC(t, 1<<20)
	long := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	mid := []int32{1, 2, 3, 4, 5, 6}
	p.Put(long, sizedSnap{"long", 10})
	p.Put([]int32{1, 2, 9}, sizedSnap{"129", 10})
	cases := []struct {
		q        []int32
		n        int
		id       string
		snapLen  int
		longestN int
	}{
		{[]int32{1, 2, 3, 4, 99}, 4, "long", 8, 0}, // diverges inside "long": reuse 4 of its 8
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 8, "long", 8, 8},
		{[]int32{1, 2, 7}, 2, "129", 3, 0}, // "129" is the shortest below [1 2]
		{[]int32{1, 2, 9, 9}, 3, "129", 3, 3},
		{[]int32{5}, 0, "", 0, 0},
	}
	for _, c := range cases {
		n, snap, sl := p.LongestCommon(c.q)
		if n != c.n || sl != c.snapLen {
			t.Errorf("LongestCommon(%v) = %d, len %d; want %d, len %d", c.q, n, sl, c.n, c.snapLen)
			continue
		}
		if n > 0 && snap.(sizedSnap).id != c.id {
			t.Errorf("LongestCommon(%v) returned %s, want %s", c.q, snap.(sizedSnap).id, c.id)
		}
		if ln, _ := p.Longest(c.q); ln != c.longestN {
			t.Errorf("Longest(%v) = %d, want %d", c.q, ln, c.longestN)
		}
	}
	// With an entry ending exactly at the divergence point, that one is used.
	p.Put(mid[:4], sizedSnap{"1234", 10})
	if n, snap, sl := p.LongestCommon([]int32{1, 2, 3, 4, 99}); n != 4 || sl != 4 || snap.(sizedSnap).id != "1234" {
		t.Errorf("exact entry not preferred: %d %v %d", n, snap, sl)
	}
	checkTrie(t, p)
}

func TestPrefixEvictionByBytes(t *testing.T) {
	// Each entry costs 1000 + 4*len + overhead.
	cost := func(n int) int64 { return 1000 + prefixTokenCost*int64(n) + prefixOverhead }
	p := newPC(t, cost(4)+cost(5)+cost(6))
	seqs := [][]int32{{1, 2, 3, 4}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6}, {2, 2, 2, 2, 2, 2, 2}}
	for _, s := range seqs[:3] {
		p.Put(s, sizedSnap{fmt.Sprint(s), 1000})
	}
	p.Longest([]int32{1, 2, 3, 4, 9}) // touch {1,2,3,4}: {1,2,3,4,5} is now oldest
	p.Put(seqs[3], sizedSnap{"x", 1000})
	s := p.Stats()
	if s.Bytes > s.Budget || s.Evictions != 2 || s.Entries != 2 {
		t.Fatalf("stats %+v", s)
	}
	if n, _ := p.Longest([]int32{1, 2, 3, 4, 5, 6, 7}); n != 4 {
		t.Fatalf("after eviction Longest = %d, want 4 (5 and 6 evicted)", n)
	}
	if n, _ := p.Longest([]int32{2, 2, 2, 2, 2, 2, 2}); n != 7 {
		t.Fatalf("newest entry missing: %d", n)
	}
	checkTrie(t, p)
	p.Purge()
	if n, _ := p.Longest(seqs[3]); n != 0 {
		t.Fatal("entry survived Purge")
	}
	if s := p.Stats(); s.Bytes != 0 || s.Entries != 0 || len(p.root.children) != 0 || p.root.sub != 0 {
		t.Fatalf("after Purge: %+v, root %+v", s, p.root)
	}
	if err := p.SetBudget(-1); err == nil {
		t.Fatal("negative budget accepted")
	}
}

// toySession is a small deterministic sequence model with a KV cache: each
// position stores a key/value row derived from its token and position, and
// the output of a position attends (softmax) over every row so far. It
// stands in for runtime.Session to check that prefix reuse through the
// cache gives exactly the results of evaluating from scratch.
type toySession struct{ kv [][4]float32 }

type toySnap struct{ kv [][4]float32 }

func (s *toySnap) Bytes() int64 { return int64(len(s.kv)) * 16 }

func (s *toySession) snapshot() *toySnap  { return &toySnap{slices.Clone(s.kv)} }
func (s *toySession) restore(sn *toySnap) { s.kv = append(s.kv[:0], sn.kv...) }

// eval appends tokens and returns the output of the last one.
func (s *toySession) eval(tokens []int32) [4]float32 {
	var out [4]float32
	for _, tok := range tokens {
		pos := len(s.kv)
		var row [4]float32
		for i := range row {
			row[i] = float32(math.Sin(float64(tok)*0.37 + float64(pos)*0.11 + float64(i)))
		}
		s.kv = append(s.kv, row)
		var w []float64
		var z float64
		for _, r := range s.kv {
			d := float64(r[0]*row[1] + r[1]*row[2] + r[2]*row[3] + r[3]*row[0])
			e := math.Exp(d)
			w = append(w, e)
			z += e
		}
		out = [4]float32{}
		for j, r := range s.kv {
			for i := range out {
				out[i] += float32(w[j]/z) * r[i]
			}
		}
	}
	return out
}

func next(o [4]float32) int32 { // "sampling": a deterministic token from the output
	return int32(uint32(math.Float32bits(o[0]+o[1]+o[2]+o[3])>>7) % 50)
}

// chat runs turns of a conversation: the user's messages come from seed
// base for the first `shared` turns and from seed own after that, so users
// with the same base share a prefix and then diverge. With pc it reuses
// cached state (common=false: Longest, the longest stored prefix;
// common=true: LongestCommon, restore then truncate); without pc it
// evaluates every request from scratch. It returns every output.
func chat(pc *PrefixCache, common bool, base, own int64, shared, turns int) [][4]float32 {
	rb, ro := rand.New(rand.NewSource(base)), rand.New(rand.NewSource(own))
	var hist []int32
	var outs [][4]float32
	for turn := 0; turn < turns; turn++ {
		r := rb
		if turn >= shared {
			r = ro
		}
		for i := 0; i < 3+r.Intn(5); i++ {
			hist = append(hist, int32(r.Intn(50)))
		}
		s := &toySession{}
		if pc != nil {
			q := hist[:len(hist)-1]
			if common {
				if n, snap, sl := pc.LongestCommon(q); n > 0 {
					if len(snap.(*toySnap).kv) != sl {
						panic("snapLen differs from the snapshot's length")
					}
					s.restore(snap.(*toySnap))
					s.kv = s.kv[:n] // truncate
				}
			} else if n, snap := pc.Longest(q); n > 0 {
				s.restore(snap.(*toySnap))
			}
		}
		o := s.eval(hist[len(s.kv):])
		outs = append(outs, o)
		if pc != nil {
			pc.Put(hist, s.snapshot()) // turn boundary: after the prompt
		}
		for i := 0; i < 4; i++ { // the reply
			tok := next(o)
			hist = append(hist, tok)
			o = s.eval([]int32{tok})
			outs = append(outs, o)
		}
		if pc != nil {
			pc.Put(hist, s.snapshot()) // and after the reply
		}
	}
	return outs
}

func TestPrefixReuseGivesIdenticalResults(t *testing.T) {
	const users, turns, shared = 6, 5, 2
	for _, common := range []bool{false, true} {
		t.Run(fmt.Sprintf("common=%v", common), func(t *testing.T) {
			pc := newPC(t, 1<<20)
			var wg sync.WaitGroup
			got := make([][][4]float32, users)
			// Users u and u+3 share their first two turns, then diverge.
			for u := 0; u < users; u++ {
				wg.Add(1)
				go func(u int) {
					defer wg.Done()
					got[u] = chat(pc, common, int64(u%3), int64(100+u), shared, turns)
				}(u)
			}
			wg.Wait()
			for u := 0; u < users; u++ {
				want := chat(nil, false, int64(u%3), int64(100+u), shared, turns)
				if !slices.Equal(got[u], want) {
					t.Fatalf("user %d: outputs with prefix reuse differ from evaluation from scratch", u)
				}
			}
			s := pc.Stats()
			if s.TokensReused == 0 || s.Hits < users*(turns-1) {
				t.Fatalf("the test did not exercise reuse: %+v", s)
			}
			checkTrie(t, pc)
			t.Logf("%d of %d looked-up tokens reused, %v", s.TokensReused, s.TokensLookedUp, s.Stats)
		})
	}
}

type tokSnap struct {
	toks []int32
	size int64
}

func (s tokSnap) Bytes() int64 { return s.size }

func TestPrefixParallelStress(t *testing.T) {
	pc := newPC(t, 40000)
	onGoroutines(8, func(r *rand.Rand) {
		for i := 0; i < 2000; i++ {
			toks := make([]int32, 1+r.Intn(40))
			for j := range toks {
				toks[j] = int32(r.Intn(3))
			}
			switch r.Intn(3) {
			case 0:
				pc.Put(toks, tokSnap{slices.Clone(toks), int64(r.Intn(500))})
			case 1:
				if n, snap := pc.Longest(toks); n > 0 && !slices.Equal(snap.(tokSnap).toks, toks[:n]) {
					t.Errorf("Longest(%v) = %d with the snapshot of %v", toks, n, snap.(tokSnap).toks)
					return
				}
			default:
				n, snap, sl := pc.LongestCommon(toks)
				if n == 0 {
					continue
				}
				st := snap.(tokSnap).toks
				if len(st) != sl || sl < n || !slices.Equal(st[:n], toks[:n]) || (n < len(toks) && n < sl && st[n] == toks[n]) {
					t.Errorf("LongestCommon(%v) = %d, %d with the snapshot of %v", toks, n, sl, st)
					return
				}
			}
			if r.Intn(500) == 0 {
				pc.Purge()
			}
		}
	})
	s := pc.Stats()
	if s.PeakBytes > s.Budget {
		t.Fatalf("peak %d > budget %d", s.PeakBytes, s.Budget)
	}
	checkTrie(t, pc)
}

// onGoroutines runs fn on n goroutines at once, goroutine g with a rand
// seeded g, and waits for all of them.
func onGoroutines(n int, fn func(r *rand.Rand)) {
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			fn(rand.New(rand.NewSource(seed)))
		}(int64(g))
	}
	wg.Wait()
}

package grammar

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync"
)

// Vocab is a tokenizer's vocabulary prepared for masking: a byte trie of
// the tokens' pieces for the structural positions (few tokens fit, and the
// walk drops a subtree at its first rejected byte) and, per string lexer
// state, a precomputed split of the vocabulary into tokens that stay inside
// the string, tokens that close it (checked by their bytes from the quote
// on) and tokens that cannot appear, so a string body (where most tokens
// fit) costs a pass over bitsets, not a walk of the whole trie. Safe for
// concurrent use.
type Vocab struct {
	n      int
	pieces [][]byte
	eog    []int32
	trie   []trieNode
	edges  []trieEdge
	toks   []int32 // tokens ending at trie nodes, by node

	lexOnce [numLex]sync.Once
	lex     [numLex]*lexClass
}

type trieNode struct {
	edge, nEdges int32 // children: edges[edge : edge+nEdges], sorted by byte
	tok, nToks   int32 // tokens ending here: toks[tok : tok+nToks]
}

type trieEdge struct {
	b     byte
	child int32
}

// lexClass splits the vocabulary for one string lexer state.
type lexClass struct {
	inside    []uint64 // bitset: tokens that leave the string open
	insideIDs []int32
	chars     []uint16 // characters a token starts before its end (or its closing quote)
	closers   []closer
	suffixes  []string // distinct bytes from the closing quote on
}

type closer struct {
	id     int32
	suffix int32
}

// NewVocab prepares n tokens: piece(id) is a token's bytes as generated
// text; text(id) false marks tokens that never appear as text (control
// tokens, empty pieces); eog lists the end-of-generation tokens.
func NewVocab(n int, piece func(int32) []byte, text func(int32) bool, eog []int32) *Vocab {
	v := &Vocab{n: n, pieces: make([][]byte, n), eog: eog}
	type bnode struct {
		kids map[byte]int32
		toks []int32
	}
	nodes := []bnode{{}}
	for id := int32(0); int(id) < n; id++ {
		p := piece(id)
		if len(p) == 0 || !text(id) {
			continue
		}
		v.pieces[id] = p
		cur := int32(0)
		for _, b := range p {
			next, ok := nodes[cur].kids[b]
			if !ok {
				next = int32(len(nodes))
				nodes = append(nodes, bnode{})
				if nodes[cur].kids == nil {
					nodes[cur].kids = map[byte]int32{}
				}
				nodes[cur].kids[b] = next
			}
			cur = next
		}
		nodes[cur].toks = append(nodes[cur].toks, id)
	}
	v.trie = make([]trieNode, len(nodes))
	for i, bn := range nodes {
		t := &v.trie[i]
		t.edge, t.nEdges = int32(len(v.edges)), int32(len(bn.kids))
		keys := make([]int, 0, len(bn.kids))
		for b := range bn.kids {
			keys = append(keys, int(b))
		}
		sort.Ints(keys)
		for _, b := range keys {
			v.edges = append(v.edges, trieEdge{byte(b), bn.kids[byte(b)]})
		}
		t.tok, t.nToks = int32(len(v.toks)), int32(len(bn.toks))
		v.toks = append(v.toks, bn.toks...)
	}
	return v
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return v.n }

func (v *Vocab) words() int { return (v.n + 63) / 64 }

// lexClassOf builds (once) the split for lexer state st.
func (v *Vocab) lexClassOf(st uint8) *lexClass {
	v.lexOnce[st].Do(func() {
		lc := &lexClass{inside: make([]uint64, v.words()), chars: make([]uint16, v.n)}
		index := map[string]int32{}
		for id, p := range v.pieces {
			if p == nil {
				continue
			}
			ls, chars := st, 0
			ok := true
			closeAt := -1
			for i, b := range p {
				ns, ev := lexStep(ls, b)
				if ev == evReject {
					ok = false
					break
				}
				if ev == evClose {
					closeAt = i
					break
				}
				if ev == evChar {
					chars++
				}
				ls = ns
			}
			if !ok {
				continue
			}
			lc.chars[id] = uint16(min(chars, math.MaxUint16))
			if closeAt < 0 {
				lc.inside[id/64] |= 1 << (id % 64)
				lc.insideIDs = append(lc.insideIDs, int32(id))
				continue
			}
			suf := string(p[closeAt:])
			si, seen := index[suf]
			if !seen {
				si = int32(len(lc.suffixes))
				index[suf] = si
				lc.suffixes = append(lc.suffixes, suf)
			}
			lc.closers = append(lc.closers, closer{int32(id), si})
		}
		v.lex[st] = lc
	})
	return v.lex[st]
}

// walk marks in mask every token the trie holds that s accepts.
func (v *Vocab) walk(node int32, states []*stack, mask []uint64) {
	t := v.trie[node]
	for _, e := range v.edges[t.edge : t.edge+t.nEdges] {
		var next []*stack
		for _, s := range states {
			next = advance(s, e.b, next)
		}
		if len(next) == 0 {
			continue
		}
		c := v.trie[e.child]
		for _, id := range v.toks[c.tok : c.tok+c.nToks] {
			mask[id/64] |= 1 << (id % 64)
		}
		if c.nEdges > 0 {
			v.walk(e.child, next, mask)
		}
	}
}

// stringMask marks the tokens accepted by s, whose top frame is a string.
func (v *Vocab) stringMask(s *stack, mask []uint64) {
	f := s.f
	nd := f.nd
	lc := v.lexClassOf(f.st)
	c := int(f.n)
	if nd.maxLen < 0 {
		for i, w := range lc.inside {
			mask[i] |= w
		}
	} else {
		room := nd.maxLen - c
		for _, id := range lc.insideIDs {
			if int(lc.chars[id]) <= room {
				mask[id/64] |= 1 << (id % 64)
			}
		}
	}
	if len(lc.closers) == 0 {
		return
	}
	// The closing quote is checked from a state whose count passes, the
	// length of each token apart; keys that must not take a declared name
	// are checked token by token.
	g := f
	g.st = lNormal
	g.n = int32(nd.minLen)
	base := []*stack{with(s, g)}
	verdict := make([]int8, len(lc.suffixes)) // 0 unknown, 1 accepted, 2 rejected
	for _, cl := range lc.closers {
		total := c + int(lc.chars[cl.id])
		if total < nd.minLen || (nd.maxLen >= 0 && total > nd.maxLen) {
			continue
		}
		var ok bool
		if nd.exclude != nil {
			ok = step([]*stack{s}, v.pieces[cl.id]) != nil
		} else {
			if verdict[cl.suffix] == 0 {
				verdict[cl.suffix] = 2
				if step(base, []byte(lc.suffixes[cl.suffix])) != nil {
					verdict[cl.suffix] = 1
				}
			}
			ok = verdict[cl.suffix] == 1
		}
		if ok {
			mask[cl.id/64] |= 1 << (cl.id % 64)
		}
	}
}

// patternMask marks the tokens accepted by s, whose top frame is a string
// under an automaton in state st: the trie walk follows the automaton's
// state alone (no stacks) until a closing quote hands the rest of the
// token to the stack below.
func (v *Vocab) patternMask(node int32, s *stack, st int32, mask []uint64) {
	d := s.f.nd.dfa
	t := v.trie[node]
	for _, e := range v.edges[t.edge : t.edge+t.nEdges] {
		next := d.step(st, e.b)
		closes := next < 0 && e.b == '"' && d.acc[st]
		if next < 0 && !closes {
			continue
		}
		c := v.trie[e.child]
		for _, id := range v.toks[c.tok : c.tok+c.nToks] {
			mask[id/64] |= 1 << (id % 64)
		}
		if c.nEdges == 0 {
			continue
		}
		if closes {
			v.walk(e.child, []*stack{s.up}, mask)
		} else {
			v.patternMask(e.child, s, next, mask)
		}
	}
}

// stateMask marks the tokens one stack accepts.
func (v *Vocab) stateMask(s *stack, mask []uint64) {
	switch s.f.nd.kind {
	case kString:
		v.stringMask(s, mask)
		return
	case kPattern:
		v.patternMask(0, s, s.f.n, mask)
		return
	}
	v.walk(0, []*stack{s}, mask)
}

// TokenMatcher constrains one generation: Mask before each sampling step,
// Accept with the token chosen. Not safe for concurrent use.
type TokenMatcher struct {
	v      *Vocab
	m      *Matcher
	cache  map[string][]uint64 // per stack: the tokens it accepts
	mask   []uint64
	key    []byte
	ended  bool
	Tokens int // tokens accepted
}

// maxCached bounds the per-state mask cache (entries of Size/8 bytes).
const maxCached = 256

// NewTokenMatcher starts a document of g over vocabulary v.
func NewTokenMatcher(g *Grammar, v *Vocab) *TokenMatcher {
	return &TokenMatcher{v: v, m: g.NewMatcher(), cache: map[string][]uint64{}, mask: make([]uint64, v.words())}
}

// Matcher is the byte-level state (for inspection; do not advance it).
func (t *TokenMatcher) Matcher() *Matcher { return t.m }

// Allowed computes the set of tokens that may come next, as a bitset over
// the vocabulary (valid until the next call): the tokens that continue a
// valid document, plus the end-of-generation tokens once the document is
// complete; only those once nothing can follow.
func (t *TokenMatcher) Allowed() []uint64 {
	mask := t.mask
	clear(mask)
	if !t.m.Finished() {
		for _, s := range t.m.states {
			t.key = appendKey(t.key[:0], s)
			sm, ok := t.cache[string(t.key)]
			if !ok {
				sm = make([]uint64, len(mask))
				t.v.stateMask(s, sm)
				if len(t.cache) >= maxCached {
					clear(t.cache)
				}
				t.cache[string(t.key)] = sm
			}
			for i, w := range sm {
				mask[i] |= w
			}
		}
	}
	if t.m.Done() {
		for _, id := range t.v.eog {
			if id >= 0 && int(id) < t.v.n {
				mask[id/64] |= 1 << (id % 64)
			}
		}
	}
	return mask
}

// Mask sets the logits of every token that may not come next to -Inf. It
// fails if no token of the vocabulary can continue the document.
func (t *TokenMatcher) Mask(logits []float32) error {
	if len(logits) < t.v.n {
		return fmt.Errorf("grammar: %d logits for a vocabulary of %d tokens", len(logits), t.v.n)
	}
	mask := t.Allowed()
	any := false
	for _, w := range mask {
		if w != 0 {
			any = true
			break
		}
	}
	if !any {
		return fmt.Errorf("grammar: no token of the vocabulary can continue the document")
	}
	ninf := float32(math.Inf(-1))
	for i, w := range mask {
		base := i * 64
		if w == math.MaxUint64 {
			continue
		}
		end := min(base+64, t.v.n)
		for j := base; j < end; j++ {
			if w&(1<<(j-base)) == 0 {
				logits[j] = ninf
			}
		}
	}
	for j := t.v.n; j < len(logits); j++ {
		logits[j] = ninf
	}
	return nil
}

// Count returns how many tokens a mask allows.
func Count(mask []uint64) int {
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n
}

// Accept advances the document by token id.
func (t *TokenMatcher) Accept(id int32) error {
	if id < 0 || int(id) >= t.v.n {
		return fmt.Errorf("grammar: token %d is outside the vocabulary", id)
	}
	for _, e := range t.v.eog {
		if e == id {
			if !t.m.Done() {
				return fmt.Errorf("grammar: end of generation before the document is complete")
			}
			t.ended = true
			return nil
		}
	}
	p := t.v.pieces[id]
	if p == nil || !t.m.Advance(p) {
		return fmt.Errorf("grammar: token %d (%q) cannot continue the document", id, p)
	}
	t.Tokens++
	return nil
}

// Done reports whether the document is complete (it may end here).
func (t *TokenMatcher) Done() bool { return t.m.Done() }

// Finished reports whether the document is complete and nothing may follow
// (or an end-of-generation token was accepted).
func (t *TokenMatcher) Finished() bool { return t.ended || t.m.Finished() }

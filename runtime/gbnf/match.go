package gbnf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// A stack is the positions still to match, the next one last; every stack
// in a matcher's set has a character element on top, or is empty (the
// root rule is complete).
type stack []int32

var errTooMany = errors.New("grammar: too many parse stacks (an ambiguous grammar)")

// expand pushes the alternatives of rule references on top of s until a
// character (or nothing) is on top, adding the results to out.
func (g *Grammar) expand(s stack, out []stack, budget *int) ([]stack, error) {
	*budget--
	if *budget < 0 {
		return nil, errTooMany
	}
	for len(s) > 0 && g.elems[s[len(s)-1]].kind == kEnd {
		s = s[:len(s)-1] // an alternative done: back to what follows it
	}
	if len(s) > 0 && g.elems[s[len(s)-1]].kind == kRef {
		pos := s[len(s)-1]
		rest := append(stack(nil), s[:len(s)-1]...)
		if g.elems[pos+1].kind != kEnd { // no need to come back to an end
			rest = append(rest, pos+1)
		}
		var err error
		for _, a := range g.rules[g.elems[pos].rule] {
			next := append(append(stack(nil), rest...), int32(a))
			if out, err = g.expand(next, out, budget); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, o := range out { // the sets are small: a scan beats hashing
		if slices.Equal(o, s) {
			return out, nil
		}
	}
	if len(out) >= maxStacks {
		return nil, errTooMany
	}
	return append(out, s), nil
}

// start is the set of stacks before any character.
func (g *Grammar) start() ([]stack, error) {
	budget := maxExpand
	var out []stack
	for _, a := range g.rules[g.root] {
		var err error
		if out, err = g.expand(stack{int32(a)}, out, &budget); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// step advances stacks over character c; an empty result means c cannot
// come next.
func (g *Grammar) step(stacks []stack, c rune) ([]stack, error) {
	var out []stack
	budget := maxExpand
	for _, s := range stacks {
		if len(s) == 0 {
			continue
		}
		top := s[len(s)-1]
		if !g.elems[top].matches(c) {
			continue
		}
		next := append(append(stack(nil), s[:len(s)-1]...), top+1)
		var err error
		if out, err = g.expand(next, out, &budget); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func complete(stacks []stack) bool {
	for _, s := range stacks {
		if len(s) == 0 {
			return true
		}
	}
	return false
}

// Vocab is a tokenizer's vocabulary prepared for masking: the tokens'
// texts as a trie of code points, so a mask walks each shared prefix once
// and drops a subtree at its first rejected character. Safe for concurrent
// use once made.
type Vocab struct {
	n     int
	piece func(id int32) []byte
	eog   map[int32]bool
	nodes []trieNode
}

type trieNode struct {
	kids map[rune]int32 // child node by next character (while building)
	edge []trieEdge     // the same, for walking
	toks []int32        // tokens whose text ends here
}

type trieEdge struct {
	c     rune
	child int32
}

// NewVocab prepares n tokens: piece(id) is a token's bytes as generated
// text; text(id) false marks tokens that never appear as text (control
// tokens); eog lists the end-of-generation tokens. Tokens whose text is
// empty or not whole UTF-8 are left out (never allowed under a grammar).
func NewVocab(n int, piece func(id int32) []byte, text func(id int32) bool, eog []int32) *Vocab {
	v := &Vocab{n: n, piece: piece, eog: map[int32]bool{}, nodes: []trieNode{{}}}
	for _, id := range eog {
		v.eog[id] = true
	}
	for id := int32(0); int(id) < n; id++ {
		p := piece(id)
		if v.eog[id] || !text(id) || len(p) == 0 || !utf8.Valid(p) {
			continue
		}
		node := int32(0)
		for _, c := range string(p) {
			next, ok := v.nodes[node].kids[c]
			if !ok {
				next = int32(len(v.nodes))
				v.nodes = append(v.nodes, trieNode{})
				if v.nodes[node].kids == nil {
					v.nodes[node].kids = map[rune]int32{}
				}
				v.nodes[node].kids[c] = next
			}
			node = next
		}
		v.nodes[node].toks = append(v.nodes[node].toks, id)
	}
	for i := range v.nodes {
		nd := &v.nodes[i]
		for c, child := range nd.kids {
			nd.edge = append(nd.edge, trieEdge{c, child})
		}
		slices.SortFunc(nd.edge, func(a, b trieEdge) int { return int(a.c - b.c) })
		nd.kids = nil
	}
	return v
}

// Matcher constrains one generation to a grammar.
type Matcher struct {
	g      *Grammar
	v      *Vocab
	stacks []stack
	// A lazily built automaton over stack sets: sets[i] is a set met so
	// far, index finds a set by its key, trans caches step(sets[i], c)
	// (-1: no stack survives). Cleared when it grows past maxSets.
	sets  [][]stack
	index map[string]int32
	trans map[uint64]int32
}

const (
	maxSets  = 1 << 16
	maxTrans = 1 << 20
)

// setKey identifies a stack set (the order step makes them in).
func setKey(st []stack) string {
	var b []byte
	for _, s := range st {
		for _, p := range s {
			b = binary.AppendUvarint(b, uint64(p))
		}
		b = append(b, 0xff)
	}
	return string(b)
}

func (m *Matcher) intern(st []stack) int32 {
	k := setKey(st)
	if id, ok := m.index[k]; ok {
		return id
	}
	id := int32(len(m.sets))
	m.sets = append(m.sets, st)
	m.index[k] = id
	return id
}

// next is the set after character c from set id (-1: none).
func (m *Matcher) next(id int32, c rune) (int32, error) {
	k := uint64(id)<<32 | uint64(uint32(c))
	if n, ok := m.trans[k]; ok {
		return n, nil
	}
	st, err := m.g.step(m.sets[id], c)
	if err != nil {
		return 0, err
	}
	n := int32(-1)
	if len(st) > 0 {
		n = m.intern(st)
	}
	m.trans[k] = n
	return n, nil
}

// NewMatcher starts matching g at its root, over vocabulary v.
func (g *Grammar) NewMatcher(v *Vocab) (*Matcher, error) {
	st, err := g.start()
	if err != nil {
		return nil, err
	}
	return &Matcher{g: g, v: v, stacks: st}, nil
}

// Match reports whether text (whole) is in the grammar's language.
func (g *Grammar) Match(text string) (bool, error) {
	st, err := g.start()
	if err != nil {
		return false, err
	}
	for _, c := range text {
		if st, err = g.step(st, c); err != nil || len(st) == 0 {
			return false, err
		}
	}
	return complete(st), nil
}

// after returns the stacks after piece, nil when it cannot come next (or
// ends inside a UTF-8 character).
func (m *Matcher) after(piece []byte) ([]stack, error) {
	st := m.stacks
	for len(piece) > 0 {
		c, n := utf8.DecodeRune(piece)
		if c == utf8.RuneError && n <= 1 {
			return nil, nil
		}
		piece = piece[n:]
		var err error
		if st, err = m.g.step(st, c); err != nil || len(st) == 0 {
			return nil, err
		}
	}
	return st, nil
}

// Done says whether what was accepted is a complete sentence.
func (m *Matcher) Done() bool { return complete(m.stacks) }

// Finished says whether nothing may follow (complete, and no stack can
// take another character).
func (m *Matcher) Finished() bool {
	for _, s := range m.stacks {
		if len(s) > 0 {
			return false
		}
	}
	return true
}

// Mask sets to -Inf the logits of every token that cannot come next: the
// tokens whose text continues the grammar, and end-of-generation tokens
// once it is complete, stay.
func (m *Matcher) Mask(logits []float32) error {
	if len(logits) < m.v.n {
		return fmt.Errorf("grammar: %d logits for a vocabulary of %d tokens", len(logits), m.v.n)
	}
	allowed := make([]bool, len(logits))
	ok := 0
	if m.Done() {
		for id := range m.v.eog {
			if id >= 0 && int(id) < m.v.n {
				allowed[id] = true
				ok++
			}
		}
	}
	if !m.Finished() {
		// Bounded: one walk adds at most a transition per trie node.
		if m.index == nil || len(m.sets) > maxSets || len(m.trans) > maxTrans {
			m.sets, m.index, m.trans = nil, map[string]int32{}, map[uint64]int32{}
		}
		var walk func(node, set int32) error
		walk = func(node, set int32) error {
			for _, e := range m.v.nodes[node].edge {
				next, err := m.next(set, e.c)
				if err != nil {
					return err
				}
				if next < 0 {
					continue
				}
				for _, id := range m.v.nodes[e.child].toks {
					allowed[id] = true
					ok++
				}
				if err := walk(e.child, next); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(0, m.intern(m.stacks)); err != nil {
			return err
		}
	}
	if ok == 0 {
		return errors.New("grammar: no token of the vocabulary can continue the text")
	}
	ninf := float32(math.Inf(-1))
	for id := range logits {
		if !allowed[id] {
			logits[id] = ninf
		}
	}
	return nil
}

// Accept advances over the chosen token.
func (m *Matcher) Accept(id int32) error {
	if m.v.eog[id] {
		if !m.Done() {
			return errors.New("grammar: end of generation before the grammar is complete")
		}
		m.stacks = []stack{{}}
		return nil
	}
	if int(id) < 0 || int(id) >= m.v.n {
		return fmt.Errorf("grammar: token %d out of the vocabulary", id)
	}
	p := m.v.piece(id)
	st, err := m.after(p)
	if err != nil {
		return err
	}
	if st == nil || len(p) == 0 {
		return fmt.Errorf("grammar: token %d (%q) cannot come next", id, p)
	}
	m.stacks = st
	return nil
}

package gbnf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A stack is the positions still to match, the next one last; every stack
// in a matcher's set has a character element on top, or is empty (the
// root rule is complete).
type stack []int32

func (s stack) key() string {
	var b strings.Builder
	for _, p := range s {
		b.WriteString(strconv.Itoa(int(p)))
		b.WriteByte(',')
	}
	return b.String()
}

var errTooMany = errors.New("grammar: too many parse stacks (an ambiguous grammar)")

// expand pushes the alternatives of rule references on top of s until a
// character (or nothing) is on top, adding the results to out.
func (g *Grammar) expand(s stack, out []stack, seen map[string]bool, budget *int) ([]stack, error) {
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
			if out, err = g.expand(next, out, seen, budget); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	k := s.key()
	if seen[k] {
		return out, nil
	}
	seen[k] = true
	if len(out) >= maxStacks {
		return nil, errTooMany
	}
	return append(out, s), nil
}

// start is the set of stacks before any character.
func (g *Grammar) start() ([]stack, error) {
	budget := maxExpand
	seen := map[string]bool{}
	var out []stack
	for _, a := range g.rules[g.root] {
		var err error
		if out, err = g.expand(stack{int32(a)}, out, seen, &budget); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// step advances stacks over character c; an empty result means c cannot
// come next.
func (g *Grammar) step(stacks []stack, c rune) ([]stack, error) {
	var out []stack
	seen := map[string]bool{}
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
		if out, err = g.expand(next, out, seen, &budget); err != nil {
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

// Vocab is what the matcher needs of a tokenizer.
type Vocab struct {
	N     int
	Piece func(id int32) []byte // the token's bytes as generated text
	Text  func(id int32) bool   // false: never text (control tokens)
	EOG   []int32
}

// Matcher constrains one generation to a grammar.
type Matcher struct {
	g      *Grammar
	v      Vocab
	stacks []stack
	cache  map[string][]stack // after a piece, from the current set (cleared each step)
}

// NewMatcher starts matching g at its root, over vocabulary v.
func (g *Grammar) NewMatcher(v Vocab) (*Matcher, error) {
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
	if len(logits) < m.v.N {
		return fmt.Errorf("grammar: %d logits for a vocabulary of %d tokens", len(logits), m.v.N)
	}
	done := m.Done()
	eog := map[int32]bool{}
	for _, id := range m.v.EOG {
		eog[id] = true
	}
	ninf := float32(math.Inf(-1))
	m.cache = map[string][]stack{}
	ok := 0
	for id := int32(0); int(id) < len(logits); id++ {
		allowed := false
		switch {
		case int(id) >= m.v.N:
		case eog[id]:
			allowed = done
		case !m.v.Text(id):
		default:
			p := m.v.Piece(id)
			if len(p) > 0 && !m.Finished() {
				st, err := m.after(p)
				if err != nil {
					return err
				}
				if st != nil {
					allowed = true
					m.cache[string(p)] = st
				}
			}
		}
		if allowed {
			ok++
		} else {
			logits[id] = ninf
		}
	}
	if ok == 0 {
		return errors.New("grammar: no token of the vocabulary can continue the text")
	}
	return nil
}

// Accept advances over the chosen token.
func (m *Matcher) Accept(id int32) error {
	for _, e := range m.v.EOG {
		if e == id {
			if !m.Done() {
				return errors.New("grammar: end of generation before the grammar is complete")
			}
			m.stacks = []stack{{}}
			return nil
		}
	}
	if int(id) < 0 || int(id) >= m.v.N {
		return fmt.Errorf("grammar: token %d out of the vocabulary", id)
	}
	p := m.v.Piece(id)
	st, ok := m.cache[string(p)]
	if !ok {
		var err error
		if st, err = m.after(p); err != nil {
			return err
		}
	}
	if st == nil {
		return fmt.Errorf("grammar: token %d (%q) cannot come next", id, p)
	}
	m.stacks = st
	return nil
}

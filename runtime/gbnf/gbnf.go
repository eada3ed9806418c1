// Package gbnf constrains generation to a GBNF grammar (llama.cpp's
// grammar format): rules `name ::= ...` with "literals", [character
// classes] (negated with ^, ranges a-z, escapes), `.` (any character),
// rule references, ( groups ), alternatives |, and the repetitions *, +, ?,
// {m}, {m,} and {m,n}; # starts a comment. The rule "root" is the start.
//
// The matcher works on Unicode code points over a set of parse stacks. A
// token whose text ends inside a UTF-8 character is not allowed (its
// character is not known yet), so characters outside ASCII need tokens
// that hold them whole.
package gbnf

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

type kind uint8

const (
	kEnd  kind = iota // end of an alternative
	kChar             // one character of ranges (negated: not of them)
	kRef              // a rule
)

type elem struct {
	kind   kind
	ranges []rune // pairs lo, hi (inclusive)
	neg    bool
	rule   int
}

func (e *elem) matches(c rune) bool {
	in := false
	for i := 0; i+1 < len(e.ranges); i += 2 {
		if c >= e.ranges[i] && c <= e.ranges[i+1] {
			in = true
			break
		}
	}
	return in != e.neg
}

// Grammar is a compiled GBNF grammar.
type Grammar struct {
	elems []elem
	rules [][]int // per rule: the start position of each alternative
	names []string
	root  int
}

// Limits on what a grammar may ask for.
const (
	maxRepeat   = 1000 // {m,n} bounds
	maxElems    = 1 << 20
	maxStacks   = 4096 // live parse stacks
	maxExpand   = 1 << 16
	maxSrcBytes = 1 << 20
	maxNesting  = 256 // ( groups ) inside one another
)

// parser state.
type parser struct {
	src   string
	pos   int
	g     *Grammar
	ids   map[string]int
	seqs  [][][]elem // per rule: alternatives as element lists (before flattening)
	used  map[string]int
	fresh int
	total int // elements made by repetitions so far
	depth int // ( groups ) open around the position
}

// Parse compiles GBNF source. Errors name the line and what is wrong.
func Parse(src string) (*Grammar, error) {
	if len(src) > maxSrcBytes {
		return nil, fmt.Errorf("grammar: %d bytes, more than %d", len(src), maxSrcBytes)
	}
	p := &parser{src: src, g: &Grammar{}, ids: map[string]int{}, used: map[string]int{}}
	defined := map[int]bool{}
	for {
		p.space()
		if p.pos >= len(p.src) {
			break
		}
		name := p.name()
		if name == "" {
			return nil, p.errf("expected a rule name")
		}
		p.space()
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, p.errf("expected ::= after %q", name)
		}
		p.pos += 3
		id := p.rule(name)
		if defined[id] {
			return nil, p.errf("rule %q defined twice", name)
		}
		defined[id] = true
		alts, err := p.alternates(false)
		if err != nil {
			return nil, err
		}
		p.seqs[id] = alts
	}
	for name, id := range p.ids {
		if !defined[id] && !strings.Contains(name, "#") {
			return nil, fmt.Errorf("grammar: rule %q is used but not defined", name)
		}
	}
	root, ok := p.ids["root"]
	if !ok || !defined[root] {
		return nil, fmt.Errorf("grammar: no root rule")
	}
	g := p.g
	g.root = root
	g.names = make([]string, len(p.seqs))
	for n, id := range p.ids {
		g.names[id] = n
	}
	g.rules = make([][]int, len(p.seqs))
	for id, alts := range p.seqs {
		for _, seq := range alts {
			g.rules[id] = append(g.rules[id], len(g.elems))
			g.elems = append(g.elems, seq...)
			g.elems = append(g.elems, elem{kind: kEnd})
			if len(g.elems) > maxElems {
				return nil, fmt.Errorf("grammar: more than %d elements", maxElems)
			}
		}
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

func (p *parser) errf(format string, a ...any) error {
	line := 1 + strings.Count(p.src[:min(p.pos, len(p.src))], "\n")
	return fmt.Errorf("grammar: line %d: %s", line, fmt.Sprintf(format, a...))
}

func (p *parser) rule(name string) int {
	if id, ok := p.ids[name]; ok {
		return id
	}
	id := len(p.seqs)
	p.ids[name] = id
	p.seqs = append(p.seqs, nil)
	return id
}

// newRule makes an anonymous rule with alternatives alts.
func (p *parser) newRule(alts [][]elem) int {
	p.fresh++
	id := p.rule(fmt.Sprintf("#%d", p.fresh))
	p.seqs[id] = alts
	return id
}

// space skips blanks, newlines and comments.
func (p *parser) space() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// atRuleStart says whether a new rule (name ::=) begins at the position.
func (p *parser) atRuleStart() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if p.name() == "" {
		return false
	}
	p.space()
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

// alternates parses seq ( | seq )*, up to ")" when nested, else to the next
// rule or the end.
func (p *parser) alternates(nested bool) ([][]elem, error) {
	var alts [][]elem
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.space()
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return alts, nil
	}
}

func (p *parser) sequence(nested bool) ([]elem, error) {
	var seq []elem
	for {
		p.space()
		if p.pos >= len(p.src) {
			if nested {
				return nil, p.errf("missing )")
			}
			return seq, nil
		}
		c := p.src[p.pos]
		if c == '|' || (c == ')' && nested) {
			return seq, nil
		}
		if !nested && p.atRuleStart() {
			return seq, nil
		}
		start := len(seq)
		switch {
		case c == '"':
			p.pos++
			rs, err := p.chars('"', "string", false)
			if err != nil {
				return nil, err
			}
			for i := 0; i < len(rs); i += 2 {
				seq = append(seq, elem{kind: kChar, ranges: []rune{rs[i], rs[i+1]}})
			}
			if len(seq) == start { // "": matches the empty string
				id := p.newRule([][]elem{nil})
				seq = append(seq, elem{kind: kRef, rule: id})
			}
		case c == '[':
			p.pos++
			e := elem{kind: kChar}
			if p.pos < len(p.src) && p.src[p.pos] == '^' {
				e.neg = true
				p.pos++
			}
			var err error
			if e.ranges, err = p.chars(']', "character class", true); err != nil {
				return nil, err
			}
			seq = append(seq, e)
		case c == '.':
			p.pos++
			seq = append(seq, elem{kind: kChar, ranges: []rune{0, utf8.MaxRune}})
		case c == '(':
			if p.depth >= maxNesting {
				return nil, p.errf("groups nested more than %d deep", maxNesting)
			}
			p.pos++
			p.depth++
			alts, err := p.alternates(true)
			p.depth--
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errf("missing )")
			}
			p.pos++
			seq = append(seq, elem{kind: kRef, rule: p.newRule(alts)})
		case isNameByte(c):
			n := p.name()
			seq = append(seq, elem{kind: kRef, rule: p.rule(n)})
		default:
			return nil, p.errf("unexpected %q", c)
		}
		// Postfix repetition applies to the last item (a literal's last
		// character would be wrong: a multi-character literal repeats as a
		// whole, so it is wrapped in a rule first).
		if p.pos < len(p.src) && strings.IndexByte("*+?{", p.src[p.pos]) >= 0 {
			item := append([]elem(nil), seq[start:]...)
			seq = seq[:start]
			rep, err := p.repeat(item)
			if err != nil {
				return nil, err
			}
			seq = append(seq, rep...)
		}
	}
}

// repeat parses a postfix operator and returns the elements repeating item.
func (p *parser) repeat(item []elem) ([]elem, error) {
	lo, hi := 0, -1 // hi -1: unbounded
	switch p.src[p.pos] {
	case '*':
		p.pos++
	case '+':
		p.pos++
		lo = 1
	case '?':
		p.pos++
		hi = 1
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, p.errf("missing }")
		}
		body := strings.ReplaceAll(p.src[p.pos+1:p.pos+end], " ", "")
		p.pos += end + 1
		a, b, comma := strings.Cut(body, ",")
		var err error
		if lo, err = strconv.Atoi(a); err != nil || lo < 0 {
			return nil, p.errf("bad repetition {%s}", body)
		}
		switch {
		case !comma:
			hi = lo
		case b == "":
			hi = -1
		default:
			if hi, err = strconv.Atoi(b); err != nil || hi < lo {
				return nil, p.errf("bad repetition {%s}", body)
			}
		}
		if lo > maxRepeat || hi > maxRepeat {
			return nil, p.errf("repetition {%s} above %d", body, maxRepeat)
		}
	}
	if n := max(lo, hi) * len(item); n > maxElems || p.total+n > maxElems {
		return nil, p.errf("repetition makes more than %d elements", maxElems)
	}
	p.total += max(lo, hi) * len(item)
	var out []elem
	for range lo {
		out = append(out, item...)
	}
	if hi < 0 { // then any number more: R ::= item R | ""
		id := p.newRule(nil)
		p.seqs[id] = [][]elem{append(append([]elem(nil), item...), elem{kind: kRef, rule: id}), nil}
		return append(out, elem{kind: kRef, rule: id}), nil
	}
	// up to hi-lo more, nested: R1 ::= item R2 | "", ...
	next := -1
	for range hi - lo {
		alt := append([]elem(nil), item...)
		if next >= 0 {
			alt = append(alt, elem{kind: kRef, rule: next})
		}
		next = p.newRule([][]elem{alt, nil})
	}
	if next >= 0 {
		out = append(out, elem{kind: kRef, rule: next})
	}
	return out, nil
}

// chars reads the characters of a literal or class up to its closing
// byte end (what it is, for the error when the source ends first) as lo,
// hi pairs: with ranges (a class) a-b is one pair, else every character
// is a pair of its own.
func (p *parser) chars(end byte, what string, ranges bool) ([]rune, error) {
	var out []rune
	for {
		if p.pos >= len(p.src) {
			return nil, p.errf("unterminated %s", what)
		}
		if p.src[p.pos] == end {
			p.pos++
			return out, nil
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if ranges && p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errf("character range %q-%q is backwards", lo, hi)
			}
		}
		out = append(out, lo, hi)
	}
}

// char reads one character of a literal or class, with escapes.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errf("invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errf("dangling \\")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/':
		return rune(c), nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+n > len(p.src) {
			return 0, p.errf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errf("bad \\%c escape", c)
		}
		p.pos += n
		return rune(v), nil
	}
	return 0, p.errf("unknown escape \\%c", c)
}

// checkLeftRecursion refuses rules that can reach themselves without
// consuming a character (the matcher would expand them forever).
func (g *Grammar) checkLeftRecursion() error {
	nullable := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.rules {
			if nullable[r] {
				continue
			}
			for _, a := range alts {
				ok := true
				for i := a; g.elems[i].kind != kEnd; i++ {
					if e := g.elems[i]; e.kind == kChar || !nullable[e.rule] {
						ok = false
						break
					}
				}
				if ok {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
	// first[r]: the rules r may start with (through nullable prefixes).
	state := make([]uint8, len(g.rules)) // 0 new, 1 on the path, 2 done
	var visit func(r int) error
	visit = func(r int) error {
		if state[r] == 1 {
			return fmt.Errorf("grammar: rule %q is left-recursive", g.nameOf(r))
		}
		if state[r] == 2 {
			return nil
		}
		state[r] = 1
		for _, a := range g.rules[r] {
			for i := a; g.elems[i].kind == kRef; i++ {
				if err := visit(g.elems[i].rule); err != nil {
					return err
				}
				if !nullable[g.elems[i].rule] {
					break
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.rules {
		if err := visit(r); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grammar) nameOf(r int) string {
	if n := g.names[r]; n != "" && !strings.HasPrefix(n, "#") {
		return n
	}
	return "(a group or repetition)"
}

package grammar

// Regular string languages: JSON Schema's pattern (the ECMAScript regex
// subset llama.cpp's json-schema-to-grammar accepts, plus lookaheads at the
// top level of the pattern), the formats date, time, date-time, uuid and
// email, and propertyNames. A pattern is parsed into a small tree, built
// into a byte-level NFA over the body of a JSON string (every character in
// one canonical encoding: `"` as \", `\` as \\, control characters as
// escapes, the rest as raw UTF-8), then made a DFA with no state that
// cannot reach acceptance (so generation never corners itself).

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Size limits, checked while building (a schema cannot make the server
// build an unbounded automaton).
const (
	maxNFAStates = 50000
	maxDFAStates = 50000
	maxRepeat    = 1000 // largest count in {n,m}
	// maxSubsetWork bounds the NFA states in all the sets of one subset
	// construction (about a second of CPU at most).
	maxSubsetWork = 4000000
)

// rx is a parsed regular expression.
type rx struct {
	op   uint8
	set  []rrange // rxSet: code point ranges (sorted, disjoint)
	subs []*rx    // rxCat, rxAlt: parts; rxRep, rxLook: subs[0]
	min  int      // rxRep
	max  int      // rxRep: -1 unbounded
	neg  bool     // rxLook: negative
}

const (
	rxSet  = iota // one character of set
	rxCat         // subs one after another (none: the empty string)
	rxAlt         // one of subs
	rxRep         // subs[0] min..max times
	rxLook        // lookahead (?=...) or (?!...)
	rxEnd         // $ at the end of a lookahead's alternative
)

type rrange struct{ lo, hi rune }

// PatternError is a pattern the compiler cannot honour.
type PatternError struct{ Msg string }

func (e *PatternError) Error() string { return e.Msg }

type rxParser struct {
	s   []rune
	i   int
	err error
	// lookSeq: the sequence about to be parsed is an alternative of a
	// lookahead, where a final $ is allowed
	lookSeq bool
}

func (p *rxParser) fail(format string, a ...any) {
	if p.err == nil {
		p.err = &PatternError{fmt.Sprintf(format, a...)}
	}
}

func (p *rxParser) peek() rune {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return -1
}

// parsePattern parses an ECMAScript pattern with JSON Schema's search
// semantics: without a leading ^ (trailing $) any text may come before
// (after) the match. Lookaheads are allowed only in the top-level sequence
// of an alternative, where they constrain the rest of the whole string.
func parsePattern(pat string) (*rx, error) {
	p := &rxParser{s: []rune(pat)}
	var alts []*rx
	for {
		seq := p.topSeq()
		alts = append(alts, seq)
		if p.err != nil {
			return nil, p.err
		}
		if p.peek() == '|' {
			p.i++
			continue
		}
		if p.peek() == ')' {
			return nil, &PatternError{"unbalanced parenthesis ')'"}
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &rx{op: rxAlt, subs: alts}, nil
}

func anyStar() *rx {
	return &rx{op: rxRep, subs: []*rx{{op: rxSet, set: []rrange{{0, utf8.MaxRune}}}}, max: -1}
}

// topSeq parses one top-level alternative, with its anchors.
func (p *rxParser) topSeq() *rx {
	anchored := false
	if p.peek() == '^' {
		p.i++
		anchored = true
	}
	var items []*rx
	if !anchored {
		items = append(items, anyStar())
	}
	seq := p.seq(true)
	items = append(items, seq.subs...)
	if p.peek() == '$' {
		p.i++
		if c := p.peek(); c != -1 && c != '|' {
			p.fail("anchor $ in the middle of a pattern is not supported")
		}
	} else {
		items = append(items, anyStar())
	}
	return &rx{op: rxCat, subs: items}
}

// seq parses a sequence up to '|', ')' , '$' or the end.
func (p *rxParser) seq(top bool) *rx {
	inLook := p.lookSeq
	p.lookSeq = false
	cat := &rx{op: rxCat}
	for p.err == nil {
		c := p.peek()
		if c == -1 || c == '|' || c == ')' {
			break
		}
		if c == '$' {
			if top {
				break
			}
			if inLook && p.i+1 < len(p.s) && (p.s[p.i+1] == ')' || p.s[p.i+1] == '|') {
				p.i++
				cat.subs = append(cat.subs, &rx{op: rxEnd})
				break
			}
			p.fail("anchor $ inside a group is not supported")
			break
		}
		if c == '^' {
			p.fail("anchor ^ in the middle of a pattern is not supported")
			break
		}
		atom := p.atom(top)
		if atom == nil {
			break
		}
		atom = p.quantifier(atom)
		cat.subs = append(cat.subs, atom)
	}
	return cat
}

func (p *rxParser) atom(top bool) *rx {
	c := p.s[p.i]
	p.i++
	switch c {
	case '.':
		return &rx{op: rxSet, set: complement([]rrange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})}
	case '(':
		look, neg := false, false
		if p.peek() == '?' {
			p.i++
			switch {
			case p.peek() == ':':
				p.i++
			case p.peek() == '=' || p.peek() == '!':
				look, neg = true, p.peek() == '!'
				p.i++
				if !top {
					p.fail("lookahead (?%c...) inside a group or repetition is not supported", p.s[p.i-1])
					return nil
				}
			case p.peek() == '<' && p.i+1 < len(p.s) && (p.s[p.i+1] == '=' || p.s[p.i+1] == '!'):
				p.fail("lookbehind (?<%c...) is not supported", p.s[p.i+1])
				return nil
			case p.peek() == '<': // named group
				end := strings.IndexRune(string(p.s[p.i:]), '>')
				if end < 0 {
					p.fail("unterminated group name")
					return nil
				}
				p.i += len([]rune(string(p.s[p.i:])[:end])) + 1
			default:
				p.fail("group syntax (?%c is not supported", p.peek())
				return nil
			}
		}
		var alts []*rx
		for {
			p.lookSeq = look
			alts = append(alts, p.seq(false))
			if p.err != nil {
				return nil
			}
			if p.peek() == '|' {
				p.i++
				continue
			}
			break
		}
		if p.peek() != ')' {
			p.fail("unbalanced parenthesis '('")
			return nil
		}
		p.i++
		var sub *rx = &rx{op: rxAlt, subs: alts}
		if len(alts) == 1 {
			sub = alts[0]
		}
		if look {
			return &rx{op: rxLook, subs: []*rx{sub}, neg: neg}
		}
		return sub
	case '[':
		return p.class()
	case '\\':
		set, ok := p.escape(false)
		if !ok {
			return nil
		}
		return &rx{op: rxSet, set: set}
	case '*', '+', '?', '{':
		if c == '{' && !p.isQuantifierBrace(p.i-1) {
			return &rx{op: rxSet, set: []rrange{{c, c}}}
		}
		p.fail("quantifier %q with nothing to repeat", c)
		return nil
	case ']', '}':
		return &rx{op: rxSet, set: []rrange{{c, c}}}
	}
	return &rx{op: rxSet, set: []rrange{{c, c}}}
}

// isQuantifierBrace: s[i] is '{' starting {n}, {n,} or {n,m}.
func (p *rxParser) isQuantifierBrace(i int) bool {
	j := i + 1
	digits := 0
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j, digits = j+1, digits+1
	}
	if digits == 0 {
		return false
	}
	if j < len(p.s) && p.s[j] == ',' {
		j++
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
	}
	return j < len(p.s) && p.s[j] == '}'
}

func (p *rxParser) quantifier(a *rx) *rx {
	for p.err == nil {
		lo, hi := 0, 0
		switch c := p.peek(); {
		case c == '*':
			lo, hi = 0, -1
			p.i++
		case c == '+':
			lo, hi = 1, -1
			p.i++
		case c == '?':
			lo, hi = 0, 1
			p.i++
		case c == '{' && p.isQuantifierBrace(p.i):
			end := p.i + 1
			for p.s[end] != '}' {
				end++
			}
			body := string(p.s[p.i+1 : end])
			p.i = end + 1
			a1, b1, comma := strings.Cut(body, ",")
			var err error
			if lo, err = strconv.Atoi(a1); err != nil || lo > maxRepeat {
				p.fail("repetition count {%s} over %d is not supported", body, maxRepeat)
				return a
			}
			hi = lo
			if comma {
				hi = -1
				if b1 != "" {
					if hi, err = strconv.Atoi(b1); err != nil || hi > maxRepeat {
						p.fail("repetition count {%s} over %d is not supported", body, maxRepeat)
						return a
					}
					if hi < lo {
						p.fail("repetition {%s}: numbers out of order", body)
						return a
					}
				}
			}
		default:
			return a
		}
		if a.op == rxLook {
			p.fail("a quantifier on a lookahead is not supported")
			return a
		}
		if p.peek() == '?' { // lazy: the same language
			p.i++
		}
		a = &rx{op: rxRep, subs: []*rx{a}, min: lo, max: hi}
	}
	return a
}

var (
	digitSet = []rrange{{'0', '9'}}
	wordSet  = []rrange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceSet = []rrange{{'\t', '\r'}, {' ', ' '}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a},
		{0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff}}
)

// escape reads what follows a backslash (p.i is past it).
func (p *rxParser) escape(inClass bool) ([]rrange, bool) {
	if p.i >= len(p.s) {
		p.fail("pattern ends with a lone backslash")
		return nil, false
	}
	c := p.s[p.i]
	p.i++
	one := func(r rune) ([]rrange, bool) { return []rrange{{r, r}}, true }
	switch c {
	case 'd':
		return digitSet, true
	case 'D':
		return complement(digitSet), true
	case 'w':
		return wordSet, true
	case 'W':
		return complement(wordSet), true
	case 's':
		return spaceSet, true
	case 'S':
		return complement(spaceSet), true
	case 'n':
		return one('\n')
	case 'r':
		return one('\r')
	case 't':
		return one('\t')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case '0':
		return one(0)
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
			if p.peek() == '{' {
				end := slices.Index(p.s[p.i:], '}') // in runes, as p.s is
				if end > 0 {
					v, err := strconv.ParseUint(string(p.s[p.i+1:p.i+end]), 16, 32)
					if err == nil && v <= utf8.MaxRune {
						p.i += end + 1
						return one(rune(v))
					}
				}
				p.fail("bad escape \\u{...}")
				return nil, false
			}
		}
		if p.i+n > len(p.s) {
			p.fail("bad escape \\%c", c)
			return nil, false
		}
		v, err := strconv.ParseUint(string(p.s[p.i:p.i+n]), 16, 32)
		if err != nil {
			p.fail("bad escape \\%c%s", c, string(p.s[p.i:p.i+n]))
			return nil, false
		}
		p.i += n
		// A surrogate pair written as two escapes is one character.
		if c == 'u' && v >= 0xd800 && v <= 0xdbff && p.i+6 <= len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
			lo, err := strconv.ParseUint(string(p.s[p.i+2:p.i+6]), 16, 32)
			if err == nil && lo >= 0xdc00 && lo <= 0xdfff {
				p.i += 6
				return one(rune(0x10000 + (v-0xd800)<<10 + (lo - 0xdc00)))
			}
		}
		return one(rune(v))
	case 'b':
		if inClass {
			return one('\b')
		}
		p.fail("word boundary \\b is not supported")
		return nil, false
	case 'B':
		p.fail("word boundary \\B is not supported")
		return nil, false
	case 'p', 'P':
		p.fail("Unicode property escape \\%c is not supported", c)
		return nil, false
	case 'c':
		p.fail("control escape \\c is not supported")
		return nil, false
	case 'k':
		p.fail("named backreference \\k is not supported")
		return nil, false
	}
	if c >= '1' && c <= '9' {
		p.fail("backreference \\%c is not supported", c)
		return nil, false
	}
	if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
		p.fail("escape \\%c is not supported", c)
		return nil, false
	}
	return one(c) // an escaped punctuation character stands for itself
}

// class reads a bracket expression (p.i is past '[').
func (p *rxParser) class() *rx {
	neg := false
	if p.peek() == '^' {
		neg = true
		p.i++
	}
	var set []rrange
	for p.err == nil {
		c := p.peek()
		if c == -1 {
			p.fail("unbalanced bracket '['")
			return nil
		}
		p.i++
		if c == ']' {
			break
		}
		var lo []rrange
		if c == '\\' {
			var ok bool
			if lo, ok = p.escape(true); !ok {
				return nil
			}
		} else {
			lo = []rrange{{c, c}}
		}
		// A range a-b (a '-' before ']' or after a class escape is literal).
		if len(lo) == 1 && lo[0].lo == lo[0].hi && p.peek() == '-' && p.i+1 < len(p.s) && p.s[p.i+1] != ']' {
			p.i++
			h := p.s[p.i]
			p.i++
			hi := []rrange{{h, h}}
			if h == '\\' {
				var ok bool
				if hi, ok = p.escape(true); !ok {
					return nil
				}
			}
			if len(hi) != 1 || hi[0].lo != hi[0].hi || hi[0].lo < lo[0].lo {
				p.fail("bad character range in [...]")
				return nil
			}
			lo = []rrange{{lo[0].lo, hi[0].lo}}
		}
		set = append(set, lo...)
	}
	set = normalize(set)
	if neg {
		set = complement(set)
	}
	return &rx{op: rxSet, set: set}
}

// normalize sorts and merges ranges.
func normalize(set []rrange) []rrange {
	s := append([]rrange(nil), set...)
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	var out []rrange
	for _, r := range s {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complement is every code point not in set.
func complement(set []rrange) []rrange {
	set = normalize(set)
	var out []rrange
	next := rune(0)
	for _, r := range set {
		if r.lo > next {
			out = append(out, rrange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rrange{next, utf8.MaxRune})
	}
	return out
}

package grammar

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// The matcher is a pushdown automaton over bytes. A state is a stack of
// frames (one per open value: the root, objects, arrays, a string, a
// number, a literal); stacks are immutable linked lists, so a trie walk
// over the vocabulary keeps every prefix's state for free. Where the schema
// has alternatives (anyOf, enum, a key that may be declared or extra) the
// matcher follows several stacks at once.
//
// Every state the matcher reaches can still be completed to a valid
// document (no dead ends), so masking one token at a time never corners the
// generation.

type frame struct {
	nd  *node
	st  uint8 // substate; strings: the lexer state (l...)
	ws  uint8 // whitespace run: 0 none, 1 one space (no more), 2+k a newline and k indents
	n   int32 // object: next property index; array: items; string: characters; number: digits; literal: bytes
	aux int32 // object: the property whose value comes next (-1: an extra key)
	cnt int32 // object with minProperties/maxProperties: members so far
	key string
}

type stack struct {
	f  frame
	up *stack
}

// Object substates.
const (
	oOpen    = iota // after '{'
	oComma          // after ','
	oKeyDecl        // inside a declared key (key: its bytes so far)
	oColon          // after the key
	oValue          // after ':'
	oAfter          // after a value
)

// Array substates.
const (
	aOpen = iota
	aComma
	aAfter
)

// Number substates.
const (
	nSign  = iota // after '-'
	nZero         // "0" (accepting)
	nInt          // integer digits (accepting)
	nDot          // after '.'
	nFrac         // fraction digits (accepting)
	nE            // after 'e'
	nESign        // after 'e+' or 'e-'
	nExp          // exponent digits (accepting)
)

func with(s *stack, f frame) *stack { return &stack{f: f, up: s.up} }

func push(below *stack, f frame) *stack { return &stack{f: f, up: below} }

// wsStep takes a whitespace byte into f's run; false if not allowed here:
// one space, or a newline and up to maxIndent spaces or tabs (as llama.cpp's
// JSON grammars), so whitespace can never go on for ever.
func wsStep(f *frame, b byte) bool {
	switch {
	case f.ws == 0 && b == ' ':
		f.ws = 1
	case f.ws == 0 && b == '\n':
		f.ws = 2
	case f.ws >= 2 && f.ws < 2+maxIndent && (b == ' ' || b == '\t'):
		f.ws++
	default:
		return false
	}
	return true
}

func isWS(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// advance appends to out the stacks that follow s after byte b.
func advance(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	nd := f.nd
	switch nd.kind {
	case kRoot:
		if f.st != 0 {
			return out
		}
		f.st = 1
		return startValue(nd.child, &stack{f: f}, b, out, 0)
	case kObject:
		return advanceObject(s, b, out)
	case kArray:
		if isWS(b) {
			if wsStep(&f, b) {
				out = append(out, with(s, f))
			}
			return out
		}
		f.ws = 0
		switch {
		case f.st == aOpen && b == ']':
			if nd.minItems == 0 {
				out = append(out, s.up)
			}
			return out
		case f.st == aAfter && b == ']':
			if int(f.n) >= nd.minItems {
				out = append(out, s.up)
			}
			return out
		case f.st == aAfter && b == ',':
			if nd.maxItems < 0 || int(f.n) < nd.maxItems {
				f.st = aComma
				out = append(out, with(s, f))
			}
			return out
		case f.st == aAfter || (f.st == aOpen && nd.maxItems == 0):
			return out
		}
		f.st = aAfter
		f.n++
		if nd.minItems == 0 && nd.maxItems < 0 {
			f.n = 1 // only "some item" matters
		}
		return startValue(nd.items, with(s, f), b, out, 0)
	case kString:
		ns, ev := lexStep(f.st, b)
		switch ev {
		case evReject:
			return out
		case evClose:
			if int(f.n) < nd.minLen || (nd.exclude != nil && excluded(nd, f.key)) {
				return out
			}
			return append(out, s.up)
		case evChar:
			if nd.maxLen >= 0 && int(f.n) >= nd.maxLen {
				return out
			}
			if nd.maxLen >= 0 || int(f.n) < nd.minLen {
				f.n++
			}
		}
		f.st = ns
		if nd.exclude != nil {
			f.key += string([]byte{b})
		}
		return append(out, with(s, f))
	case kNumber:
		if numStep(&f, b) {
			if nd.bounds != nil {
				f.key += string([]byte{b})
				if !nd.bounds.feasible(f.key, f.st) {
					return out
				}
			}
			return append(out, with(s, f))
		}
		if numAccepting(f.st) && (nd.bounds == nil || nd.bounds.inRange(f.key)) {
			return advance(s.up, b, out) // the number ended: b belongs to the parent
		}
		return out
	case kPattern:
		// A '"' in the body is always escaped (the automaton takes it
		// after a backslash only), so a '"' it does not take closes.
		if t := nd.dfa.step(f.n, b); t >= 0 {
			f.n = t
			return append(out, with(s, f))
		}
		if b == '"' && nd.dfa.acc[f.n] {
			out = append(out, s.up)
		}
		return out
	case kLiteral:
		if b != nd.lit[f.n] {
			return out
		}
		f.n++
		if int(f.n) == len(nd.lit) {
			return append(out, s.up)
		}
		return append(out, with(s, f))
	}
	return out
}

func excluded(nd *node, raw string) bool {
	var k string
	if json.Unmarshal([]byte(`"`+raw+`"`), &k) != nil {
		return true
	}
	return nd.exclude[k]
}

// extraAllowed: an extra key may come once no required property is left.
func extraAllowed(nd *node, n int32) bool {
	return nd.extra != nil && nd.nextReq[n] == len(nd.props)
}

// countProps: the object counts its members (minProperties or
// maxProperties is set).
func (nd *node) countProps() bool { return nd.minProps > 0 || nd.maxProps >= 0 }

// declOK: declared property j may come next, cnt members written: the
// required ones after it still fit under maxProperties, and minProperties
// can still be reached.
func declOK(nd *node, cnt int32, j int) bool {
	if !nd.countProps() {
		return true
	}
	c := int(cnt) + 1
	if nd.maxProps >= 0 && c+nd.reqAfter[j+1] > nd.maxProps {
		return false
	}
	return nd.extra != nil || c+len(nd.props)-(j+1) >= nd.minProps
}

// declAny: some declared property may come next.
func declAny(nd *node, f frame) bool {
	last := min(nd.nextReq[f.n], len(nd.props)-1)
	for j := int(f.n); j <= last; j++ {
		if declOK(nd, f.cnt, j) {
			return true
		}
	}
	return false
}

// extraOK: an extra key may come next.
func extraOK(nd *node, f frame) bool {
	return extraAllowed(nd, f.n) && (nd.maxProps < 0 || int(f.cnt) < nd.maxProps)
}

func advanceObject(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	nd := f.nd
	if f.st != oKeyDecl && isWS(b) {
		if wsStep(&f, b) {
			out = append(out, with(s, f))
		}
		return out
	}
	f.ws = 0
	switch f.st {
	case oOpen, oComma, oAfter:
		switch {
		case b == '}' && f.st != oComma:
			if nd.nextReq[f.n] == len(nd.props) && int(f.cnt) >= nd.minProps {
				out = append(out, s.up)
			}
		case b == ',' && f.st == oAfter:
			if declAny(nd, f) || extraOK(nd, f) {
				f.st = oComma
				out = append(out, with(s, f))
			}
		case b == '"' && f.st != oAfter:
			if declAny(nd, f) {
				g := f
				g.st, g.key = oKeyDecl, ""
				out = append(out, with(s, g))
			}
			if extraOK(nd, f) {
				g := f
				g.st, g.aux = oColon, -1
				if nd.countProps() {
					g.cnt++
				}
				out = append(out, push(with(s, g), stringFrame(nd.keyNode)))
			}
		}
		return out
	case oKeyDecl:
		last := min(nd.nextReq[f.n], len(nd.props)-1)
		if b == '"' {
			for j := int(f.n); j <= last; j++ {
				if string(nd.props[j].enc) == f.key && declOK(nd, f.cnt, j) {
					f.st, f.aux, f.key = oColon, int32(j), ""
					if nd.countProps() {
						f.cnt++
					}
					return append(out, with(s, f))
				}
			}
		}
		k := f.key + string([]byte{b})
		for j := int(f.n); j <= last; j++ {
			if bytes.HasPrefix(nd.props[j].enc, []byte(k)) && declOK(nd, f.cnt, j) {
				f.key = k
				return append(out, with(s, f))
			}
		}
		return out
	case oColon:
		if b == ':' {
			f.st = oValue
			out = append(out, with(s, f))
		}
		return out
	case oValue:
		child := nd.extra
		if f.aux >= 0 {
			child = nd.props[f.aux].node
			f.n = f.aux + 1
		}
		f.st, f.aux = oAfter, 0
		return startValue(child, with(s, f), b, out, 0)
	}
	return out
}

// startValue appends the stacks after b, the first byte of a value of nd
// written on top of below.
func startValue(nd *node, below *stack, b byte, out []*stack, depth int) []*stack {
	switch nd.kind {
	case kAnyOf:
		if depth > 64 {
			return out // unreachable: flattenAnyOf leaves no anyOf among alts
		}
		for _, a := range nd.alts {
			out = startValue(a, below, b, out, depth+1)
		}
	case kObject:
		if b == '{' {
			out = append(out, push(below, frame{nd: nd, st: oOpen}))
		}
	case kArray:
		if b == '[' {
			out = append(out, push(below, frame{nd: nd, st: aOpen}))
		}
	case kString, kPattern:
		if b == '"' {
			out = append(out, push(below, stringFrame(nd)))
		}
	case kNumber:
		var f frame
		switch {
		case b == '-':
			f = frame{nd: nd, st: nSign}
		case b == '0':
			f = frame{nd: nd, st: nZero}
		case b >= '1' && b <= '9':
			f = frame{nd: nd, st: nInt, n: 1}
		default:
			return out
		}
		if nd.bounds != nil {
			f.key = string([]byte{b})
			if !nd.bounds.feasible(f.key, f.st) {
				return out
			}
		}
		out = append(out, push(below, f))
	case kLiteral:
		if b == nd.lit[0] {
			if len(nd.lit) == 1 {
				out = append(out, below)
			} else {
				out = append(out, push(below, frame{nd: nd, n: 1}))
			}
		}
	}
	return out
}

// stringFrame is the frame of a string value or key after its opening
// quote.
func stringFrame(nd *node) frame {
	if nd.kind == kPattern {
		return frame{nd: nd, n: nd.dfa.start}
	}
	return frame{nd: nd, st: lNormal}
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func numAccepting(st uint8) bool { return st == nZero || st == nInt || st == nFrac || st == nExp }

// numStep moves a number frame by b; false if b cannot continue the number.
func numStep(f *frame, b byte) bool {
	integer := f.nd.integer
	switch f.st {
	case nSign:
		switch {
		case b == '0':
			f.st = nZero
		case b >= '1' && b <= '9':
			f.st, f.n = nInt, 1
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case f.st == nInt && isDigit(b) && f.n < maxIntDigits:
			f.n++
		case b == '.' && !integer:
			f.st, f.n = nDot, 0
		case (b == 'e' || b == 'E') && !integer && f.nd.bounds == nil:
			f.st, f.n = nE, 0
		default:
			return false
		}
	case nDot, nESign: // a digit must follow: the fraction's or the exponent's first
		if !isDigit(b) {
			return false
		}
		if f.st == nDot {
			f.st, f.n = nFrac, 1
		} else {
			f.st, f.n = nExp, 1
		}
	case nFrac:
		switch {
		case isDigit(b) && f.n < maxFracDigits:
			f.n++
		case (b == 'e' || b == 'E') && f.nd.bounds == nil:
			f.st, f.n = nE, 0
		default:
			return false
		}
	case nE:
		switch {
		case b == '+' || b == '-':
			f.st = nESign
		case isDigit(b):
			f.st, f.n = nExp, 1
		default:
			return false
		}
	case nExp:
		if !isDigit(b) || f.n >= maxExpDigits {
			return false
		}
		f.n++
	default:
		return false
	}
	return true
}

// complete: the document may end here.
func complete(s *stack) bool {
	switch s.f.nd.kind {
	case kRoot:
		return s.f.st == 1
	case kNumber:
		return numAccepting(s.f.st) && (s.f.nd.bounds == nil || s.f.nd.bounds.inRange(s.f.key)) && complete(s.up)
	}
	return false
}

// appendKey writes a stack's identity (two stacks with the same key accept
// the same bytes).
func appendKey(b []byte, s *stack) []byte {
	for ; s != nil; s = s.up {
		f := s.f
		b = binary.LittleEndian.AppendUint32(b, uint32(f.nd.id))
		b = append(b, f.st, f.ws)
		b = binary.LittleEndian.AppendUint32(b, uint32(f.n))
		b = binary.LittleEndian.AppendUint32(b, uint32(f.aux))
		b = binary.LittleEndian.AppendUint32(b, uint32(f.cnt))
		b = binary.AppendUvarint(b, uint64(len(f.key)))
		b = append(b, f.key...)
	}
	return b
}

// Matcher follows one document byte by byte.
type Matcher struct {
	g      *Grammar
	states []*stack
}

// NewMatcher starts a document.
func (g *Grammar) NewMatcher() *Matcher {
	return &Matcher{g: g, states: []*stack{{f: frame{nd: g.root}}}}
}

// step returns the states after p (nil when p is rejected), deduplicated.
func step(states []*stack, p []byte) []*stack {
	cur := states
	for _, b := range p {
		var next []*stack
		for _, s := range cur {
			next = advance(s, b, next)
		}
		if len(next) == 0 {
			return nil
		}
		cur = dedup(next)
	}
	return cur
}

func dedup(states []*stack) []*stack {
	if len(states) < 2 {
		return states
	}
	seen := make(map[string]bool, len(states))
	out := states[:0]
	var key []byte
	for _, s := range states {
		key = appendKey(key[:0], s)
		if !seen[string(key)] {
			seen[string(key)] = true
			out = append(out, s)
		}
	}
	return out
}

// Advance takes bytes p; false (and no change) if they cannot continue a
// valid document.
func (m *Matcher) Advance(p []byte) bool {
	next := step(m.states, p)
	if next == nil {
		return false
	}
	m.states = next
	return true
}

// Accepts reports whether p can continue the document (without taking it).
func (m *Matcher) Accepts(p []byte) bool { return step(m.states, p) != nil }

// Done reports whether the document so far is complete (it may end here).
func (m *Matcher) Done() bool {
	for _, s := range m.states {
		if complete(s) {
			return true
		}
	}
	return false
}

// Finished reports whether the document is complete and nothing can follow.
func (m *Matcher) Finished() bool {
	for _, s := range m.states {
		if s.f.nd.kind != kRoot || s.f.st != 1 {
			return false
		}
	}
	return len(m.states) > 0
}

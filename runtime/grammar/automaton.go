package grammar

import (
	"encoding/binary"
	"fmt"
	"sort"
	"unicode/utf8"
)

// dfa is a deterministic automaton over the bytes of a JSON string's body.
// Every state can reach an accepting one.
type dfa struct {
	start int32
	acc   []bool
	edges [][]dedge // per state, sorted by lo, disjoint
}

type dedge struct {
	lo, hi byte
	to     int32
}

// step is the state after b, -1 if none.
func (d *dfa) step(s int32, b byte) int32 {
	for _, e := range d.edges[s] {
		if b < e.lo {
			return -1
		}
		if b <= e.hi {
			return e.to
		}
	}
	return -1
}

// run follows the bytes p from the start, -1 if rejected.
func (d *dfa) run(p []byte) int32 {
	s := d.start
	for _, b := range p {
		if s = d.step(s, b); s < 0 {
			return -1
		}
	}
	return s
}

// matches reports whether the body p is in the language.
func (d *dfa) matches(p []byte) bool {
	s := d.run(p)
	return s >= 0 && d.acc[s]
}

// nfa is a Thompson automaton: each state has epsilon moves and
// byte-range moves.
type nfa struct {
	eps   [][]int32
	moves [][]dedge
	err   error
}

type frag struct{ start, end int32 }

func (n *nfa) state() int32 {
	if len(n.eps) >= maxNFAStates && n.err == nil {
		n.err = &PatternError{fmt.Sprintf("pattern too large (over %d automaton states)", maxNFAStates)}
	}
	n.eps = append(n.eps, nil)
	n.moves = append(n.moves, nil)
	return int32(len(n.eps) - 1)
}

func (n *nfa) link(a, b int32) { n.eps[a] = append(n.eps[a], b) }

func (n *nfa) move(a int32, lo, hi byte, b int32) {
	n.moves[a] = append(n.moves[a], dedge{lo, hi, b})
}

// bytesFrag matches one of the byte-range sequences seqs. Sequences share
// their common prefixes (all escapes start with a backslash) and their
// tails of UTF-8 continuation bytes, so a class such as "." costs a few
// dozen states, not one chain per sequence.
func (n *nfa) bytesFrag(seqs [][]brange) frag {
	f := frag{n.state(), n.state()}
	type key struct {
		from   int32
		lo, hi byte
	}
	child := map[key]int32{}
	cont := map[int]int32{} // k continuation bytes to go, then the end
	var contState func(k int) int32
	contState = func(k int) int32 {
		if k == 0 {
			return f.end
		}
		if s, ok := cont[k]; ok {
			return s
		}
		s := n.state()
		n.move(s, 0x80, 0xbf, contState(k-1))
		cont[k] = s
		return s
	}
	for _, seq := range seqs {
		cur := f.start
		for i, r := range seq {
			if n.err != nil {
				return f
			}
			last := i == len(seq)-1
			tail := !last
			for _, t := range seq[i+1:] {
				tail = tail && t.lo == 0x80 && t.hi == 0xbf
			}
			if !last && !tail {
				k := key{cur, r.lo, r.hi}
				if nx, ok := child[k]; ok {
					cur = nx
					continue
				}
			}
			nx := f.end
			switch {
			case tail:
				nx = contState(len(seq) - 1 - i)
			case !last:
				nx = n.state()
				child[key{cur, r.lo, r.hi}] = nx
			}
			n.move(cur, r.lo, r.hi, nx)
			if tail || last {
				break
			}
			cur = nx
		}
	}
	return f
}

type brange struct{ lo, hi byte }

// build compiles r (without lookaheads) into a fragment.
func (n *nfa) build(r *rx) frag {
	if n.err != nil {
		return frag{0, 0}
	}
	switch r.op {
	case rxSet:
		return n.bytesFrag(charSeqs(r.set))
	case rxCat:
		f := frag{n.state(), -1}
		f.end = f.start
		for _, s := range r.subs {
			g := n.build(s)
			n.link(f.end, g.start)
			f.end = g.end
		}
		return f
	case rxAlt:
		f := frag{n.state(), n.state()}
		for _, s := range r.subs {
			g := n.build(s)
			n.link(f.start, g.start)
			n.link(g.end, f.end)
		}
		return f
	case rxRep:
		f := frag{n.state(), -1}
		f.end = f.start
		for range r.min {
			g := n.build(r.subs[0])
			n.link(f.end, g.start)
			f.end = g.end
			if n.err != nil {
				return f
			}
		}
		if r.max < 0 {
			g := n.build(r.subs[0])
			end := n.state()
			n.link(f.end, g.start)
			n.link(f.end, end)
			n.link(g.end, g.start)
			n.link(g.end, end)
			f.end = end
			return f
		}
		end := n.state()
		for range r.max - r.min {
			g := n.build(r.subs[0])
			n.link(f.end, g.start)
			n.link(f.end, end)
			f.end = g.end
			if n.err != nil {
				return f
			}
		}
		n.link(f.end, end)
		f.end = end
		return f
	}
	n.err = &PatternError{"lookahead inside a group is not supported"}
	return frag{0, 0}
}

// embed copies a DFA into the NFA as a fragment.
func (n *nfa) embed(d *dfa) frag {
	ids := make([]int32, len(d.acc))
	for i := range ids {
		ids[i] = n.state()
	}
	f := frag{ids[d.start], n.state()}
	for i, es := range d.edges {
		if d.acc[i] {
			n.link(ids[i], f.end)
		}
		for _, e := range es {
			n.move(ids[i], e.lo, e.hi, ids[e.to])
		}
	}
	return f
}

// compileRx builds the DFA of r. A lookahead in a sequence constrains the
// rest of that sequence: A (?=X) B is A then (B ∩ X.*), A (?!X) B is A then
// (B minus X.*).
func compileRx(r *rx) (*dfa, error) {
	n := &nfa{}
	f, err := n.buildTop(r)
	if err != nil {
		return nil, err
	}
	return n.determinize(f)
}

func (n *nfa) buildTop(r *rx) (frag, error) {
	switch r.op {
	case rxAlt:
		f := frag{n.state(), n.state()}
		for _, s := range r.subs {
			g, err := n.buildTop(s)
			if err != nil {
				return f, err
			}
			n.link(f.start, g.start)
			n.link(g.end, f.end)
		}
		return f, n.err
	case rxCat:
		for k, s := range r.subs {
			if s.op != rxLook {
				continue
			}
			rest, err := compileRx(&rx{op: rxCat, subs: r.subs[k+1:]})
			if err != nil {
				return frag{}, err
			}
			look, err := compileRxAllowEmpty(lookLanguage(s.subs[0]))
			if err != nil {
				return frag{}, err
			}
			both, err := combine(rest, look, s.neg)
			if err != nil {
				return frag{}, err
			}
			if both == nil {
				return frag{}, &PatternError{"no string matches the pattern (its lookahead excludes everything)"}
			}
			f := n.build(&rx{op: rxCat, subs: r.subs[:k]})
			g := n.embed(both)
			n.link(f.end, g.start)
			return frag{f.start, g.end}, n.err
		}
	}
	f := n.build(r)
	return f, n.err
}

// lookLanguage is what a lookahead's content x requires of the rest of the
// string: x then anything, or exactly x where an alternative ends with $.
func lookLanguage(x *rx) *rx {
	alts := []*rx{x}
	if x.op == rxAlt {
		alts = x.subs
	}
	out := &rx{op: rxAlt}
	for _, a := range alts {
		parts := []*rx{a}
		if a.op == rxCat {
			parts = a.subs
		}
		if n := len(parts); n > 0 && parts[n-1].op == rxEnd {
			out.subs = append(out.subs, &rx{op: rxCat, subs: parts[:n-1]})
		} else {
			out.subs = append(out.subs, &rx{op: rxCat, subs: append(append([]*rx(nil), parts...), anyStar())})
		}
	}
	return out
}

// compileRxAllowEmpty is compileRx, nil (not an error) for the empty
// language.
func compileRxAllowEmpty(r *rx) (*dfa, error) {
	d, err := compileRx(r)
	if _, ok := err.(*emptyError); ok {
		return nil, nil
	}
	return d, err
}

type emptyError struct{}

func (*emptyError) Error() string { return "no string matches the pattern" }

// closure adds the epsilon closure of set to itself.
func (n *nfa) closure(set []int32, mark []bool) []int32 {
	for i := 0; i < len(set); i++ {
		for _, t := range n.eps[set[i]] {
			if !mark[t] {
				mark[t] = true
				set = append(set, t)
			}
		}
	}
	for _, s := range set {
		mark[s] = false
	}
	sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
	return set
}

func setKey(set []int32) string {
	b := make([]byte, 0, 4*len(set))
	for _, s := range set {
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	return string(b)
}

// determinize is the subset construction, then trim.
func (n *nfa) determinize(f frag) (*dfa, error) {
	mark := make([]bool, len(n.eps))
	mark[f.start] = true
	start := n.closure([]int32{f.start}, mark)
	index := map[string]int32{setKey(start): 0}
	sets := [][]int32{start}
	d := &dfa{}
	work := 0
	for i := 0; i < len(sets); i++ {
		set := sets[i]
		// The subset construction's cost is the sizes of the sets it
		// builds: bounded, so a pattern cannot take seconds of CPU.
		if work += len(set); work > maxSubsetWork {
			return nil, &PatternError{"pattern too complex (its automaton takes too long to build)"}
		}
		acc := false
		var cuts []int
		for _, s := range set {
			if s == f.end {
				acc = true
			}
			for _, m := range n.moves[s] {
				cuts = append(cuts, int(m.lo), int(m.hi)+1)
			}
		}
		sort.Ints(cuts)
		var edges []dedge
		for j := 0; j+1 < len(cuts); j++ {
			lo, hi := cuts[j], cuts[j+1]-1
			if lo > hi {
				continue
			}
			var tgt []int32
			if work += len(set); work > maxSubsetWork {
				return nil, &PatternError{"pattern too complex (its automaton takes too long to build)"}
			}
			for _, s := range set {
				for _, m := range n.moves[s] {
					if int(m.lo) <= lo && hi <= int(m.hi) && !mark[m.to] {
						mark[m.to] = true
						tgt = append(tgt, m.to)
					}
				}
			}
			if len(tgt) == 0 {
				continue
			}
			tgt = n.closure(tgt, mark)
			if work += 4 * len(tgt); work > maxSubsetWork { // sorted and keyed: dearer
				return nil, &PatternError{"pattern too complex (its automaton takes too long to build)"}
			}
			k := setKey(tgt)
			id, ok := index[k]
			if !ok {
				if len(sets) >= maxDFAStates {
					return nil, &PatternError{fmt.Sprintf("pattern too complex (over %d automaton states)", maxDFAStates)}
				}
				id = int32(len(sets))
				index[k] = id
				sets = append(sets, tgt)
			}
			edges = append(edges, dedge{byte(lo), byte(hi), id})
		}
		d.acc = append(d.acc, acc)
		d.edges = append(d.edges, edges)
	}
	return d.trim()
}

// trim removes the states that cannot reach acceptance (an *emptyError if
// the start is one) and merges adjacent edges.
func (d *dfa) trim() (*dfa, error) {
	live := make([]bool, len(d.acc))
	rev := make([][]int32, len(d.acc))
	var queue []int32
	for s, es := range d.edges {
		for _, e := range es {
			rev[e.to] = append(rev[e.to], int32(s))
		}
		if d.acc[s] {
			live[s] = true
			queue = append(queue, int32(s))
		}
	}
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, p := range rev[s] {
			if !live[p] {
				live[p] = true
				queue = append(queue, p)
			}
		}
	}
	if !live[d.start] {
		return nil, &emptyError{}
	}
	// Renumber the live states reachable from the start.
	id := make([]int32, len(d.acc))
	for i := range id {
		id[i] = -1
	}
	out := &dfa{}
	order := []int32{d.start}
	id[d.start] = 0
	for i := 0; i < len(order); i++ {
		for _, e := range d.edges[order[i]] {
			if live[e.to] && id[e.to] < 0 {
				id[e.to] = int32(len(order))
				order = append(order, e.to)
			}
		}
	}
	for _, s := range order {
		var es []dedge
		for _, e := range d.edges[s] {
			if !live[e.to] {
				continue
			}
			e.to = id[e.to]
			if n := len(es); n > 0 && es[n-1].to == e.to && int(es[n-1].hi)+1 == int(e.lo) {
				es[n-1].hi = e.hi
				continue
			}
			es = append(es, e)
		}
		out.acc = append(out.acc, d.acc[s])
		out.edges = append(out.edges, es)
	}
	return out, nil
}

// combine is a ∩ b, or a minus b when diff; nil for the empty language.
func combine(a, b *dfa, diff bool) (*dfa, error) {
	type pair struct{ x, y int32 }
	return explore(pair{a.start, b.start}, "pattern",
		func(p pair) bool {
			if diff {
				return a.acc[p.x] && (p.y < 0 || !b.acc[p.y])
			}
			return a.acc[p.x] && b.acc[p.y]
		},
		func(p pair) []dedge { return a.edges[p.x] },
		func(p pair, to int32, c byte) (pair, bool) {
			y := int32(-1)
			if p.y >= 0 {
				y = b.step(p.y, c)
			}
			return pair{to, y}, y >= 0 || diff
		})
}

// withLength restricts d to bodies of minLen..maxLen characters (maxLen < 0:
// no upper bound); nil for the empty language. The character count follows
// the string lexer, so an escape or a multi-byte character is one.
func withLength(d *dfa, minLen, maxLen int) (*dfa, error) {
	limit := maxLen
	if limit < 0 {
		limit = minLen
	}
	type triple struct {
		x   int32
		lex uint8
		n   int32
	}
	return explore(triple{d.start, lNormal, 0}, "pattern with minLength/maxLength",
		func(t triple) bool { return d.acc[t.x] && t.lex == lNormal && int(t.n) >= minLen },
		func(t triple) []dedge { return d.edges[t.x] },
		func(t triple, to int32, c byte) (triple, bool) {
			lex, ev := lexStep(t.lex, c)
			if ev == evReject || ev == evClose {
				return t, false // cannot happen for the canonical encoding
			}
			n := t.n
			if ev == evChar {
				if maxLen >= 0 && int(n) >= maxLen {
					return t, false
				}
				n = min(n+1, int32(limit))
			}
			return triple{to, lex, n}, true
		})
}

// explore builds, then trims, the automaton whose states are the keys
// reachable from start: a key accepts when accept says so, and on byte c of
// one of its edges (edges) goes to the key next gives for that edge's
// target, or nowhere when next says no. Runs of bytes that reach the same
// key become one edge. nil for the empty language; what names the pattern
// in the error when there are too many states.
func explore[K comparable](start K, what string, accept func(K) bool, edges func(K) []dedge, next func(k K, to int32, c byte) (K, bool)) (*dfa, error) {
	index := map[K]int32{start: 0}
	keys := []K{start}
	out := &dfa{}
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		var es []dedge
		for _, e := range edges(k) {
			var prev K
			joined := false // whether prev is the key the last byte of e reached
			for c := int(e.lo); c <= int(e.hi); c++ {
				q, ok := next(k, e.to, byte(c))
				if !ok {
					joined = false
					continue
				}
				if joined && q == prev && es[len(es)-1].hi == byte(c-1) {
					es[len(es)-1].hi = byte(c)
					continue
				}
				prev, joined = q, true
				id, ok := index[q]
				if !ok {
					if len(keys) >= maxDFAStates {
						return nil, &PatternError{fmt.Sprintf("%s too complex (over %d automaton states)", what, maxDFAStates)}
					}
					id = int32(len(keys))
					index[q] = id
					keys = append(keys, q)
				}
				es = append(es, dedge{byte(c), byte(c), id})
			}
		}
		out.acc = append(out.acc, accept(k))
		out.edges = append(out.edges, es)
	}
	d, err := out.trim()
	if _, ok := err.(*emptyError); ok {
		return nil, nil
	}
	return d, err
}

// charSeqs is the set of characters as byte-range sequences in the
// canonical JSON encoding (surrogates excluded: they are not characters).
func charSeqs(set []rrange) [][]brange {
	var out [][]brange
	lit := func(s string) {
		seq := make([]brange, len(s))
		for i := 0; i < len(s); i++ {
			seq[i] = brange{s[i], s[i]}
		}
		out = append(out, seq)
	}
	for _, r := range set {
		lo, hi := r.lo, r.hi
		// Control characters: the short escapes, and \u00XX with the last
		// hex digit as ranges.
		var hexLast [2][]rrange
		for c := lo; c <= min(hi, 0x1f); c++ {
			if e := escapeControl(c); len(e) == 2 {
				lit(e)
				continue
			}
			d := rune("0123456789abcdef"[c&15])
			hexLast[c>>4] = append(hexLast[c>>4], rrange{d, d})
		}
		for h, ds := range hexLast {
			for _, d := range normalize(ds) {
				seq := []brange{{'\\', '\\'}, {'u', 'u'}, {'0', '0'}, {'0', '0'}, {byte('0' + h), byte('0' + h)}, {byte(d.lo), byte(d.hi)}}
				out = append(out, seq)
			}
		}
		lo = max(lo, 0x20)
		// ASCII, with '"' and '\' escaped.
		for a := lo; a <= min(hi, 0x7f); {
			switch a {
			case '"':
				lit(`\"`)
				a++
				continue
			case '\\':
				lit(`\\`)
				a++
				continue
			}
			b := min(hi, 0x7f)
			if a < '"' {
				b = min(b, '"'-1)
			} else if a < '\\' {
				b = min(b, '\\'-1)
			}
			out = append(out, []brange{{byte(a), byte(b)}})
			a = b + 1
		}
		lo = max(lo, 0x80)
		// Non-ASCII, surrogates left out.
		if lo <= min(hi, 0xd7ff) {
			out = utf8Seqs(lo, min(hi, 0xd7ff), out)
		}
		if max(lo, 0xe000) <= hi {
			out = utf8Seqs(max(lo, 0xe000), hi, out)
		}
	}
	return out
}

// escapeControl is how JSON writes control character c (as Go's encoder).
func escapeControl(c rune) string {
	switch c {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	return fmt.Sprintf(`\u%04x`, c)
}

// utf8Seqs appends the byte-range sequences whose UTF-8 decodings are
// exactly the code points lo..hi (lo >= 0x80, no surrogates inside). A
// range splits until, within each piece, every byte position takes a full
// range independently of the others.
func utf8Seqs(lo, hi rune, out [][]brange) [][]brange {
	if lo > hi {
		return out
	}
	// Pieces of one encoded length.
	for _, limit := range []rune{0x7ff, 0xffff} {
		if lo <= limit && hi > limit {
			out = utf8Seqs(lo, limit, out)
			return utf8Seqs(limit+1, hi, out)
		}
	}
	n := utf8.RuneLen(lo)
	// Split where a lower byte position does not cover its full range.
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = utf8Seqs(lo, lo|m, out)
				return utf8Seqs((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = utf8Seqs(lo, (hi&^m)-1, out)
				return utf8Seqs(hi&^m, hi, out)
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]brange, n)
	for i := range n {
		seq[i] = brange{a[i], b[i]}
	}
	return append(out, seq)
}

// canonicalBody is s as a JSON string body in the encoding charSeqs uses.
func canonicalBody(s string) []byte {
	var b []byte
	for _, c := range s {
		switch {
		case c < 0x20:
			b = append(b, escapeControl(c)...)
		case c == '"':
			b = append(b, `\"`...)
		case c == '\\':
			b = append(b, `\\`...)
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return b
}

// literalsDFA is the DFA of exactly the given string bodies (nil if none).
func literalsDFA(names []string) (*dfa, error) {
	alt := &rx{op: rxAlt}
	for _, s := range names {
		cat := &rx{op: rxCat}
		for _, c := range s {
			cat.subs = append(cat.subs, &rx{op: rxSet, set: []rrange{{c, c}}})
		}
		alt.subs = append(alt.subs, cat)
	}
	if len(alt.subs) == 0 {
		return nil, nil
	}
	return compileRx(alt)
}

// byteSpan is the fewest bytes of an accepted body and the most (-1 when
// unbounded: the automaton has a cycle).
func (d *dfa) byteSpan() (shortest, longest int) {
	const unknown, active = -2, -3
	long := make([]int, len(d.acc))
	for i := range long {
		long[i] = unknown
	}
	var visit func(s int32) int
	visit = func(s int32) int {
		switch long[s] {
		case active:
			return -1
		case unknown:
		default:
			return long[s]
		}
		long[s] = active
		best := 0
		if !d.acc[s] {
			best = -4 // no accepting end yet (every state reaches one)
		}
		for _, e := range d.edges[s] {
			l := visit(e.to)
			if l < 0 {
				long[s] = -1
				return -1
			}
			best = max(best, l+1)
		}
		long[s] = best
		return best
	}
	longest = visit(d.start)
	// Shortest: breadth-first from the start.
	dist := make([]int, len(d.acc))
	for i := range dist {
		dist[i] = -1
	}
	dist[d.start] = 0
	queue := []int32{d.start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if d.acc[s] {
			return dist[s], longest
		}
		for _, e := range d.edges[s] {
			if dist[e.to] < 0 {
				dist[e.to] = dist[s] + 1
				queue = append(queue, e.to)
			}
		}
	}
	return 0, longest
}

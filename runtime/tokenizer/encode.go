package tokenizer

import (
	"fmt"
	"strings"
)

// fragment is either a special token or a span of raw text.
type fragment struct {
	token    int32 // -1 for text
	off, len int
}

func isCSpace(b byte) bool {
	return b == ' ' || (b >= '\t' && b <= '\r')
}

// partition splits text around special tokens (llama.cpp's
// tokenizer_st_partition): each special token, longest first, is searched
// in every remaining text span. Control and unknown tokens take part only
// when parseSpecial is set; user-defined ones always do.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{token: null, off: 0, len: len(text)}}
	var next []fragment
	for _, id := range t.special {
		attr := t.attrs[id]
		if !parseSpecial && attr&(attrControl|attrUnknown) != 0 {
			continue
		}
		w := t.texts[id]
		// quick reject: any text fragment containing w at all?
		found := false
		for _, f := range frags {
			if f.token == null && strings.Contains(text[f.off:f.off+f.len], w) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.token != null {
				next = append(next, f)
				continue
			}
			off, n := f.off, f.len
			for {
				i := strings.Index(text[off:off+n], w)
				if i < 0 {
					next = append(next, fragment{token: null, off: off, len: n})
					break
				}
				match := off + i
				if match > off {
					ll := match - off
					if attr&attrLstrip != 0 {
						for ll > 0 && isCSpace(text[off+ll-1]) {
							ll--
						}
					}
					if ll > 0 {
						next = append(next, fragment{token: null, off: off, len: ll})
					}
				}
				next = append(next, fragment{token: id})
				rOff := match + len(w)
				rLen := off + n - rOff
				if rLen <= 0 {
					break
				}
				if attr&attrRstrip != 0 {
					for rLen > 0 && isCSpace(text[rOff]) {
						rOff++
						rLen--
					}
				}
				if rLen <= 0 {
					break
				}
				off, n = rOff, rLen
			}
		}
		frags, next = append(frags[:0:0], next...), frags
	}
	return frags
}

// Encode tokenizes text like llama_tokenize: addSpecial adds BOS/EOS as the
// vocabulary says, parseSpecial recognises control-token text.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	frags := t.partition(text, parseSpecial)
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	prevSpecial := true
	for _, f := range frags {
		if f.token != null {
			out = append(out, f.token)
			prevSpecial = true
			continue
		}
		s := text[f.off : f.off+f.len]
		var err error
		switch t.kind {
		case kindSPM:
			if t.addSpacePrefix && prevSpecial {
				s = " " + s
			}
			out, err = t.spm(strings.ReplaceAll(s, " ", "\u2581"), out)
		case kindBPE:
			if t.rawUTF8 {
				s = strings.ReplaceAll(s, " ", "\u2581")
			}
			out, err = t.bpe(s, out)
		case kindWPM:
			out = t.wpm(s, out)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	if addSpecial && t.addSEP && t.sep != null {
		out = append(out, t.sep)
	}
	return out, nil
}

// ---- SentencePiece (llama.cpp's SPM) ----

type spmSym struct {
	prev, next int
	off, n     int
}

type spmBigram struct {
	left, right int
	score       float32
	size        int
}

// spmBigram.before orders the SPM queue: highest score first, leftmost on ties.
//
//lint:ignore U1000 called through the queue's type constraint
func (b spmBigram) before(o *spmBigram) bool {
	if b.score != o.score {
		return b.score > o.score
	}
	return b.left < o.left
}

// mergeQueue is a binary heap of merge candidates (SPM bigrams by score,
// BPE bigrams by rank) with the one that merges first on top.
type mergeQueue[T interface{ before(*T) bool }] []T

func (q *mergeQueue[T]) push(x T) {
	h := append(*q, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *mergeQueue[T]) pop() T {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

type spmSession struct {
	t     *Tokenizer
	text  string
	syms  []spmSym
	queue mergeQueue[spmBigram]
	rev   map[string][2]int
}

func (t *Tokenizer) spm(text string, out []int32) ([]int32, error) {
	s := &spmSession{t: t, text: text, rev: map[string][2]int{}}
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		idx := len(s.syms)
		next := idx + 1
		if off+n == len(text) {
			next = -1
		}
		s.syms = append(s.syms, spmSym{prev: idx - 1, next: next, off: off, n: n})
		off += n
	}
	for i := 1; i < len(s.syms); i++ {
		s.tryAdd(i-1, i)
	}
	for len(s.queue) > 0 {
		b := s.queue.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		s.tryAdd(l.prev, b.left)
		s.tryAdd(b.left, l.next)
	}
	var err error
	for i := 0; i != -1 && i < len(s.syms); i = s.syms[i].next {
		if out, err = s.resegment(i, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *spmSession) tryAdd(left, right int) {
	if left == -1 || right == -1 {
		return
	}
	w := s.text[s.syms[left].off : s.syms[left].off+s.syms[left].n+s.syms[right].n]
	id, ok := s.t.toID[w]
	if !ok {
		return
	}
	s.queue.push(spmBigram{left: left, right: right, score: s.t.scores[id], size: len(w)})
	s.rev[w] = [2]int{left, right}
}

func (s *spmSession) resegment(i int, out []int32) ([]int32, error) {
	sym := s.syms[i]
	w := s.text[sym.off : sym.off+sym.n]
	if id, ok := s.t.toID[w]; ok {
		return append(out, id), nil
	}
	if p, ok := s.rev[w]; ok {
		var err error
		if out, err = s.resegment(p[0], out); err != nil {
			return nil, err
		}
		return s.resegment(p[1], out)
	}
	for j := 0; j < len(w); j++ {
		id, err := s.t.byteToken(w[j])
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

const hexDigits = "0123456789ABCDEF"

// byteToken is the byte-fallback token of b: "<0xNN>", else the byte itself.
func (t *Tokenizer) byteToken(b byte) (int32, error) {
	if id, ok := t.toID[string([]byte{'<', '0', 'x', hexDigits[b>>4], hexDigits[b&15], '>'})]; ok {
		return id, nil
	}
	if id, ok := t.toID[string([]byte{b})]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("tokenizer: vocabulary has no token for byte 0x%02X", b)
}

// ---- byte-level BPE ----

type bpeSym struct {
	prev, next int
	off, n     int
}

type bpeBigram struct {
	left, right int
	rank        int
	size        int // bytes of left+right when queued
}

// bpeBigram.before orders the BPE queue: lowest merge rank first, leftmost on ties.
//
//lint:ignore U1000 called through the queue's type constraint
func (b bpeBigram) before(o *bpeBigram) bool {
	if b.rank != o.rank {
		return b.rank < o.rank
	}
	return b.left < o.left
}

// PreTokenize returns the pre-tokenizer's split of text (BPE vocabularies;
// nil for SPM), each word as UTF-8 before byte-level encoding.
func (t *Tokenizer) PreTokenize(text string) ([]string, error) {
	if t.kind != kindBPE {
		return nil, nil
	}
	words, err := t.pretok.split(text)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(words))
	for i, w := range words {
		var b []byte
		for _, c := range w {
			b = appendCpt(b, c)
		}
		out[i] = string(b)
	}
	return out, nil
}

func (t *Tokenizer) bpe(text string, out []int32) ([]int32, error) {
	words, err := t.pretok.split(text)
	if err != nil {
		return nil, err
	}
	var raw []byte
	var enc strings.Builder
	var syms []bpeSym
	var q mergeQueue[bpeBigram]
	for _, w := range words {
		if len(w) == 0 {
			continue
		}
		raw = raw[:0]
		for _, c := range w {
			raw = appendCpt(raw, c)
		}
		var word string
		if t.rawUTF8 {
			word = string(raw)
		} else {
			enc.Reset()
			for _, b := range raw {
				enc.WriteString(byteEnc[b])
			}
			word = enc.String()
		}

		syms = syms[:0]
		if t.ignoreMerges {
			if id, ok := t.toID[word]; ok {
				out = append(out, id)
				continue
			}
		}
		if t.rawUTF8 && strings.Trim(word, "\n") == "" {
			// Gemma 4: a run of newlines that is a token stays whole.
			if id, ok := t.toID[word]; ok {
				out = append(out, id)
				continue
			}
		}
		for off := 0; off < len(word); {
			n := min(utf8Len(word[off]), len(word)-off)
			idx := len(syms)
			next := idx + 1
			if off+n == len(word) {
				next = -1
			}
			syms = append(syms, bpeSym{prev: idx - 1, next: next, off: off, n: n})
			off += n
		}
		q = q[:0]
		add := func(left, right int) {
			if left == -1 || right == -1 {
				return
			}
			a := word[syms[left].off : syms[left].off+syms[left].n]
			b := word[syms[right].off : syms[right].off+syms[right].n]
			rank, ok := t.ranks[mergeKey{a, b}]
			if !ok {
				return
			}
			q.push(bpeBigram{left: left, right: right, rank: rank, size: len(a) + len(b)})
		}
		for i := 1; i < len(syms); i++ {
			add(i-1, i)
		}
		for len(q) > 0 {
			bg := q.pop()
			l, r := &syms[bg.left], &syms[bg.right]
			if l.n == 0 || r.n == 0 {
				continue
			}
			// llama.cpp compares left+right with the queued text; as symbols
			// only grow by absorbing their right neighbour, that is the same
			// as comparing sizes
			if l.n+r.n != bg.size {
				continue
			}
			l.n += r.n
			r.n = 0
			l.next = r.next
			if r.next >= 0 {
				syms[r.next].prev = bg.left
			}
			add(l.prev, bg.left)
			add(bg.left, l.next)
		}
		for i := 0; i != -1 && i < len(syms); i = syms[i].next {
			if syms[i].n == 0 {
				continue
			}
			piece := word[syms[i].off : syms[i].off+syms[i].n]
			if id, ok := t.toID[piece]; ok {
				out = append(out, id)
				continue
			}
			for j := 0; j < len(piece); j++ {
				key := piece[j : j+1]
				if t.rawUTF8 { // byte fallback through "<0xNN>"
					key = string([]byte{'<', '0', 'x', hexDigits[piece[j]>>4], hexDigits[piece[j]&15], '>'})
				}
				if id, ok := t.toID[key]; ok {
					out = append(out, id)
				}
			}
		}
	}
	return out, nil
}

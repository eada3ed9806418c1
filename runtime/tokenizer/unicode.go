package tokenizer

import (
	"sync"
	"unicode"
)

// Code point classification as llama.cpp's unicode tables see it: every code
// point has exactly one general category (undefined for unassigned ones) plus
// a separate whitespace bit.

type cptFlags uint8

const (
	flagUndefined cptFlags = 1 << iota
	flagNumber
	flagLetter
	flagSeparator
	flagMark
	flagPunct
	flagSymbol
	flagControl
)

const maxCodepoint = 0x110000

var (
	flagsOnce  sync.Once
	flagsTable []cptFlags // category per code point
	spaceTable []bool     // whitespace per code point (only below 0x3001)
)

func buildFlags() {
	flagsTable = make([]cptFlags, maxCodepoint)
	for i := range flagsTable {
		flagsTable[i] = flagUndefined
	}
	fill := func(tabs map[string]*unicode.RangeTable, f cptFlags) {
		for _, t := range tabs {
			for _, r := range t.R16 {
				for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
					flagsTable[c] = f
				}
			}
			for _, r := range t.R32 {
				for c := r.Lo; c <= r.Hi; c += r.Stride {
					flagsTable[c] = f
				}
			}
		}
	}
	// Fill from the two-letter categories so that "C" (Cc Cf Co Cs) does not
	// swallow unassigned code points (Cn stays undefined).
	byMajor := map[byte]cptFlags{'N': flagNumber, 'L': flagLetter, 'Z': flagSeparator, 'M': flagMark,
		'P': flagPunct, 'S': flagSymbol, 'C': flagControl}
	for name, t := range unicode.Categories {
		if len(name) != 2 {
			continue
		}
		f, ok := byMajor[name[0]]
		if !ok {
			continue
		}
		fill(map[string]*unicode.RangeTable{name: t}, f)
	}
	spaceTable = make([]bool, 0x3001)
	for c := range spaceTable {
		spaceTable[c] = unicode.Is(unicode.White_Space, rune(c))
	}
}

// cptInfo is the classification of one code point; zero for "out of range"
// (positions outside the current segment), like llama.cpp's empty flags.
type cptInfo struct {
	cat   cptFlags
	space bool
}

func (c cptInfo) any() bool      { return c.cat != 0 || c.space }
func (c cptInfo) isLetter() bool { return c.cat == flagLetter }
func (c cptInfo) isNumber() bool { return c.cat == flagNumber }
func (c cptInfo) isSpace() bool  { return c.space }

// isOther is [^\s\p{L}\p{N}]: any code point but whitespace, letters and
// numbers.
func (c cptInfo) isOther() bool { return !(c.space || c.isLetter() || c.isNumber()) && c.any() }

func infoOf(c uint32) cptInfo {
	flagsOnce.Do(buildFlags)
	if c >= maxCodepoint {
		return cptInfo{cat: flagUndefined}
	}
	in := cptInfo{cat: flagsTable[c]}
	if c < uint32(len(spaceTable)) {
		in.space = spaceTable[c]
	}
	return in
}

func toLower(c uint32) uint32 {
	if c >= maxCodepoint {
		return c
	}
	return uint32(unicode.ToLower(rune(c)))
}

// utf8Len is the sequence length announced by a lead byte, as llama.cpp
// computes it (continuation and invalid bytes count as 1).
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

// decodeCpts splits s into code points the way llama.cpp does: it does not
// reject overlong forms or surrogates, and each byte of an invalid sequence
// becomes U+FFFD.
func decodeCpts(s string) []uint32 {
	out := make([]uint32, 0, len(s))
	i := 0
	n := len(s)
	for i < n {
		b0 := s[i]
		switch {
		case b0 < 0x80:
			out = append(out, uint32(b0))
			i++
			continue
		case b0&0x40 == 0:
			// stray continuation byte
		case b0&0x20 == 0:
			if i+1 < n && s[i+1]&0xc0 == 0x80 {
				out = append(out, uint32(b0&0x1f)<<6|uint32(s[i+1]&0x3f))
				i += 2
				continue
			}
		case b0&0x10 == 0:
			if i+2 < n && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80 {
				out = append(out, uint32(b0&0x0f)<<12|uint32(s[i+1]&0x3f)<<6|uint32(s[i+2]&0x3f))
				i += 3
				continue
			}
		case b0&0x08 == 0:
			if i+3 < n && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80 && s[i+3]&0xc0 == 0x80 {
				out = append(out, uint32(b0&0x07)<<18|uint32(s[i+1]&0x3f)<<12|uint32(s[i+2]&0x3f)<<6|uint32(s[i+3]&0x3f))
				i += 4
				continue
			}
		}
		out = append(out, 0xFFFD)
		i++
	}
	return out
}

// appendCpt encodes one code point without Go's surrogate replacement (to
// match llama.cpp); values past U+10FFFF become U+FFFD.
func appendCpt(dst []byte, c uint32) []byte {
	switch {
	case c <= 0x7f:
		return append(dst, byte(c))
	case c <= 0x7ff:
		return append(dst, 0xc0|byte(c>>6&0x1f), 0x80|byte(c&0x3f))
	case c <= 0xffff:
		return append(dst, 0xe0|byte(c>>12&0x0f), 0x80|byte(c>>6&0x3f), 0x80|byte(c&0x3f))
	case c <= 0x10ffff:
		return append(dst, 0xf0|byte(c>>18&0x07), 0x80|byte(c>>12&0x3f), 0x80|byte(c>>6&0x3f), 0x80|byte(c&0x3f))
	}
	return append(dst, 0xef, 0xbf, 0xbd)
}

// GPT-2 byte-level mapping: every byte gets a printable code point.
var (
	byteToRune [256]rune
	runeToByte map[rune]byte
	byteEnc    [256]string
)

func init() {
	n := 0
	runeToByte = make(map[rune]byte, 256)
	for b := 0; b < 256; b++ {
		printable := (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
		byteEnc[b] = string(byteToRune[b])
	}
}

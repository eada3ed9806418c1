package grammar

// The lexer of a JSON string's body: valid UTF-8 only (no overlong forms,
// no surrogates, nothing above U+10FFFF), no raw control characters, the
// JSON escapes, and \u escapes outside the surrogate range D800-DFFF (a
// lone surrogate would not decode; characters outside the BMP are written
// as raw UTF-8).

// Lexer states.
const (
	lNormal uint8 = iota
	lEsc          // after '\'
	lHex0         // after "\u"
	lHex1D        // after "\ud": the next digit must be 0-7
	lHex1         // one hex digit (not d/D)
	lHex2
	lHex3
	lC1 // one continuation byte 80-BF to go
	lC2 // two
	lC3 // three
	lE0 // after E0: A0-BF, then one
	lED // after ED: 80-9F, then one
	lF0 // after F0: 90-BF, then two
	lF4 // after F4: 80-8F, then two
	numLex
)

// Lexer events.
const (
	evNone   = iota // the byte continues the current character
	evChar          // the byte starts a character
	evClose         // the closing quote
	evReject        // not allowed
)

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

// contBytes is, for each state inside a UTF-8 character, the range of the
// next byte and the state after it.
var contBytes = [numLex]struct{ lo, hi, next uint8 }{
	lC1: {0x80, 0xBF, lNormal},
	lC2: {0x80, 0xBF, lC1},
	lC3: {0x80, 0xBF, lC2},
	lE0: {0xA0, 0xBF, lC1},
	lED: {0x80, 0x9F, lC1},
	lF0: {0x90, 0xBF, lC2},
	lF4: {0x80, 0x8F, lC2},
}

// lexStep is one byte of a string body in state st.
func lexStep(st uint8, b byte) (uint8, int) {
	switch st {
	case lNormal:
		switch {
		case b == '"':
			return lNormal, evClose
		case b == '\\':
			return lEsc, evChar
		case b < 0x20:
			return st, evReject
		case b < 0x80:
			return lNormal, evChar
		case b >= 0xC2 && b <= 0xDF:
			return lC1, evChar
		case b == 0xE0:
			return lE0, evChar
		case b == 0xED:
			return lED, evChar
		case b >= 0xE1 && b <= 0xEF:
			return lC2, evChar
		case b == 0xF0:
			return lF0, evChar
		case b >= 0xF1 && b <= 0xF3:
			return lC3, evChar
		case b == 0xF4:
			return lF4, evChar
		}
		return st, evReject
	case lEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return lNormal, evNone
		case 'u':
			return lHex0, evNone
		}
		return st, evReject
	case lHex0:
		switch {
		case b == 'd' || b == 'D':
			return lHex1D, evNone
		case isHex(b):
			return lHex1, evNone
		}
		return st, evReject
	case lHex1D:
		if b >= '0' && b <= '7' {
			return lHex2, evNone
		}
		return st, evReject
	case lHex1, lHex2, lHex3:
		if !isHex(b) {
			return st, evReject
		}
		if st == lHex3 {
			return lNormal, evNone
		}
		return st + 1, evNone
	case lC1, lC2, lC3, lE0, lED, lF0, lF4:
		r := contBytes[st]
		if b < r.lo || b > r.hi {
			return st, evReject
		}
		return r.next, evNone
	}
	return st, evReject
}

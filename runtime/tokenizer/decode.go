package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// makePiece is llama_token_to_piece(id, lstrip=0, special=true).
func (t *Tokenizer) makePiece(id int32) []byte {
	w := t.texts[id]
	attr := t.attrs[id]
	if attr&(attrUnknown|attrControl|attrUserDefined) != 0 {
		return []byte(w)
	}
	switch {
	case attr&attrNormal != 0:
		if t.kind == kindSPM || t.kind == kindWPM || t.rawUTF8 {
			return []byte(strings.ReplaceAll(w, "\u2581", " "))
		}
		return decodeByteLevel(w)
	case attr&attrByte != 0:
		if len(w) >= 5 {
			if v, err := strconv.ParseUint(w[3:5], 16, 8); err == nil {
				return []byte{byte(v)}
			}
		}
		// llama.cpp's strtol would read a malformed byte token as 0
		return []byte{0}
	}
	return nil
}

// decodeByteLevel maps GPT-2 byte-level code points back to bytes.
func decodeByteLevel(w string) []byte {
	out := make([]byte, 0, len(w))
	for _, c := range decodeCpts(w) {
		if c <= 0x10ffff {
			if b, ok := runeToByte[rune(c)]; ok {
				out = append(out, b)
				continue
			}
		}
		// llama.cpp's marker for code points outside the byte alphabet
		u := appendCpt(nil, c)
		out = append(out, "[UNK_BYTE_0x"...)
		for _, x := range u {
			out = append(out, fmt.Sprintf("%02x", x)...)
		}
		out = append(out, w...)
		out = append(out, ']')
	}
	return out
}

// Piece returns the bytes of one token as llama_token_to_piece with
// special=true renders them: byte tokens decoded, "▁" shown as a space (SPM),
// byte-level BPE decoded, control tokens as their text. Nil when id is out of
// range. The slice must not be modified.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Decode concatenates the pieces of ids (special tokens rendered as text).
// For vocabularies that add a space prefix (SPM) the single leading space of
// the first token is dropped, so Decode(Encode(s, false, false)) == s. This is
// llama_detokenize(remove_special=false, unparse_special=true) without the
// clean-up of spaces before punctuation (see Detokenize for that).
func (t *Tokenizer) Decode(ids []int32) string {
	var b []byte
	for i, id := range ids {
		p := t.Piece(id)
		if i == 0 && t.addSpacePrefix && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		b = append(b, p...)
	}
	return string(b)
}

// Detokenize is llama_detokenize: removeSpecial drops a leading BOS / trailing
// EOS the vocabulary adds, unparseSpecial renders control tokens, and
// vocabularies with clean_up_tokenization_spaces get llama.cpp's clean-up.
func (t *Tokenizer) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) string {
	removeSpace := t.addSpacePrefix
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var text []byte
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) {
			removeSpace = false
			continue
		}
		p := t.pieces[id]
		if !unparseSpecial && t.attrs[id]&(attrUnknown|attrControl) != 0 {
			p = nil
		}
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		text = append(text, p...)
	}
	if !t.cleanSpaces {
		return string(text)
	}
	// pass 1: " ?", " !", " .", " ," lose the space
	x := squeeze(text, func(x []byte, i int) bool {
		c := x[i]
		return x[i-1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ',')
	})
	// pass 2: a single apostrophe between spaces loses both spaces
	if len(x) > 0 {
		n := 1
		total := len(x)
		for i := 1; i < total; i++ {
			c := x[i]
			if c == '\'' && i+1 < total && x[i-1] == ' ' && x[i+1] == ' ' {
				n--
				x[i+1] = 0
				x[n] = c
				n++
				i++
				continue
			}
			x[n] = c
			n++
		}
		x = x[:n]
	}
	// pass 3: " 's", " 'm", " 're", " 've" lose the space
	x = squeeze(x, func(x []byte, i int) bool {
		total := len(x)
		if x[i-1] != ' ' || x[i] != '\'' || i+1 >= total {
			return false
		}
		c1 := x[i+1]
		if c1 == 's' || c1 == 'm' {
			return true
		}
		return c1 != 't' && c1 != 'd' && i+2 < total && (c1 == 'r' || c1 == 'v') && x[i+2] == 'e'
	})
	return string(x)
}

// squeeze keeps x[0], then each later byte, dropping the byte kept before it
// when spaceGoes(x, i) — evaluated on the buffer as rewritten so far, as
// llama.cpp's in-place passes do.
func squeeze(x []byte, spaceGoes func(x []byte, i int) bool) []byte {
	if len(x) == 0 {
		return x
	}
	n := 1
	for i := 1; i < len(x); i++ {
		c := x[i]
		if spaceGoes(x, i) {
			n--
		}
		x[n] = c
		n++
	}
	return x[:n]
}

// StreamDecoder turns a stream of token ids into text without ever emitting
// part of a UTF-8 sequence: bytes of an unfinished character are held until
// the token that completes it arrives. Bytes that can never form a valid
// character are emitted as U+FFFD.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder starts a decoder with nothing pending.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add appends the piece of id and returns the text that is now complete.
func (d *StreamDecoder) Add(id int32) string {
	d.pending = append(d.pending, d.t.Piece(id)...)
	return d.drain(false)
}

// Flush returns whatever is still held (an unfinished sequence becomes
// U+FFFD) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	return d.drain(true)
}

// Pending reports how many bytes are held back.
func (d *StreamDecoder) Pending() int { return len(d.pending) }

func (d *StreamDecoder) drain(final bool) string {
	p := d.pending
	var out strings.Builder
	i := 0
	for i < len(p) {
		r, n := utf8.DecodeRune(p[i:])
		if r != utf8.RuneError || n > 1 {
			out.Write(p[i : i+n])
			i += n
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			break // may still be completed by the next token
		}
		out.WriteString("\uFFFD")
		i++
	}
	d.pending = append(d.pending[:0], p[i:]...)
	return out.String()
}

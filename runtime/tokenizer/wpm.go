package tokenizer

import (
	"golang.org/x/text/unicode/norm"
)

// WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp runs it (its WPM
// tokenizer). A GGUF BERT vocabulary stores a word-initial piece with a
// leading U+2581 ("▁hello") and a continuation piece bare ("llo" for
// HuggingFace's "##llo"); bracketed specials ([CLS], [SEP], ...) as they are.
//
// Encoding a span of text:
//  1. normalize and split (wpmWords): code points are optionally lowercased
//     and reduced to the first code point of their canonical decomposition
//     with combining marks dropped (tokenizer.ggml.normalizer.lowercase,
//     .strip_accents); whitespace separates words; NUL, U+FFFD and control
//     characters vanish; punctuation, ASCII symbols and CJK ideographs are
//     words of their own;
//  2. each word, prefixed by U+2581, is cut greedily from the left into the
//     longest vocabulary pieces; a word with a position no piece covers
//     becomes the unknown token as a whole.
//
// Encode with addSpecial puts [CLS] (BOS) first and [SEP] last.

// wpmNormalizer holds the BertNormalizer options of the vocabulary.
type wpmNormalizer struct {
	lowercase, stripAccents bool
}

// nfdFirst maps c to the first code point of its canonical decomposition
// (c itself when it has none).
func nfdFirst(c uint32) uint32 {
	if c < 0x80 || c >= maxCodepoint {
		return c
	}
	var buf [4]byte
	b := appendCpt(buf[:0], c)
	d := norm.NFD.Bytes(b)
	cs := decodeCpts(string(d))
	if len(cs) == 0 {
		return c
	}
	return cs[0]
}

// isCJKIdeograph is the code point ranges BERT's basic tokenizer splits
// around (the CJK Unified Ideographs blocks and their extensions, as
// llama.cpp lists them).
func isCJKIdeograph(c uint32) bool {
	return (c >= 0x4E00 && c <= 0x9FFF) ||
		(c >= 0x3400 && c <= 0x4DBF) ||
		(c >= 0x20000 && c <= 0x2A6DF) ||
		(c >= 0x2A700 && c <= 0x2B73F) ||
		(c >= 0x2B740 && c <= 0x2B81F) ||
		(c >= 0x2B920 && c <= 0x2CEAF) ||
		(c >= 0xF900 && c <= 0xFAFF) ||
		(c >= 0x2F800 && c <= 0x2FA1F)
}

// wpmWords normalizes text and splits it into words (step 1 above).
func (n wpmNormalizer) wpmWords(text string) []string {
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for _, c := range decodeCpts(text) {
		if n.stripAccents {
			c = nfdFirst(c)
		}
		in := infoOf(c)
		if in.isSpace() {
			flush()
			continue
		}
		if c == 0 || c == 0xFFFD || in.cat == flagControl {
			continue
		}
		if n.stripAccents && in.cat == flagMark {
			continue
		}
		lc := c
		if n.lowercase {
			lc = toLower(c)
		}
		if in.isPunct() || (c < 0x7F && in.isSymbol()) || isCJKIdeograph(c) {
			flush()
			words = append(words, string(appendCpt(nil, lc)))
			continue
		}
		cur = appendCpt(cur, lc)
	}
	flush()
	return words
}

// wpm appends the WordPiece ids of one span of raw text to out.
func (t *Tokenizer) wpm(text string, out []int32) []int32 {
	for _, w := range t.wpmNorm.wpmWords(text) {
		word := "\u2581" + w
		start := len(out)
		ok := true
		for i := 0; i < len(word); {
			j := min(len(word), i+t.maxTextLen)
			for ; j > i; j-- {
				if id, found := t.toID[word[i:j]]; found {
					out = append(out, id)
					break
				}
			}
			if j == i {
				ok = false
				break
			}
			i = j
		}
		if !ok {
			out = append(out[:start], t.unk)
		}
	}
	return out
}

package tokenizer

import (
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"unicode/utf8"
)

// Fuzzing the tokenizer (issue 14): Encode must never panic or fail on any
// bytes, for every vocabulary the project ships tests for, and where the
// vocabulary can spell every byte, Decode(Encode(s)) must give s back for
// valid UTF-8. The corpus is testdata/fuzz/FuzzEncode (seeds plus every input
// that ever found a bug); run it longer with
//
//	go test ./runtime/tokenizer -run '^$' -fuzz FuzzEncode -fuzztime 10m

var (
	fuzzToksOnce sync.Once
	fuzzToks     []*Tokenizer
	fuzzNames    []string
)

// fuzzTokenizers loads every vocabulary under ../shared/vocab and the
// vocabularies of the shared models (one per distinct tokenizer model/pre).
func fuzzTokenizers(t testing.TB) ([]*Tokenizer, []string) {
	dir := sharedDir(t)
	fuzzToksOnce.Do(func() {
		var paths []string
		v, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
		m, _ := filepath.Glob(filepath.Join(dir, "models", "*.gguf"))
		paths = append(paths, v...)
		paths = append(paths, m...)
		sort.Strings(paths)
		seen := map[string]bool{}
		for _, p := range paths {
			if st, err := os.Stat(p); err != nil || st.Size() > 64<<20 {
				continue // big F32/F16 copies add no new vocabulary
			}
			tok := loadTok(t, p)
			key := tok.Model() + "/" + tok.Pre() + "/" + string(rune(tok.NumTokens()))
			if seen[key] {
				continue
			}
			seen[key] = true
			fuzzToks = append(fuzzToks, tok)
			fuzzNames = append(fuzzNames, filepath.Base(p))
		}
	})
	if len(fuzzToks) == 0 {
		t.Skip("no vocabularies found under ../shared")
	}
	return fuzzToks, fuzzNames
}

// byteComplete reports whether every byte 0..255 has a token of its own
// (SPM byte fallback <0xNN>, or byte-level BPE's 256 base symbols): only
// then can any UTF-8 text round-trip.
func byteComplete(tok *Tokenizer) bool {
	for b := 0; b < 256; b++ {
		if _, err := tok.byteToken(byte(b)); err != nil {
			return false
		}
	}
	return true
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "Hello world", "  leading and trailing  ", "\n\n\t", "ünïcödé ñ 日本語 😀",
		"<s>not special</s>", "<|endoftext|>", "a\x00b", "\xff\xfe invalid utf-8 \xc3",
		"12345678901234567890", "don't won't I'm", "    indented code()\n\treturn x;",
	} {
		f.Add(uint8(0), s, false)
		f.Add(uint8(3), s, true)
	}
	toks, names := fuzzTokenizers(f)
	complete := make([]bool, len(toks))
	for i, tok := range toks {
		complete[i] = byteComplete(tok)
	}
	f.Fuzz(func(t *testing.T, which uint8, text string, parseSpecial bool) {
		i := int(which) % len(toks)
		tok := toks[i]
		ids, err := tok.Encode(text, true, parseSpecial)
		if err != nil {
			if complete[i] {
				t.Fatalf("%s: Encode(%q) on a byte-complete vocabulary: %v", names[i], text, err)
			}
			return
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.NumTokens() {
				t.Fatalf("%s: Encode(%q) gave id %d outside the vocabulary (%d tokens)", names[i], text, id, tok.NumTokens())
			}
		}
		// Decoding any ids must not panic either.
		_ = tok.Detokenize(ids, true, false)
		if !complete[i] || !utf8.ValidString(text) {
			return
		}
		plain, err := tok.Encode(text, false, false)
		if err != nil {
			t.Fatalf("%s: Encode(%q, no specials): %v", names[i], text, err)
		}
		if got := tok.Decode(plain); got != text {
			t.Fatalf("%s: Decode(Encode(%q)) = %q", names[i], text, got)
		}
		// The stream decoder (what generation prints) agrees with Decode
		// and never emits a split UTF-8 sequence.
		d := tok.NewStreamDecoder()
		var out string
		for k, id := range plain {
			chunk := d.Add(id)
			if !utf8.ValidString(chunk) {
				t.Fatalf("%s: stream decoder emitted invalid UTF-8 %q at token %d of %q", names[i], chunk, k, text)
			}
			out += chunk
		}
		out += d.Flush()
		want := text
		if tok.AddSpacePrefix() && len(plain) > 0 && len(tok.Piece(plain[0])) > 0 && tok.Piece(plain[0])[0] == ' ' {
			want = " " + text // the stream decoder keeps the SPM prefix space; Decode drops it
		}
		if out != want {
			t.Fatalf("%s: stream decode %q, want %q", names[i], out, want)
		}
	})
}

package tokenizer

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/loader"
)

func vocabPath(t testing.TB, name string) string {
	return filepath.Join(sharedDir(t), "vocab", "ggml-vocab-"+name+".gguf")
}

// gpt2WithPre builds a tokenizer over the gpt-2 vocabulary with another
// pre-tokenizer (no vocabulary file exists for llama-bpe or qwen2).
func gpt2WithPre(t *testing.T, pre string) *Tokenizer {
	t.Helper()
	f, err := loader.Open(vocabPath(t, "gpt-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := VocabFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	v.Pre = pre
	tok, err := New(v)
	if err != nil {
		t.Fatalf("pre %q: %v", pre, err)
	}
	return tok
}

// TestPreTokenizerSplits checks hand-derived splits where the GPT-2, Llama 3
// and Qwen2 expressions differ.
func TestPreTokenizerSplits(t *testing.T) {
	cases := []struct {
		text                string
		gpt2, llama3, qwen2 []string
	}{
		{"12345",
			[]string{"12345"},
			[]string{"123", "45"},
			[]string{"1", "2", "3", "4", "5"}},
		{"in 2024 year",
			[]string{"in", " 2024", " year"},
			[]string{"in", " ", "202", "4", " year"},
			[]string{"in", " ", "2", "0", "2", "4", " year"}},
		{"I'M here, we're OK",
			[]string{"I", "'", "M", " here", ",", " we", "'re", " OK"},
			[]string{"I", "'M", " here", ",", " we", "'re", " OK"},
			[]string{"I", "'M", " here", ",", " we", "'re", " OK"}},
		{"Hello\n\nworld",
			[]string{"Hello", "\n", "\n", "world"},
			[]string{"Hello", "\n\n", "world"},
			[]string{"Hello", "\n\n", "world"}},
		{"$hello",
			[]string{"$", "hello"},
			[]string{"$hello"},
			[]string{"$hello"}},
		{"   leading",
			[]string{"  ", " leading"},
			[]string{"  ", " leading"},
			[]string{"  ", " leading"}},
		{"ok!!\nx",
			[]string{"ok", "!!", "\n", "x"},
			[]string{"ok", "!!\n", "x"},
			[]string{"ok", "!!\n", "x"}},
		{"x1234567y",
			[]string{"x", "1234567", "y"},
			[]string{"x", "123", "456", "7", "y"},
			[]string{"x", "1", "2", "3", "4", "5", "6", "7", "y"}},
		{"über café",
			[]string{"über", " café"},
			[]string{"über", " café"},
			[]string{"über", " café"}},
	}
	toks := map[string]*Tokenizer{
		"gpt2":   gpt2WithPre(t, "gpt-2"),
		"llama3": gpt2WithPre(t, "llama-bpe"),
		"qwen2":  gpt2WithPre(t, "qwen2"),
	}
	for _, c := range cases {
		for name, want := range map[string][]string{"gpt2": c.gpt2, "llama3": c.llama3, "qwen2": c.qwen2} {
			got, err := toks[name].PreTokenize(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s split of %q: got %q want %q", name, c.text, got, want)
			}
		}
	}
	// Llama 3 vocabularies add BOS by default, qwen2 / gpt-2 ones do not.
	if !toks["llama3"].AddBOS() || toks["qwen2"].AddBOS() || toks["gpt2"].AddBOS() {
		t.Errorf("AddBOS defaults: llama3 %v qwen2 %v gpt2 %v", toks["llama3"].AddBOS(), toks["qwen2"].AddBOS(), toks["gpt2"].AddBOS())
	}
	// the split drives the ids: Llama 3 digits group by three, qwen2 by one
	digits := func(name string) []int32 { return toks[name].mustEncode(t, "12345", false, false) }
	id := func(s string) int32 {
		v, ok := toks["gpt2"].ID(s)
		if !ok {
			t.Fatalf("gpt-2 vocab has no %q", s)
		}
		return v
	}
	if got, want := digits("llama3"), []int32{id("123"), id("45")}; !reflect.DeepEqual(got, want) {
		t.Errorf("llama3 ids of 12345: %v want %v", got, want)
	}
	if got, want := digits("qwen2"), []int32{id("1"), id("2"), id("3"), id("4"), id("5")}; !reflect.DeepEqual(got, want) {
		t.Errorf("qwen2 ids of 12345: %v want %v", got, want)
	}
}

// TestRoundTrip checks Decode(Encode(s)) == s on the test strings.
func TestRoundTrip(t *testing.T) {
	for _, name := range pairVocabs {
		tok, tests, _ := loadPairs(t, name)
		bad := 0
		for _, s := range tests {
			if got := tok.Decode(tok.mustEncode(t, s, false, false)); got != s {
				bad++
				t.Errorf("%s: Decode(Encode(%q)) = %q", name, s, got)
			}
		}
		t.Logf("%s: %d/%d round trips exact", name, len(tests)-bad, len(tests))
	}
}

// TestStreamDecoderSplitsUTF8 feeds multi-byte characters that the
// vocabulary only has as separate byte tokens.
func TestStreamDecoderSplitsUTF8(t *testing.T) {
	for _, name := range []string{"llama-spm", "gpt-2"} {
		tok := loadTok(t, vocabPath(t, name))
		text := "llama 🦙 and 🤗🤗 and 你好"
		ids := tok.mustEncode(t, text, false, false)
		d := tok.NewStreamDecoder()
		var out string
		held := 0
		for _, id := range ids {
			s := d.Add(id)
			if !utf8.ValidString(s) {
				t.Errorf("%s: Add(%d) emitted invalid UTF-8 %q", name, id, s)
			}
			if d.Pending() > 0 {
				held++
			}
			out += s
		}
		out += d.Flush()
		want := text
		if tok.AddSpacePrefix() {
			want = " " + text
		}
		if out != want {
			t.Errorf("%s: streamed %q want %q", name, out, want)
		}
		if held == 0 {
			t.Errorf("%s: no token ended inside a character; the test does not exercise holding", name)
		}
	}
	// bytes that can never be completed come out as U+FFFD, and Flush
	// releases an unfinished sequence
	tok := loadTok(t, vocabPath(t, "llama-spm"))
	b := func(x byte) int32 {
		id, err := tok.byteToken(x)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	d := tok.NewStreamDecoder()
	if s := d.Add(b(0xF0)); s != "" {
		t.Errorf("lead byte emitted %q", s)
	}
	if s := d.Add(b(0x9F)); s != "" {
		t.Errorf("partial sequence emitted %q", s)
	}
	if s := d.Add(b('A')); s != "\uFFFDA" && s != "\uFFFD\uFFFDA" {
		t.Errorf("broken sequence gave %q", s)
	}
	d.Add(b(0xE4))
	if s := d.Flush(); s != "\uFFFD" {
		t.Errorf("Flush of an unfinished sequence gave %q", s)
	}
}

func TestSpecialTokens(t *testing.T) {
	spm := loadTok(t, vocabPath(t, "llama-spm"))
	hi, _ := spm.Encode("Hi", false, false)
	got, _ := spm.Encode("<s>Hi</s>", true, true)
	want := append(append([]int32{1, 1}, hi...), 2)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spm parse special: got %v want %v", got, want)
	}
	got, _ = spm.Encode("<s>", false, false)
	if reflect.DeepEqual(got, []int32{1}) {
		t.Errorf("spm: <s> parsed as special with parseSpecial=false")
	}
	if !spm.IsEOG(2) || spm.IsEOG(1) || spm.BOS() != 1 || spm.EOS() != 2 {
		t.Errorf("spm ids: bos %d eos %d eog(2) %v", spm.BOS(), spm.EOS(), spm.IsEOG(2))
	}
	if string(spm.Piece(1)) != "<s>" || string(spm.Piece(spm.mustID(t, "▁Hello"))) != " Hello" {
		t.Errorf("spm pieces: %q %q", spm.Piece(1), spm.Piece(spm.mustID(t, "▁Hello")))
	}

	g := loadTok(t, vocabPath(t, "gpt-2"))
	a, _ := g.Encode("a", false, false)
	bb, _ := g.Encode("b", false, false)
	got, _ = g.Encode("a<|endoftext|>b", true, true)
	want = append(append(append([]int32{}, a...), 50256), bb...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gpt-2 parse special: got %v want %v", got, want)
	}
	got, _ = g.Encode("a<|endoftext|>b", false, false)
	for _, id := range got {
		if id == 50256 {
			t.Errorf("gpt-2: <|endoftext|> parsed with parseSpecial=false: %v", got)
		}
	}
	if !g.IsEOG(50256) || g.AddBOS() {
		t.Errorf("gpt-2: eog %v addbos %v", g.IsEOG(50256), g.AddBOS())
	}

	// phi-3: special tokens strip the whitespace to their right
	p := loadTok(t, vocabPath(t, "phi-3"))
	user := p.mustID(t, "<|user|>")
	end := p.mustID(t, "<|end|>")
	hi3, _ := p.Encode("Hi", false, false)
	got, _ = p.Encode("<|user|>\n Hi<|end|>", false, true)
	want = append(append([]int32{user}, hi3...), end)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("phi-3 rstrip: got %v want %v", got, want)
	}
	if !p.IsEOG(end) || !p.IsEOG(p.EOS()) || p.EOS() != p.mustID(t, "<|endoftext|>") {
		t.Errorf("phi-3 EOG: end %v eos %d", p.IsEOG(end), p.EOS())
	}

	// starcoder: the FIM pad token ends generation like in llama.cpp
	sc := loadTok(t, vocabPath(t, "starcoder"))
	for _, w := range []string{"<|endoftext|>", "<fim_pad>"} {
		if !sc.IsEOG(sc.mustID(t, w)) {
			t.Errorf("starcoder: %s not EOG", w)
		}
	}
	if sc.IsEOG(sc.mustID(t, "<fim_prefix>")) {
		t.Errorf("starcoder: <fim_prefix> is EOG")
	}

	// mpt: user-defined tokens (runs of spaces) are matched even without
	// parseSpecial
	m := loadTok(t, vocabPath(t, "mpt"))
	for id := int32(0); int(id) < m.NumTokens(); id++ {
		if m.attrs[id]&attrUserDefined != 0 {
			got, _ := m.Encode("x"+m.TokenText(id)+"x", false, false)
			found := false
			for _, g := range got {
				found = found || g == id
			}
			if !found {
				t.Errorf("mpt: user-defined token %d %q not matched: %v", id, m.TokenText(id), got)
			}
			break
		}
	}
}

// mustEncode is Encode, failing the test on an error.
func (t *Tokenizer) mustEncode(tb testing.TB, s string, addSpecial, parseSpecial bool) []int32 {
	tb.Helper()
	ids, err := t.Encode(s, addSpecial, parseSpecial)
	if err != nil {
		tb.Fatalf("Encode(%q): %v", s, err)
	}
	return ids
}

func (t *Tokenizer) mustID(tb testing.TB, s string) int32 {
	tb.Helper()
	id, ok := t.ID(s)
	if !ok {
		tb.Fatalf("vocabulary has no %q", s)
	}
	return id
}

// TestOtherVocabs loads the vocabularies without test pairs.
func TestOtherVocabs(t *testing.T) {
	for _, name := range []string{"gpt-neox", "baichuan"} {
		tok := loadTok(t, vocabPath(t, name))
		s := "Hello world! 123 ünïcödé 🦙\n\ttabs"
		ids, err := tok.Encode(s, true, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ids) < 5 {
			t.Errorf("%s: only %d tokens: %v", name, len(ids), ids)
		}
		plain, _ := tok.Encode(s, false, false)
		if got := tok.Decode(plain); got != s {
			t.Errorf("%s: round trip %q", name, got)
		}
		t.Logf("%s (%s, %d tokens): %d ids, bos %d eos %d addBOS %v", name, tok.Model(), tok.NumTokens(), len(ids), tok.BOS(), tok.EOS(), tok.AddBOS())
	}
}

func TestDetokenizeCleanup(t *testing.T) {
	g := loadTok(t, vocabPath(t, "gpt-2"))
	ids, _ := g.Encode("Hello , world . It ' s", false, false)
	if got, want := g.Detokenize(ids, false, true), "Hello, world. It's"; got != want {
		t.Errorf("Detokenize clean-up: %q want %q", got, want)
	}
	spm := loadTok(t, vocabPath(t, "llama-spm"))
	ids, _ = spm.Encode("Hello world", true, false)
	// llama.cpp keeps the prefix space when it removes the BOS
	if got := spm.Detokenize(ids, true, false); got != " Hello world" {
		t.Errorf("spm Detokenize(remove special): %q", got)
	}
	if got := spm.Detokenize(ids, false, true); got != "<s> Hello world" {
		t.Errorf("spm Detokenize(keep special): %q", got)
	}
}

// TestConcurrentEncode shares one tokenizer (and the process-wide compiled
// pre-tokenizer) between goroutines.
func TestConcurrentEncode(t *testing.T) {
	tok := loadTok(t, vocabPath(t, "deepseek-llm"))
	text := "Hello world! 12345 ünïcödé 你好 🦙\n\n  done"
	want := tok.mustEncode(t, text, true, true)
	errs := make(chan string, 8)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 50; i++ {
				got, err := tok.Encode(text, true, true)
				if err != nil || !reflect.DeepEqual(got, want) {
					errs <- "concurrent Encode differs"
					return
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestAllPreTokenizersCompile compiles every supported pre-tokenizer and
// splits a sample with it.
func TestAllPreTokenizersCompile(t *testing.T) {
	for kind := range preRegexes {
		p, err := newPretokenizer(kind)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		words, err := p.split("Hello, world! 123 ünï 你好 \n\n end  ")
		if err != nil || len(words) < 3 {
			t.Errorf("%s: split gave %d words, %v", kind, len(words), err)
		}
	}
	for _, pre := range []string{"default", "gpt-2", "llama-bpe", "qwen2", "starcoder", "refact", "deepseek-llm",
		"deepseek-coder", "falcon", "mpt", "poro-chat", "bloom", "dbrx", "stablelm2", "command-r"} {
		if _, err := lookupPre(pre); err != nil {
			t.Errorf("pre %q: %v", pre, err)
		}
	}
	if _, err := lookupPre("no-such-pre"); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
}

// TestQwen35PreTokenizer: Qwen3.5's expression is Qwen2's with combining
// marks (\p{M}) counted as letters, so a decomposed accent stays in its
// word (hand-derived from llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35 regex).
func TestQwen35PreTokenizer(t *testing.T) {
	words := func(kind, text string) []string {
		p, err := newPretokenizer(kind)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := p.split(text)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range ws {
			var r []rune
			for _, c := range w {
				r = append(r, rune(c))
			}
			out = append(out, string(r))
		}
		return out
	}
	pi, err := lookupPre("qwen35")
	if err != nil || pi.kind != "qwen35" || pi.cleanSpaces {
		t.Fatalf("lookupPre(qwen35) = %+v, %v", pi, err)
	}
	for _, c := range []struct {
		text          string
		qwen2, qwen35 []string
	}{
		{"Cafe\u0301s ok", []string{"Cafe", "\u0301s", " ok"}, []string{"Cafe\u0301s", " ok"}},
		{"a \u0308b 12", []string{"a", " \u0308", "b", " ", "1", "2"}, []string{"a", " \u0308b", " ", "1", "2"}},
		{"I'M here", []string{"I", "'M", " here"}, []string{"I", "'M", " here"}},
	} {
		if got := words("qwen2", c.text); !slices.Equal(got, c.qwen2) {
			t.Errorf("qwen2 %q: %q, want %q", c.text, got, c.qwen2)
		}
		if got := words("qwen35", c.text); !slices.Equal(got, c.qwen35) {
			t.Errorf("qwen35 %q: %q, want %q", c.text, got, c.qwen35)
		}
	}
}

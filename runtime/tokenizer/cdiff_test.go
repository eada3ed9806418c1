package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialLlama runs random byte strings (invalid UTF-8 included)
// through a llama.cpp build (testdata/llama_tokenize.c) and compares Encode
// with every add_special / parse_special combination, and Detokenize with
// every remove_special / unparse_special one. It runs only when
// WOOLLY_LLAMA_TOKENIZE names the built harness.
func TestDifferentialLlama(t *testing.T) {
	bin := os.Getenv("WOOLLY_LLAMA_TOKENIZE")
	if bin == "" {
		t.Skip("set WOOLLY_LLAMA_TOKENIZE to a built testdata/llama_tokenize.c to run")
	}
	n := 200
	if s := os.Getenv("WOOLLY_LLAMA_TOKENIZE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	var paths []string
	if p := os.Getenv("WOOLLY_LLAMA_TOKENIZE_MODELS"); p != "" {
		paths = strings.Split(p, ",")
	} else {
		paths, _ = filepath.Glob(filepath.Join(sharedDir(t), "vocab", "*.gguf"))
		paths = append(paths, filepath.Join(sharedDir(t), "models", "stories260K-F32.gguf"))
	}
	rng := rand.New(rand.NewSource(7))
	words := []string{"hello", " world", "The", "I'm", "WE'RE", "12345", "3.14", "über", "中文", "🦙", "e\u0301", " ", "  ", "\n", "\n\n",
		"\t", "\r\n", "\u00a0", "\u3000", "▁", "<0x41>", "'s", "$", "~", "...", "<", ">", "|", "\x00"}
	for _, path := range paths {
		tok := loadTok(t, path)
		var specials []string
		for id := 0; id < tok.NumTokens(); id++ {
			if tok.attrs[id]&(attrControl|attrUserDefined|attrUnknown) != 0 {
				specials = append(specials, tok.texts[id])
			}
		}
		type tc struct {
			flags uint32
			text  string
		}
		var cases []tc
		var in bytes.Buffer
		for i := 0; i < n; i++ {
			var b strings.Builder
			for k := rng.Intn(12) + 1; k > 0; k-- {
				switch r := rng.Float64(); {
				case r < 0.5:
					b.WriteString(words[rng.Intn(len(words))])
				case r < 0.6 && len(specials) > 0:
					b.WriteString(specials[rng.Intn(len(specials))])
				case r < 0.75:
					for j := rng.Intn(3) + 1; j > 0; j-- {
						b.WriteByte(byte(0x80 + rng.Intn(0x80)))
					}
				case r < 0.85:
					b.WriteRune(rune(rng.Intn(0x30000)))
				default:
					b.WriteString(strconv.Itoa(rng.Intn(1 << 20)))
				}
			}
			c := tc{flags: uint32(rng.Intn(4)), text: b.String()}
			if beyondUnicode(c.text) {
				// llama.cpp aborts (uncaught "invalid codepoint") on byte
				// sequences that decode past U+10FFFF; Woolly uses U+FFFD
				i--
				continue
			}
			cases = append(cases, c)
			binary.Write(&in, binary.LittleEndian, [2]uint32{c.flags, uint32(len(c.text))})
			in.WriteString(c.text)
		}
		tmp := filepath.Join(t.TempDir(), "cases.bin")
		if d := os.Getenv("WOOLLY_LLAMA_TOKENIZE_KEEP"); d != "" {
			tmp = filepath.Join(d, filepath.Base(path)+".cases.bin")
		}
		if err := os.WriteFile(tmp, in.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, path, tmp).Output()
		if err != nil {
			t.Fatalf("%s: harness: %v", path, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		bad := 0
		for _, c := range cases {
			if !sc.Scan() {
				t.Fatalf("%s: harness output ended early", path)
			}
			var want []int32
			for _, f := range strings.Fields(sc.Text())[1:] {
				v, _ := strconv.Atoi(f)
				want = append(want, int32(v))
			}
			got, err := tok.Encode(c.text, c.flags&1 != 0, c.flags&2 != 0)
			ok := err == nil && slices.Equal(got, want)
			if !ok && bad < 3 {
				t.Errorf("%s flags %d %q:\n got %v\nwant %v", filepath.Base(path), c.flags, c.text, got, want)
			}
			for k := 0; k < 4; k++ {
				if !sc.Scan() {
					t.Fatalf("%s: harness output ended early", path)
				}
				line := sc.Text()
				wantD, _ := hex.DecodeString(strings.TrimPrefix(line[strings.IndexByte(line, ' ')+1:], ""))
				gotD := tok.Detokenize(want, k&1 != 0, k&2 != 0)
				if gotD != string(wantD) {
					if ok && bad < 3 {
						t.Errorf("%s Detokenize(%v, remove=%v, unparse=%v): %q want %q", filepath.Base(path), want, k&1 != 0, k&2 != 0, gotD, wantD)
					}
					ok = false
				}
			}
			if !ok {
				bad++
			}
		}
		t.Logf("%s: %d/%d cases match", filepath.Base(path), len(cases)-bad, len(cases))
	}
}

func beyondUnicode(s string) bool {
	for _, c := range decodeCpts(s) {
		if c > 0x10ffff {
			return true
		}
	}
	return false
}

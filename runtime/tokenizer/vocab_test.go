package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/woolly-llm/woolly/loader"
)

func sharedDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("shared data not found at %s (needs ../shared beside the repo): %v", d, err)
	}
	return d
}

var (
	tokCacheMu sync.Mutex
	tokCache   = map[string]*Tokenizer{}
)

// loadTok opens a GGUF and builds its tokenizer (cached per path: tests only
// read tokenizers).
func loadTok(t testing.TB, path string) *Tokenizer {
	t.Helper()
	tokCacheMu.Lock()
	defer tokCacheMu.Unlock()
	if tok, ok := tokCache[path]; ok {
		return tok
	}
	f, err := loader.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer for %s: %v", path, err)
	}
	tokCache[path] = tok
	return tok
}

var pairVocabs = []string{"llama-spm", "gpt-2", "phi-3", "starcoder", "deepseek-llm", "refact", "falcon", "mpt", "deepseek-coder"}

// readPairs splits a .inp file like llama.cpp's test-tokenizer-0 and reads
// the matching .out lines.
func readPairs(t testing.TB, base string) ([]string, [][]int32) {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	outb, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	var tests []string
	s := string(inp)
	for {
		i := strings.Index(s, sep)
		if i < 0 {
			break
		}
		tests = append(tests, s[:i])
		s = s[i+len(sep):]
	}
	lines := strings.Split(strings.TrimSuffix(string(outb), "\n"), "\n")
	if len(lines) != len(tests) {
		t.Fatalf("%s: %d inputs but %d output lines", base, len(tests), len(lines))
	}
	want := make([][]int32, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			want[i] = append(want[i], int32(v))
		}
	}
	return tests, want
}

// loadPairs loads the shared vocabulary name and its llama.cpp test pairs.
func loadPairs(t testing.TB, name string) (tok *Tokenizer, tests []string, want [][]int32) {
	t.Helper()
	base := vocabPath(t, name)
	tok = loadTok(t, base)
	tests, want = readPairs(t, base)
	return tok, tests, want
}

// TestVocabPairs checks llama.cpp's tokenizer test vectors: no BOS/EOS, no
// special-token parsing.
func TestVocabPairs(t *testing.T) {
	for _, name := range pairVocabs {
		t.Run(name, func(t *testing.T) {
			tok, tests, want := loadPairs(t, name)
			pass := 0
			for i, s := range tests {
				got, err := tok.Encode(s, false, false)
				if err != nil {
					t.Errorf("test %d %q: %v", i, s, err)
					continue
				}
				if !slices.Equal(got, want[i]) {
					t.Errorf("test %d %q:\n got %v\nwant %v", i, s, got, want[i])
					continue
				}
				pass++
			}
			t.Logf("%s: %d/%d pairs match", name, pass, len(tests))
		})
	}
}

// MaxTokenBytes bounds the bytes per token of every test vector, so that a
// caller may refuse text longer than n × MaxTokenBytes bytes before
// tokenizing it; a run of the longest token's text is one token per copy.
func TestMaxTokenBytes(t *testing.T) {
	for _, name := range pairVocabs {
		t.Run(name, func(t *testing.T) {
			tok, tests, _ := loadPairs(t, name)
			mb := tok.MaxTokenBytes()
			longest := ""
			for _, w := range tok.texts {
				if len(w) > len(longest) {
					longest = w
				}
			}
			if mb != len(longest) || mb < 1 {
				t.Fatalf("MaxTokenBytes %d, longest text %d", mb, len(longest))
			}
			for _, s := range append(tests, strings.Repeat(" ", 5000), strings.Repeat("\n", 3000), strings.Repeat("a", 4000)) {
				for _, special := range []bool{false, true} {
					ids, err := tok.Encode(s, true, special)
					if err != nil {
						t.Fatal(err)
					}
					if len(s) > len(ids)*mb {
						t.Errorf("%q: %d bytes in %d tokens of at most %d bytes", s, len(s), len(ids), mb)
					}
				}
			}
			t.Logf("%s: %d bytes at most per token", name, mb)
		})
	}
}

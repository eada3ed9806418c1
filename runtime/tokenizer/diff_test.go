package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// TestDifferential compares Encode with ids produced by a llama.cpp build on
// the same vocabularies. It runs only when WOOLLY_TOKENIZER_DIFF names a
// JSON file of [{"vocab": "gpt-2", "text": "...", "special": true,
// "ids": [...]}] (add_special = false; "special" is parse_special).
func TestDifferential(t *testing.T) {
	var cases []struct {
		Vocab   string  `json:"vocab"`
		Path    string  `json:"path"` // optional GGUF path; default shared vocab/ggml-vocab-<vocab>.gguf
		Text    string  `json:"text"`
		Special bool    `json:"special"`
		IDs     []int32 `json:"ids"`
	}
	readEnvJSON(t, "WOOLLY_TOKENIZER_DIFF", "a file of llama.cpp tokenizations", &cases)
	dir := filepath.Join(sharedDir(t), "vocab")
	toks := map[string]*Tokenizer{}
	bad := map[string]int{}
	total := map[string]int{}
	for _, c := range cases {
		tok := toks[c.Vocab]
		if tok == nil {
			p := c.Path
			if p == "" {
				p = filepath.Join(dir, "ggml-vocab-"+c.Vocab+".gguf")
			}
			tok = loadTok(t, p)
			toks[c.Vocab] = tok
		}
		total[c.Vocab]++
		got, err := tok.Encode(c.Text, false, c.Special)
		if err != nil {
			t.Errorf("%s %q: %v", c.Vocab, c.Text, err)
			continue
		}
		if !slices.Equal(got, c.IDs) {
			bad[c.Vocab]++
			if bad[c.Vocab] <= 3 {
				t.Errorf("%s special=%v %q:\n got %v\nwant %v", c.Vocab, c.Special, c.Text, got, c.IDs)
			}
		}
	}
	for v, n := range total {
		t.Logf("%s: %d/%d match", v, n-bad[v], n)
	}
}

// TestDifferentialPieces compares Detokenize([id], false, true) for every
// token with llama_detokenize output from a llama.cpp build. It runs only when
// WOOLLY_TOKENIZER_PIECES names a JSON file {"<gguf path>": {"pieces":
// [...], "bos": n, "eos": n, "eot": n, "eog": [...]}}. Pieces that are not valid UTF-8 are
// skipped (the producer's strings replaced their bytes).
func TestDifferentialPieces(t *testing.T) {
	var ref map[string]struct {
		Pieces []string `json:"pieces"`
		BOS    *int32   `json:"bos"`
		EOS    *int32   `json:"eos"`
		EOT    *int32   `json:"eot"`
		EOG    []int32  `json:"eog"` // optional: every id llama_vocab_is_eog accepts
	}
	readEnvJSON(t, "WOOLLY_TOKENIZER_PIECES", "a file of llama.cpp pieces", &ref)
	for path, r := range ref {
		tok := loadTok(t, path)
		if len(r.Pieces) != tok.NumTokens() {
			t.Errorf("%s: %d pieces for %d tokens", path, len(r.Pieces), tok.NumTokens())
			continue
		}
		bad, skipped := 0, 0
		for id, want := range r.Pieces {
			got := tok.Detokenize([]int32{int32(id)}, false, true)
			if !utf8.ValidString(got) {
				skipped++
				continue
			}
			if got != want {
				bad++
				if bad <= 3 {
					t.Errorf("%s: token %d %q: got %q want %q", path, id, tok.TokenText(int32(id)), got, want)
				}
			}
		}
		id := func(p *int32) int32 {
			if p == nil {
				return -1
			}
			return *p
		}
		if tok.BOS() != id(r.BOS) || tok.EOS() != id(r.EOS) || tok.EOT() != id(r.EOT) {
			t.Errorf("%s: bos/eos/eot %d %d %d, want %d %d %d", path, tok.BOS(), tok.EOS(), tok.EOT(), id(r.BOS), id(r.EOS), id(r.EOT))
		}
		if r.EOG != nil && !slices.Equal(tok.EOGs(), r.EOG) {
			t.Errorf("%s: EOG ids %v, want %v", path, tok.EOGs(), r.EOG)
		}
		t.Logf("%s: %d/%d pieces match (%d not valid UTF-8, skipped)", filepath.Base(path), len(r.Pieces)-bad-skipped, len(r.Pieces)-skipped, skipped)
	}
}

// readEnvJSON decodes into v the JSON file the environment variable env
// names, and skips the test when env is not set (what: what the file holds).
func readEnvJSON(t *testing.T, env, what string, v any) {
	t.Helper()
	fn := os.Getenv(env)
	if fn == "" {
		t.Skipf("set %s to %s to run", env, what)
	}
	b, err := os.ReadFile(fn)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

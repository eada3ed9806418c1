package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

type refEntry struct {
	File      string  `json:"file"`
	AddBOS    bool    `json:"add_bos"`
	PromptIDs []int32 `json:"prompt_ids"`
}

// TestRefPromptIDs checks the ids llama.cpp fed each reference model
// (llama_tokenize with add_special = the vocab's add_bos, parse_special).
func TestRefPromptIDs(t *testing.T) {
	dir := sharedDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "ref", "summary.json"))
	if err != nil {
		t.Skipf("no ref/summary.json: %v", err)
	}
	var sum map[string]map[string]refEntry
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	models := slices.Sorted(maps.Keys(sum))
	n := 0
	for _, m := range models {
		path := filepath.Join(dir, "models", m+".gguf")
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: model file missing: %v", m, err)
			continue
		}
		tok := loadTok(t, path)
		for prompt, e := range sum[m] {
			if tok.AddBOS() != e.AddBOS {
				t.Errorf("%s: AddBOS() = %v, reference add_bos = %v", m, tok.AddBOS(), e.AddBOS)
			}
			got, err := tok.Encode(prompt, true, true)
			if err != nil {
				t.Errorf("%s %q: %v", m, prompt, err)
				continue
			}
			if !slices.Equal(got, e.PromptIDs) {
				t.Errorf("%s %q: got %v want %v", m, prompt, got, e.PromptIDs)
				continue
			}
			n++
		}
	}
	t.Logf("%d model/prompt pairs match", n)
}

type refLogits struct {
	Model     string `json:"model"`
	Positions []struct {
		Token    int32  `json:"token"`
		PieceHex string `json:"piece_hex"`
	} `json:"positions"`
	Greedy struct {
		IDs     []int32 `json:"ids"`
		TextHex string  `json:"text_hex"`
		Steps   []struct {
			ID       int32  `json:"id"`
			PieceHex string `json:"piece_hex"`
		} `json:"steps"`
	} `json:"greedy"`
}

// TestRefPieces checks Piece against llama_token_to_piece(special=true) for
// every prompt and greedy token in ref/logits, and the stream decoder against
// the greedy text.
func TestRefPieces(t *testing.T) {
	dir := sharedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "ref", "logits", "*.json"))
	if len(files) == 0 {
		t.Skip("no ref/logits")
	}
	toks := map[string]*Tokenizer{}
	checked := 0
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		var r refLogits
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		tok := toks[r.Model]
		if tok == nil {
			tok = loadTok(t, filepath.Join(dir, r.Model))
			toks[r.Model] = tok
		}
		check := func(id int32, want string) {
			if got := hex.EncodeToString(tok.Piece(id)); got != want {
				t.Errorf("%s: Piece(%d) = %s, want %s", filepath.Base(fn), id, got, want)
			}
			checked++
		}
		for _, p := range r.Positions {
			check(p.Token, p.PieceHex)
		}
		for _, s := range r.Greedy.Steps {
			check(s.ID, s.PieceHex)
		}
		d := tok.NewStreamDecoder()
		var text []byte
		for _, id := range r.Greedy.IDs {
			text = append(text, d.Add(id)...)
		}
		text = append(text, d.Flush()...)
		want, _ := hex.DecodeString(r.Greedy.TextHex)
		if string(text) != string(want) && utf8.Valid(want) {
			t.Errorf("%s: streamed greedy text %q, want %q", filepath.Base(fn), text, want)
		}
	}
	t.Logf("%d pieces checked in %d files", checked, len(files))
}

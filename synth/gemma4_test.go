package synth

import (
	"strings"
	"testing"
)

// TestGemma4Vocab: the built-in Gemma 4-style vocabulary has no repeated
// token, its specials and byte tokens where the metadata says, a token for
// every merge's result, and only merges of existing tokens; it is the same
// on every call.
func TestGemma4Vocab(t *testing.T) {
	toks, types, merges := gemma4Vocab(400)
	if len(toks) != len(types) || len(merges) == 0 {
		t.Fatalf("%d tokens, %d types, %d merges", len(toks), len(types), len(merges))
	}
	ids := map[string]int{}
	for i, s := range toks {
		if _, dup := ids[s]; dup {
			t.Fatalf("token %q repeated", s)
		}
		ids[s] = i
	}
	for s, id := range map[string]int{"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<0x00>": 10, "<0xFF>": 265, "▁": 266} {
		if ids[s] != id || (s != "▁" && types[id] == 1) {
			t.Errorf("%q: id %d type %d, want id %d", s, ids[s], types[ids[s]], id)
		}
	}
	for _, m := range merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok {
			t.Fatalf("merge %q has no space", m)
		}
		for _, s := range []string{a, b, a + b} {
			if _, ok := ids[s]; !ok {
				t.Errorf("merge %q: %q is not a token", m, s)
			}
		}
	}
	toks2, _, merges2 := gemma4Vocab(400)
	if strings.Join(toks, "\x00") != strings.Join(toks2, "\x00") || strings.Join(merges, "\x00") != strings.Join(merges2, "\x00") {
		t.Error("two calls built different vocabularies")
	}
}

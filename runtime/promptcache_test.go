package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

func promptCacheFile(t *testing.T, m *Model, toks []int32, n int) []byte {
	t.Helper()
	s := newSession(t, m, 64)
	evalAll(t, s, toks)
	var b bytes.Buffer
	if err := s.WritePromptCache(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A session read from a prompt cache file continues exactly as the session
// that wrote it: bit-identical logits, and Generate evaluates only the
// tokens after the shared prefix, with the same greedy tokens.
func TestPromptCacheRoundTrip(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{Threads: 1, PrefixCache: Ptr(int64(0))}) // reuse from the file only
	toks, err := m.Tokenizer().Encode("Once upon a time there was a little girl named Lily. She liked to play outside", true, true)
	if err != nil {
		t.Fatal(err)
	}
	k := 12
	file := promptCacheFile(t, m, toks[:k], k)

	a := newSession(t, m, 64)
	evalAll(t, a, toks[:k])
	want := slices.Clone(evalAll(t, a, toks[k:]))
	b := newSession(t, m, 64)
	if err := b.ReadPromptCache(bytes.NewReader(file), int64(len(file))); err != nil {
		t.Fatal(err)
	}
	if b.Pos() != k || !slices.Equal(b.Tokens(), toks[:k]) {
		t.Fatalf("restored %d positions %v, want %v", b.Pos(), b.Tokens(), toks[:k])
	}
	if got := evalAll(t, b, toks[k:]); !slices.Equal(got, want) {
		t.Errorf("logits after the restored prefix differ from the writer's")
	}

	opts := GenerateOptions{Tokens: toks, MaxTokens: 10, Sampler: SamplerOptions{Temperature: 0}}
	fresh, err := m.Generate(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newSession(t, m, 64)
	if err := c.ReadPromptCache(bytes.NewReader(file), int64(len(file))); err != nil {
		t.Fatal(err)
	}
	res, err := c.Generate(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens != k || !slices.Equal(res.Tokens, fresh.Tokens) || len(res.Tokens) == 0 {
		t.Errorf("from the file: %d cached, tokens %v; without: tokens %v", res.CachedTokens, res.Tokens, fresh.Tokens)
	}
}

// Files of another model, damaged, truncated or lying are refused with an
// error naming the problem, before rows are read when the header says so,
// and leave the session empty.
func TestPromptCacheRefused(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{Threads: 1})
	other := loadShared(t, "stories260K-F32", LoadOptions{Threads: 1})
	toks := []int32{1, 403, 407, 261, 378, 383, 286, 261}
	good := promptCacheFile(t, m, toks, len(toks))
	foreign := promptCacheFile(t, other, toks, len(toks))
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"foreign", foreign, "another model"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"padded", append(slices.Clone(good), 0), "truncated"},
		{"short", good[:20], "shorter than a header"},
		{"magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), "not a Woolly prompt cache"},
		{"version", edit(func(b []byte) []byte { b[8] = 9; return b }), "version 9"},
		{"row flipped", edit(func(b []byte) []byte { b[len(b)-40] ^= 1; return b }), "checksum mismatch"},
		{"token out of vocab", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[promptCacheHeader:], 1<<30)
			return b
		}), "not in the vocabulary"},
		{"too many tokens", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[promptCacheHeader-4:], 1<<31)
			return b
		}), "do not fit the context"},
		{"kv dim", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[promptCacheHeader-16:], 7)
			return b
		}), "KV dim 7"},
	} {
		s := newSession(t, m, 64)
		evalAll(t, s, toks[:3])
		err := s.ReadPromptCache(bytes.NewReader(c.file), int64(len(c.file)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "prompt cache") {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
		if s.Pos() != 0 && s.Pos() != 3 {
			t.Errorf("%s: session left at %d positions", c.name, s.Pos())
		}
	}
}

// A recurrent model's state is not in the file: refused, not half saved.
func TestPromptCacheRecurrentRefused(t *testing.T) {
	m := loadPath(t, qwen35Mini(t), LoadOptions{Threads: 1})
	s := newSession(t, m, 32)
	evalAll(t, s, []int32{1, 2, 3})
	var b bytes.Buffer
	if err := s.WritePromptCache(&b, 3); err == nil || !strings.Contains(err.Error(), "recurrent state") {
		t.Errorf("write: %v", err)
	}
	if err := s.PromptCacheSupported(); err == nil {
		t.Error("PromptCacheSupported: nil for qwen35")
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
)

type pcRun struct {
	PromptCount  int     `json:"prompt_count"`
	CachedTokens int     `json:"cached_tokens"`
	Tokens       []int32 `json:"tokens"`
}

func pcMain(t *testing.T, args ...string) pcRun {
	t.Helper()
	stdout, stderr, code := rtMain(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var r pcRun
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	return r
}

// run --prompt-cache FILE: the second run evaluates only the tokens after
// the prefix it shares with the first, with the greedy tokens of a run
// without the file; --prompt-cache-ro leaves the file as it was; a damaged
// or foreign file is an error naming the flag.
func TestRunPromptCache(t *testing.T) {
	dir := shared.Dir(t)
	model := filepath.Join(dir, "models", "stories260K-Q8_0.gguf")
	file := filepath.Join(t.TempDir(), "prompt.cache")
	p1 := "Once upon a time there was a little girl named Lily. She loved to play"
	p2 := p1 + " outside with her dog"
	common := []string{"run", "-m", model, "-n", "12", "--temp", "0", "--json"}

	first := pcMain(t, append(common, "-p", p1, "--prompt-cache", file)...)
	if first.CachedTokens != 0 {
		t.Errorf("first run: %d cached tokens", first.CachedTokens)
	}
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	plain := pcMain(t, append(common, "-p", p2)...)
	cached := pcMain(t, append(common, "-p", p2, "--prompt-cache", file, "--prompt-cache-ro")...)
	if cached.CachedTokens != first.PromptCount || cached.PromptCount != plain.PromptCount {
		t.Errorf("second run: %d of %d prompt tokens cached, want %d", cached.CachedTokens, cached.PromptCount, first.PromptCount)
	}
	if !slices.Equal(cached.Tokens, plain.Tokens) || len(plain.Tokens) == 0 {
		t.Errorf("tokens with the cache %v, without %v", cached.Tokens, plain.Tokens)
	}
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("--prompt-cache-ro changed the file (%v)", err)
	}
	// Without -ro the file now holds the longer prompt.
	pcMain(t, append(common, "-p", p2, "--prompt-cache", file)...)
	third := pcMain(t, append(common, "-p", p2+" and", "--prompt-cache", file)...)
	if third.CachedTokens != plain.PromptCount {
		t.Errorf("third run: %d cached, want %d", third.CachedTokens, plain.PromptCount)
	}

	// Refusals: damaged, truncated, another model's file; -ro alone.
	other := filepath.Join(t.TempDir(), "other.cache")
	pcMain(t, "run", "-m", filepath.Join(dir, "models", "stories260K-F32.gguf"), "-n", "1", "--json", "-p", p1, "--prompt-cache", other)
	damaged := slices.Clone(saved)
	damaged[len(damaged)-100] ^= 0x40
	bad := filepath.Join(t.TempDir(), "bad.cache")
	for _, c := range []struct {
		data []byte
		want string
	}{
		{damaged, "checksum"},
		{saved[:len(saved)/2], "truncated"},
		{[]byte(strings.Repeat("not a cache file. ", 20)), "not a Woolly prompt cache"},
	} {
		if err := os.WriteFile(bad, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := rtMain(t, append(common, "-p", p2, "--prompt-cache", bad)...)
		if code == 0 || !strings.Contains(stderr, "--prompt-cache "+bad) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q", c.want, code, stderr)
		}
	}
	_, stderr, code := rtMain(t, append(common, "-p", p2, "--prompt-cache", other)...)
	if code == 0 || !strings.Contains(stderr, "another model") {
		t.Errorf("foreign file: exit %d, %q", code, stderr)
	}
	_, stderr, code = rtMain(t, append(common, "-p", p2, "--prompt-cache-ro")...)
	if code != 2 || !strings.Contains(stderr, "--prompt-cache-ro") {
		t.Errorf("-ro alone: exit %d, %q", code, stderr)
	}
}

package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime"

	"github.com/woolly-llm/woolly/internal/shared"
)

func TestParseCacheFlags(t *testing.T) {
	// Unset is nil (the runtime's default), 0 is off, a size is a size;
	// the environment variable counts as given, the flag wins over it.
	for _, c := range []struct {
		env  string
		args []string
		want *int64
	}{
		{"", nil, nil},
		{"", []string{"--prefix-cache", "0"}, runtime.Ptr(int64(0))},
		{"", []string{"--prefix-cache", "256M"}, runtime.Ptr(int64(256 << 20))},
		{"1G", nil, runtime.Ptr(int64(1 << 30))},
		{"1G", []string{"--prefix-cache", "0"}, runtime.Ptr(int64(0))},
	} {
		t.Setenv("WOOLLY_TEST_PREFIX", c.env)
		fs := newFlagSet("test", io.Discard)
		p, err := prefixFlag(fs, "WOOLLY_TEST_PREFIX")
		if err == nil {
			err = fs.Parse(c.args)
		}
		if err != nil || (p.v == nil) != (c.want == nil) || (p.v != nil && *p.v != *c.want) {
			t.Errorf("env %q args %v: %v %v, want %v", c.env, c.args, p.v, err, c.want)
		}
	}
	t.Setenv("WOOLLY_TEST_PREFIX", "lots")
	if _, err := prefixFlag(newFlagSet("test", io.Discard), "WOOLLY_TEST_PREFIX"); err == nil || !strings.Contains(err.Error(), "WOOLLY_TEST_PREFIX") {
		t.Errorf("bad env value: %v, want an error naming the variable", err)
	}
	if _, err := parseSize("lots"); err == nil {
		t.Error("--prefix-cache lots accepted")
	}
}

func TestRunVerboseCacheStats(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "synth-llama-mini-Q4_K_M.gguf")
	prompt := strings.Repeat("the cat sat on the mat and ", 8)
	_, stderr, code := rtMain(t, "run", "-m", model, "-p", prompt, "-n", "2", "--temp", "0", "--verbose",
		"--prefix-cache", "64M")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"prefix cache: hits 0, misses 1", "of 64.0 MiB"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	_, stderr, _ = rtMain(t, "run", "-m", model, "-p", "hi", "-n", "1", "--verbose")
	if !strings.Contains(stderr, "prefix cache: off") || strings.Contains(stderr, "dequant") {
		t.Errorf("defaults: %s", stderr)
	}
}

// --dequant-cache (and serve's WOOLLY_DEQUANT_CACHE) is an error naming
// its removal, in every command that took it, whatever its value. (Each
// command line also has a fault found later, so that a flag or variable
// accepted by mistake fails the test instead of starting a server.)
func TestDequantCacheFlagRemoved(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "synth-llama-mini-Q4_K_M.gguf")
	for _, args := range [][]string{
		{"run", "-m", model, "-p", "hi", "-n", "1", "--dequant-cache", "100%"},
		{"chat", "-m", filepath.Join(t.TempDir(), "none.gguf"), "--dequant-cache", "0"},
		{"bench", "-m", model, "-p", "8", "-n", "0", "-r", "1", "--dequant-cache", "512M"},
		{"serve", "--dequant-cache", "0", "--timeout", "bogus"},
	} {
		_, stderr, code := rtMain(t, args...)
		if code == 0 || !strings.Contains(stderr, "dequant-cache") || !strings.Contains(stderr, "was removed") {
			t.Errorf("%v: exit %d, stderr %q: want an error naming the removal", args, code, stderr)
		}
	}
	t.Setenv("WOOLLY_DEQUANT_CACHE", "512M")
	_, stderr, code := rtMain(t, "serve", "--models", t.TempDir(), "--timeout", "bogus")
	if code == 0 || !strings.Contains(stderr, "WOOLLY_DEQUANT_CACHE") || !strings.Contains(stderr, "was removed") {
		t.Errorf("serve with WOOLLY_DEQUANT_CACHE: exit %d, stderr %q", code, stderr)
	}
}

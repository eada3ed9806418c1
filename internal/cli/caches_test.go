package cli

import (
	"bytes"
	"encoding/json"
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
	if d, err := parseDequantCache("25%"); err != nil || d.frac != 0.25 || d.bytes != 0 {
		t.Errorf("--dequant-cache 25%%: %+v %v", d, err)
	}
	if d, err := parseDequantCache("1.5G"); err != nil || d.bytes != 3<<29 || d.frac != 0 {
		t.Errorf("--dequant-cache 1.5G: %+v %v", d, err)
	}
	for _, bad := range []string{"x%", "-5%", "12Q", "-1"} {
		if _, err := parseDequantCache(bad); err == nil {
			t.Errorf("--dequant-cache %q accepted", bad)
		}
	}
	if _, err := parseSize("lots"); err == nil {
		t.Error("--prefix-cache lots accepted")
	}
}

func TestRunVerboseCacheStats(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "synth-llama-mini-Q4_K_M.gguf")
	prompt := strings.Repeat("the cat sat on the mat and ", 8) // > 32 tokens: the prompt path uses the dequant cache
	_, stderr, code := rtMain(t, "run", "-m", model, "-p", prompt, "-n", "2", "--temp", "0", "--verbose",
		"--dequant-cache", "100%", "--prefix-cache", "64M")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"prefix cache: hits 0, misses 1", "of 64.0 MiB", "dequant cache: hits ", "tensors dequantized 28"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	_, stderr, _ = rtMain(t, "run", "-m", model, "-p", "hi", "-n", "1", "--verbose")
	if !strings.Contains(stderr, "prefix cache: off") || !strings.Contains(stderr, "dequant cache: off") {
		t.Errorf("defaults: %s", stderr)
	}
}

func TestBenchDequantCacheJSON(t *testing.T) {
	model := filepath.Join(sharedDir(t), "models", "synth-llama-mini-Q4_K_M.gguf")
	var so, se bytes.Buffer
	if err := runBench([]string{"-m", model, "-p", "40", "-n", "0", "-r", "1", "-t", "1", "--dequant-cache", "100%", "--json"}, &so, &se); err != nil {
		t.Fatalf("bench: %v\n%s", err, se.String())
	}
	var rep benchReport
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Caches
	if c == nil || c.Dequant == nil || rep.DequantCacheBudget != c.DequantWorkingSet || c.DequantWorkingSet <= 0 {
		t.Fatalf("report: %s", so.String())
	}
	// Warm-up + 1 run of one 40-token batch: 28 tensors, all kept, each
	// dequantized once; the measured run hits every time.
	d := c.Dequant
	if d.Entries != 28 || d.Bytes != c.DequantWorkingSet || d.Hits < 28 || d.Loads != 28 {
		t.Fatalf("dequant stats %+v", d)
	}
}

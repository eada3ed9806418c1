package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
	"github.com/woolly-llm/woolly/runtime"
)

// An unknown flag or a bad value is one line naming it and pointing at -h,
// exit code 2, for every subcommand; -h still prints the usage (exit 0).
func TestFlagErrorsAreOneLine(t *testing.T) {
	for _, cmd := range []string{"run", "chat", "serve", "perplexity", "logits", "tokenize", "info", "bench", "quantize", "synth"} {
		_, stderr, code := rtMain(t, cmd, "--no-such-flag")
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, "no-such-flag") || !strings.Contains(stderr, "woolly "+cmd+" -h") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q; want exit 2 and one line naming the flag and -h", cmd, code, stderr)
		}
		_, stderr, code = rtMain(t, cmd, "-h")
		if code != 0 || strings.Count(stderr, "\n") < 2 {
			t.Errorf("%s -h: exit %d, %q; want the usage and exit 0", cmd, code, stderr)
		}
	}
	_, stderr, code := rtMain(t, "run", "-m", "x.gguf", "-p", "hi", "--top-k", "many")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "top-k") {
		t.Errorf("--top-k many: exit %d, %q", code, stderr)
	}
}

// Values mean what llama.cpp users expect; out-of-range values are errors
// naming the flag, before any model is loaded.
func TestRunValueChecks(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(pf, []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--top-p", "2"}, "--top-p 2 is out of range"},
		{[]string{"--min-p", "-1"}, "--min-p -1 is out of range"},
		{[]string{"--repeat-penalty", "-1"}, "--repeat-penalty -1 is out of range"},
		{[]string{"--temp", "-1"}, "--temp -1 is out of range"},
		{[]string{"--frequency-penalty", "3"}, "--frequency-penalty 3 is out of range"},
		{[]string{"--top-k", "-5"}, "--top-k -5 is out of range"},
		{[]string{"-n", "-2"}, "-n -2"},
		{[]string{"-f", pf}, "-p and -f both given"},
	} {
		for _, cmd := range []string{"run", "chat"} {
			if cmd == "chat" && c.args[0] == "-f" {
				continue // chat reads its prompts from the terminal
			}
			args := append([]string{cmd, "-m", "missing.gguf", "-p", "hi"}, c.args...)
			if cmd == "chat" {
				args = append([]string{cmd, "-m", "missing.gguf"}, c.args...)
			}
			_, stderr, code := rtMain(t, args...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", args, code, stderr, c.want)
			}
		}
	}
}

// llama.cpp's spellings work, -n 0 evaluates the prompt and generates
// nothing, and -c above the training context warns.
func TestRunLlamaHabits(t *testing.T) {
	sh := shared.Dir(t)
	model := filepath.Join(sh, "models", "stories260K-Q8_0.gguf")
	ref := rtLoadRef(t, sh, "stories260K-Q8_0")
	stdout, stderr, code := rtMain(t, "run", "--model", model, "--prompt", "Once upon a time", "--n-predict", "4",
		"--temp", "0", "--threads", "1", "--ctx-size", "128", "--top-k", "1", "--top-p", "1", "--min-p", "0",
		"--repeat-penalty", "1", "-s", "3", "--json")
	if code != 0 {
		t.Fatalf("llama.cpp spellings: exit %d: %s", code, stderr)
	}
	var res struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Tokens) != 4 {
		t.Fatalf("llama.cpp spellings: %v, %s", err, stdout)
	}
	for i, id := range res.Tokens {
		if id != ref.Greedy.IDs[i] {
			t.Fatalf("greedy through the aliases: %v, want the reference's %v", res.Tokens, ref.Greedy.IDs[:4])
		}
	}

	stdout, stderr, code = rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "0", "--json")
	if code != 0 {
		t.Fatalf("-n 0: exit %d: %s", code, stderr)
	}
	res.Tokens = nil
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Tokens) != 0 || len(res.PromptTokens) == 0 {
		t.Fatalf("-n 0: want the prompt evaluated and no tokens, got %s (%v)", stdout, err)
	}
	stdout, _, _ = rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "0")
	if stdout != "" {
		t.Fatalf("-n 0 printed %q", stdout)
	}

	_, stderr, code = rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "1", "-c", "4096")
	if code != 0 || !strings.Contains(stderr, "warning: -c 4096 is more than the model's training context") {
		t.Fatalf("-c above training context: exit %d, stderr %q; want a warning", code, stderr)
	}
	_, stderr, _ = rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "1", "-c", "64")
	if strings.Contains(stderr, "warning") {
		t.Fatalf("-c 64 warned: %q", stderr)
	}
}

// chat and run share one sampling flag set.
func TestChatTakesRunSamplingFlags(t *testing.T) {
	flagsOf := func(cmd string) map[string]bool {
		_, stderr, _ := rtMain(t, cmd, "-h")
		names := map[string]bool{}
		for _, l := range strings.Split(stderr, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "-") {
				names[strings.Fields(l)[0]] = true
			}
		}
		return names
	}
	run, chat := flagsOf("run"), flagsOf("chat")
	for _, f := range []string{"-temp", "-top-k", "-top-p", "-min-p", "-repeat-penalty", "-repeat-last-n",
		"-frequency-penalty", "-presence-penalty", "-seed", "-s", "-n", "-n-predict", "-threads", "-ctx-size", "-model"} {
		if !run[f] || !chat[f] {
			t.Errorf("flag %s: on run %v, on chat %v; want both", f, run[f], chat[f])
		}
	}
}

// serve --parallel takes a count of 1 or more, or 0 (automatic) (flag or
// WOOLLY_PARALLEL); --kv-budget a size above 0.
func TestServeParallelValues(t *testing.T) {
	for _, v := range []string{"-2", "four"} {
		_, stderr, code := rtMain(t, "serve", "--models", t.TempDir(), "--parallel", v)
		if code != 2 || !strings.Contains(stderr, "parallel") {
			t.Errorf("--parallel %s: exit %d, %q; want exit 2 naming the flag", v, code, stderr)
		}
	}
	for _, v := range []string{"1", " 8", "0"} {
		if n, err := parseParallel(v); err != nil || n < 0 {
			t.Errorf("parseParallel(%q) = %d, %v", v, n, err)
		}
	}
	for _, v := range []string{"0", "-1G", "lots"} {
		_, stderr, code := rtMain(t, "serve", "--models", t.TempDir(), "--kv-budget", v)
		if code != 2 || !strings.Contains(stderr, "kv-budget") {
			t.Errorf("--kv-budget %s: exit %d, %q; want exit 2 naming the flag", v, code, stderr)
		}
	}
	if n, err := parseKVBudget("512M"); err != nil || n != 512<<20 {
		t.Errorf("parseKVBudget(512M) = %d, %v", n, err)
	}
}

// A bad value in one of serve's environment variables is an error naming
// it; several bad ones are named together. (The bad --timeout stops a
// serve that took every variable by mistake.)
func TestServeEnvErrors(t *testing.T) {
	vars := []string{"WOOLLY_PORT", "WOOLLY_MAX_QUEUE", "WOOLLY_PARALLEL", "WOOLLY_KV_BUDGET", "WOOLLY_KEEP_ALIVE",
		"WOOLLY_THREADS", "WOOLLY_PREFIX_CACHE"}
	serve := func() string {
		err := runServe([]string{"--models", t.TempDir(), "--timeout", "bogus"}, io.Discard, io.Discard)
		if err == nil {
			t.Fatal("serve started")
		}
		return err.Error()
	}
	for _, v := range vars {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "bogus")
			if msg := serve(); !strings.Contains(msg, v+`="bogus"`) || strings.Contains(msg, "timeout") {
				t.Errorf("%s=bogus: %q, want an error naming it", v, msg)
			}
		})
	}
	for _, v := range vars {
		t.Setenv(v, "bogus")
	}
	msg := serve()
	for _, v := range vars {
		if !strings.Contains(msg, v+`="bogus"`) {
			t.Errorf("every variable bad: %q does not name %s", msg, v)
		}
	}
}

// --attention takes default and exact; the removed f32 mode "fast" is an
// error naming the choices, not silently the default.
func TestParseAttention(t *testing.T) {
	for _, s := range []string{"", "default", "exact"} {
		if _, err := parseAttention(s); err != nil {
			t.Errorf("parseAttention(%q): %v", s, err)
		}
	}
	for _, s := range []string{"fast", "Exact"} {
		if _, err := parseAttention(s); err == nil || !strings.Contains(err.Error(), "want default or exact") {
			t.Errorf("parseAttention(%q) = %v; want an error naming default and exact", s, err)
		}
	}
}

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

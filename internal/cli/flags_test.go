package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
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

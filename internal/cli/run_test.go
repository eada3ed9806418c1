package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
)

type rtRef struct {
	PromptIDs []int32 `json:"prompt_ids"`
	Positions []struct {
		Top [][2]float64 `json:"top"`
	} `json:"positions"`
	Greedy struct {
		IDs  []int32 `json:"ids"`
		Text string  `json:"text"`
	} `json:"greedy"`
}

func rtLoadRef(t *testing.T, shared, name string) rtRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shared, "ref", "logits", name+".once_upon_a_time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r rtRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func rtMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestRunGreedy(t *testing.T) {
	shared := shared.Dir(t)
	ref := rtLoadRef(t, shared, "stories260K-Q8_0")
	model := filepath.Join(shared, "models", "stories260K-Q8_0.gguf")

	stdout, stderr, code := rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "16", "--temp", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		PromptCount  int     `json:"prompt_count"`
		Tokens       []int32 `json:"tokens"`
		Text         string  `json:"text"`
		Timings      struct {
			PromptPerSecond float64 `json:"prompt_per_second"`
			GenPerSecond    float64 `json:"gen_per_second"`
		} `json:"timings"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if !slices.Equal(res.PromptTokens, ref.PromptIDs) || res.PromptCount != len(ref.PromptIDs) ||
		!slices.Equal(res.Tokens, ref.Greedy.IDs) || res.Text != ref.Greedy.Text {
		t.Fatalf("got prompt %v (count %d), %v %q; reference %v, %v %q", res.PromptTokens, res.PromptCount, res.Tokens, res.Text,
			ref.PromptIDs, ref.Greedy.IDs, ref.Greedy.Text)
	}
	if res.Timings.GenPerSecond <= 0 {
		t.Fatalf("gen_per_second = %v", res.Timings.GenPerSecond)
	}

	// Plain mode: stdout is exactly the generated text, timings on stderr.
	stdout, stderr, code = rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "16", "--temp", "0")
	if code != 0 || stdout != ref.Greedy.Text {
		t.Fatalf("exit %d, stdout %q, want %q (stderr %s)", code, stdout, ref.Greedy.Text, stderr)
	}
	if !strings.Contains(stderr, "tokens/s") {
		t.Fatalf("no timings on stderr: %q", stderr)
	}

	// Sampling with a fixed seed is reproducible.
	a, _, _ := rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "12", "--seed", "5", "--json")
	b, _, _ := rtMain(t, "run", "-m", model, "-p", "Once upon a time", "-n", "12", "--seed", "5", "--json")
	strip := func(s string) string { // drop the timings
		i := strings.Index(s, `"timings"`)
		if i < 0 {
			t.Fatalf("no timings in %q", s)
		}
		return s[:i]
	}
	if strip(a) != strip(b) {
		t.Fatalf("seeded runs differ:\n%s\n%s", a, b)
	}
}

func TestRunErrors(t *testing.T) {
	shared := shared.Dir(t)
	model := filepath.Join(shared, "models", "stories260K-F32.gguf")
	_, stderr, code := rtMain(t, "run", "-m", model, "-c", "8", "-p", strings.Repeat("The little dog ran. ", 5))
	if code == 0 || !strings.Contains(stderr, "more than the context length 8") {
		t.Fatalf("long prompt: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := rtMain(t, "run", "-p", "x"); code == 0 {
		t.Fatal("run without -m succeeded")
	}
	if _, _, code := rtMain(t, "run", "-m", filepath.Join(t.TempDir(), "none.gguf"), "-p", "x"); code == 0 {
		t.Fatal("run with a missing model succeeded")
	}
}

func TestTokenizeCommand(t *testing.T) {
	shared := shared.Dir(t)
	ref := rtLoadRef(t, shared, "synth-llama-mini-F16")
	model := filepath.Join(shared, "models", "synth-llama-mini-F16.gguf")
	stdout, stderr, code := rtMain(t, "tokenize", "-m", model, "-p", "Once upon a time", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		IDs []int32 `json:"ids"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || !slices.Equal(res.IDs, ref.PromptIDs) {
		t.Fatalf("ids %v (%v), want %v", res.IDs, err, ref.PromptIDs)
	}
	stdout, _, code = rtMain(t, "tokenize", "-m", model, "-p", "Once upon a time", "--no-bos")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != len(ref.PromptIDs)-1 {
		t.Fatalf("plain --no-bos: exit %d, %q", code, stdout)
	}
	for i, l := range lines {
		id, piece, ok := strings.Cut(l, "\t")
		if !ok || id != strconv.Itoa(int(ref.PromptIDs[i+1])) || piece == "" {
			t.Fatalf("line %d = %q", i, l)
		}
	}
	f := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(f, []byte("Once upon a time"), 0o644)
	stdout2, _, _ := rtMain(t, "tokenize", "-m", model, "-f", f, "--no-bos")
	if stdout2 != stdout {
		t.Fatalf("-f gave %q, -p gave %q", stdout2, stdout)
	}
	if _, _, code := rtMain(t, "tokenize", "-m", model); code == 0 {
		t.Fatal("tokenize without -p or -f succeeded")
	}
	for _, p := range []string{"x", ""} { // an empty -p is still a -p
		if _, stderr, code := rtMain(t, "tokenize", "-m", model, "-p", p, "-f", f); code != 2 || !strings.Contains(stderr, "-p and -f both given") {
			t.Errorf("tokenize -p %q -f: exit %d, stderr %q", p, code, stderr)
		}
	}
	if stdout, _, code := rtMain(t, "tokenize", "-m", model, "-p", "", "--no-bos", "--json"); code != 0 || strings.TrimSpace(stdout) != `{"ids":[]}` {
		t.Errorf("tokenize -p '': exit %d, stdout %q", code, stdout)
	}
}

func TestLogitsCommand(t *testing.T) {
	shared := shared.Dir(t)
	ref := rtLoadRef(t, shared, "stories260K-F32")
	model := filepath.Join(shared, "models", "stories260K-F32.gguf")
	var ids []string
	for _, id := range ref.PromptIDs {
		ids = append(ids, strconv.Itoa(int(id)))
	}
	for _, args := range [][]string{{"--tokens", strings.Join(ids, ",")}, {"-p", "Once upon a time"}} {
		stdout, stderr, code := rtMain(t, append([]string{"logits", "-m", model, "--top", "5", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var res struct {
			Tokens    []int32 `json:"tokens"`
			Positions []struct {
				Top [][2]float64 `json:"top"`
			} `json:"positions"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, ref.PromptIDs) || len(res.Positions) != len(ref.PromptIDs) {
			t.Fatalf("tokens %v, %d positions", res.Tokens, len(res.Positions))
		}
		for i, p := range res.Positions {
			if len(p.Top) != 5 {
				t.Fatalf("position %d has %d entries", i, len(p.Top))
			}
			for j, e := range p.Top {
				r := ref.Positions[i].Top[j]
				if e[0] != r[0] || math.Abs(e[1]-r[1]) > 2e-2 {
					t.Fatalf("position %d entry %d: %v, reference %v", i, j, e, r)
				}
			}
		}
	}
}

func TestPerplexityCommand(t *testing.T) {
	shared := shared.Dir(t)
	model := filepath.Join(shared, "models", "stories260K-F32.gguf")
	stdout, stderr, code := rtMain(t, "perplexity", "-m", model, "-f", filepath.Join(shared, "ref", "text", "dev.txt"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		PPL    float64 `json:"ppl"`
		Chunks int     `json:"chunks"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	const want = 4.4423 // ref/ppl/summary.json, stories260K-F32
	if res.Chunks != 8 || math.Abs(res.PPL-want)/want > 0.005 {
		t.Fatalf("ppl %v over %d chunks, reference %v over 8", res.PPL, res.Chunks, want)
	}
}

// TestLlamaFlagSpellings: llama.cpp's long flag names mean the same as
// Woolly's short ones, and --version prints the version.
func TestLlamaFlagSpellings(t *testing.T) {
	model := chatModel(t)
	var a, b, e bytes.Buffer
	if code := realMain([]string{"run", "-m", model, "-p", "Once upon a time", "-n", "6", "--temp", "0", "-t", "1", "-c", "64"}, &a, &e); code != 0 {
		t.Fatalf("short flags: exit %d: %s", code, e.String())
	}
	if code := realMain([]string{"run", "--model", model, "--prompt", "Once upon a time", "--n-predict", "6", "--temp", "0",
		"--threads", "1", "--ctx-size", "64"}, &b, &e); code != 0 {
		t.Fatalf("llama.cpp spellings: exit %d: %s", code, e.String())
	}
	if a.String() == "" || a.String() != b.String() {
		t.Errorf("short flags gave %q, llama.cpp spellings %q", a.String(), b.String())
	}
	for _, v := range []string{"--version", "version"} {
		var out bytes.Buffer
		if code := realMain([]string{v}, &out, &e); code != 0 || !strings.HasPrefix(out.String(), "woolly ") {
			t.Errorf("%s: exit %d, %q", v, code, out.String())
		}
	}
}

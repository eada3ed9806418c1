package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
	"github.com/woolly-llm/woolly/runtime/gbnf"
)

func TestStripIgnored(t *testing.T) {
	var w bytes.Buffer
	got := stripIgnored(&w, "woolly run", []string{"-ngl", "99", "-m", "x", "-fa", "on", "--color", "-b=512",
		"--mlock", "-fa", "-p", "hi", "--n-gpu-layers", "12", "-cnv", "--jinja", "--no-mmap", "-ub", "64", "--", "-ngl"})
	want := []string{"-m", "x", "-p", "hi", "--", "-ngl"}
	if !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	note := w.String()
	if strings.Count(note, "\n") != 1 || !strings.Contains(note, "-ngl 99, -fa on, --color, -b=512, --mlock, -fa, --n-gpu-layers 12, -cnv, --jinja, --no-mmap, -ub 64") {
		t.Errorf("note %q", note)
	}
	w.Reset()
	if got := stripIgnored(&w, "woolly run", []string{"-m", "x"}); len(got) != 2 || w.Len() != 0 {
		t.Errorf("nothing to strip: %q, note %q", got, w.String())
	}
}

// runOut runs woolly run --json and returns its generated ids and text.
func runOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	out, errs, code := rtMain(t, args...)
	var r struct {
		Tokens []int32 `json:"tokens"`
		Text   string  `json:"text"`
	}
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
	}
	b, _ := json.Marshal(r)
	return string(b), errs, code
}

// run with llama.cpp's GPU flags and with the added samplers switched off
// explicitly gives the same greedy text as plain run; a note on stderr.
func TestRunLlamaSamplerFlags(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
	base := []string{"run", "-m", model, "-p", "Once upon a time", "-n", "12", "--temp", "0", "-t", "1", "--json"}
	plain, errs, code := runOut(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	args := append(slices.Clone(base), "-ngl", "99", "-fa", "on", "--mlock", "--typical", "1", "--mirostat", "0",
		"--dry-multiplier", "0", "--xtc-probability", "0")
	same, errs, code := runOut(t, args...)
	if code != 0 || same != plain {
		t.Fatalf("with ignored flags and samplers off: exit %d %q (stderr %s), want %q", code, same, errs, plain)
	}
	if !strings.Contains(errs, "ignoring -ngl 99, -fa on, --mlock") {
		t.Errorf("stderr %q has no note on the ignored flags", errs)
	}
	// DRY on, greedy: the stories model repeats itself; DRY must change
	// the output, and two runs agree.
	dry := append(slices.Clone(base), "-n", "60", "--dry-multiplier", "3", "--dry-allowed-length", "1")
	a, errs, code := runOut(t, dry...)
	if code != 0 {
		t.Fatalf("dry: exit %d: %s", code, errs)
	}
	b, _, _ := runOut(t, dry...)
	long, _, _ := runOut(t, append(slices.Clone(base), "-n", "60")...)
	var ra, rl struct{ Text string }
	json.Unmarshal([]byte(a), &ra)
	json.Unmarshal([]byte(long), &rl)
	if a != b || ra.Text == rl.Text {
		t.Errorf("DRY greedy: runs agree %v; text %q, without DRY %q", a == b, ra.Text, rl.Text)
	}
	// Mirostat 2 and XTC, seeded: deterministic.
	for _, extra := range [][]string{{"--mirostat", "2", "--mirostat-ent", "3"}, {"--xtc-probability", "0.5", "--xtc-threshold", "0.05"}} {
		args := append(slices.Clone(base), "--temp", "0.8", "--seed", "5")
		args = append(args, extra...)
		x, errs, code := runOut(t, args...)
		y, _, _ := runOut(t, args...)
		if code != 0 || x != y {
			t.Errorf("%v: exit %d (%s), runs agree %v", extra, code, errs, x == y)
		}
	}
}

func TestRunSamplerFlagRanges(t *testing.T) {
	for flag, val := range map[string]string{
		"--typical": "2", "--mirostat": "3", "--mirostat-lr": "-1", "--mirostat-ent": "-1",
		"--dry-multiplier": "-1", "--dry-allowed-length": "-1", "--dry-penalty-last-n": "-2",
		"--xtc-probability": "1.5", "--xtc-threshold": "-0.5",
	} {
		_, errs, code := rtMain(t, "run", "-m", "nonexistent.gguf", "-p", "x", flag, val)
		if code != 2 || !strings.Contains(errs, flag+" ") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s %s: exit %d, stderr %q", flag, val, code, errs)
		}
	}
	_, errs, code := rtMain(t, "run", "-m", "nonexistent.gguf", "-p", "x", "--dry-multiplier", "0.8", "--dry-base", "0.5")
	if code != 2 || !strings.Contains(errs, "--dry-base") {
		t.Errorf("--dry-base 0.5: exit %d, %q", code, errs)
	}
}

// chatPrompts runs a one-turn chat with args and returns the rendered
// prompts (--show-prompt) and stderr.
func chatPrompts(t *testing.T, args ...string) ([]string, string, error) {
	t.Helper()
	old := chatInput
	defer func() { chatInput = old }()
	chatInput = strings.NewReader("Hello\n/bye\n")
	var out, errb bytes.Buffer
	err := runChat(append([]string{"-m", chatModel(t), "-n", "4", "--temp", "0", "-t", "1", "--show-prompt"}, args...), &out, &errb)
	var prompts []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if p, ok := strings.CutPrefix(l, "[prompt] "); ok {
			prompts = append(prompts, p)
		}
	}
	return prompts, errb.String(), err
}

func TestChatTemplateFlags(t *testing.T) {
	p, errs, err := chatPrompts(t, "--chat-template", "llama2")
	if err != nil || len(p) != 1 || !strings.Contains(p[0], "[INST] Hello [/INST]") || strings.Contains(errs, "using ChatML") {
		t.Errorf("--chat-template llama2: %v, prompts %q, stderr %s", err, p, errs)
	}
	file := filepath.Join(t.TempDir(), "t.jinja")
	tmpl := "{% for m in messages %}<<{{ m.role }}>>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<<assistant>>{% endif %}"
	if err := os.WriteFile(file, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	p, errs, err = chatPrompts(t, "--chat-template-file", file)
	if err != nil || len(p) != 1 || !strings.Contains(p[0], `<<user>>Hello\n<<assistant>>`) {
		t.Errorf("--chat-template-file: %v, prompts %q, stderr %s", err, p, errs)
	}
	_, errs, err = chatPrompts(t, "--chat-template", "nosuch")
	if !errors.Is(err, errUsage) || !strings.Contains(errs, `--chat-template "nosuch"`) {
		t.Errorf("--chat-template nosuch: %v %s", err, errs)
	}
}

// sampledRun runs `run --json` on model for n tokens at temperature 1 with
// seed, constrained by the inline flags on an even seed and by the file
// flags on an odd one (so both forms are used), and returns its result.
func sampledRun(t *testing.T, model string, n, seed int, inline, file []string) (r struct {
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
}) {
	t.Helper()
	args := []string{"run", "-m", model, "-p", "Once upon a time", "-n", fmt.Sprint(n), "--temp", "1", "--seed", fmt.Sprint(seed), "-t", "1", "--json"}
	if seed%2 == 0 {
		args = append(args, inline...)
	} else {
		args = append(args, file...)
	}
	out, errs, code := rtMain(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	return r
}

// run -j: the output is JSON of the schema, sampled (temperature 1) over
// several seeds; --grammar is refused naming the flag.
func TestRunJSONSchema(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
	schema := `{"type":"object","properties":{"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["n","ok"]}`
	file := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(file, []byte(schema), 0o644)
	for seed := range 4 {
		r := sampledRun(t, model, 200, seed, []string{"-j", schema}, []string{"--json-schema-file", file})
		var v struct {
			N  *json.Number `json:"n"`
			OK *bool        `json:"ok"`
		}
		dec := json.NewDecoder(strings.NewReader(r.Text))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.N == nil || v.OK == nil {
			t.Errorf("seed %d: %q is not the schema's JSON (%v)", seed, r.Text, err)
		} else if _, err := v.N.Int64(); err != nil {
			t.Errorf("seed %d: n %s is not an integer", seed, *v.N)
		}
	}
	if _, errs, code := rtMain(t, "run", "-m", model, "-p", "x", "-j", `{"type":"nosuch"}`); code == 0 || !strings.Contains(errs, "json-schema") {
		t.Errorf("bad schema: exit %d, %q", code, errs)
	}
	if _, errs, code := rtMain(t, "run", "-m", model, "-p", "x", "-j", schema, "--json-schema-file", file); code == 0 || !strings.Contains(errs, "--json-schema and --json-schema-file both given") {
		t.Errorf("schema and schema file: exit %d, %q", code, errs)
	}
}

// run --grammar / --grammar-file: sampled output (temperature 1, several
// seeds) is always a sentence of the grammar, and generation stops there.
func TestRunGBNF(t *testing.T) {
	model := filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
	grammars := []string{
		"root ::= \"The \" animal \" is \" color \".\"\nanimal ::= \"cat\" | \"dog\" | \"big bird\"\ncolor ::= (\"very \")? (\"red\" | \"blue\")",
		"root ::= word (\", \" word){2}  # three words\nword ::= [a-z]{2,8}",
	}
	file := filepath.Join(t.TempDir(), "g.gbnf")
	for gi, src := range grammars {
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(file, []byte(src), 0o644)
		seen := map[string]bool{}
		for seed := range 6 {
			r := sampledRun(t, model, 100, seed, []string{"--grammar", src}, []string{"--grammar-file", file})
			if ok, err := g.Match(r.Text); !ok || err != nil || r.StopReason != "stop" {
				t.Errorf("grammar %d seed %d: %q (stop %s) is not a sentence of the grammar", gi, seed, r.Text, r.StopReason)
			}
			seen[r.Text] = true
		}
		if len(seen) < 2 {
			t.Errorf("grammar %d: every seed gave the same text %v (sampling should vary)", gi, seen)
		}
	}
	for _, bad := range [][]string{{"--grammar", "root ::= missing"}, {"--grammar-file", "/nonexistent.gbnf"}, {"--grammar", `root ::= "a"`, "-j", "{}"},
		{"--grammar", `root ::= "a"`, "--grammar-file", file}} {
		_, errs, code := rtMain(t, append([]string{"run", "-m", model, "-p", "x"}, bad...)...)
		if code == 0 || !strings.Contains(errs, "grammar") {
			t.Errorf("%v: exit %d, %q", bad, code, errs)
		}
	}
}

// --cache-type-k/-ctk and --cache-type-v/-ctv: an unknown type is a usage
// error naming the flag, before the model is read (run, chat, serve).
func TestCacheTypeFlags(t *testing.T) {
	for _, c := range []struct{ cmd, flag, name string }{
		{"run", "-ctk", "--cache-type-k"}, {"run", "--cache-type-v", "--cache-type-v"},
		{"chat", "-ctv", "--cache-type-v"}, {"serve", "-ctk", "--cache-type-k"},
	} {
		args := []string{c.cmd, "-m", "nonexistent.gguf", c.flag, "q5_1"}
		if c.cmd == "serve" {
			args = []string{c.cmd, "--models", t.TempDir(), c.flag, "q5_1"}
		} else if c.cmd == "run" {
			args = append(args, "-p", "x")
		}
		_, errs, code := rtMain(t, args...)
		if code != 2 || !strings.Contains(errs, c.name+": cache type \"q5_1\"") {
			t.Errorf("%s %s q5_1: exit %d, stderr %q", c.cmd, c.flag, code, errs)
		}
	}
}

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

package repl

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
)

func readAll(t *testing.T, input string) ([]string, string, error) {
	t.Helper()
	var out bytes.Buffer
	r, err := NewLineReader(strings.NewReader(input), &out, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		s, err := ReadInput(r)
		if errors.Is(err, io.EOF) {
			return got, out.String(), nil
		}
		if err != nil {
			return got, out.String(), err
		}
		got = append(got, s)
	}
}

func TestReadInput(t *testing.T) {
	got, screen, err := readAll(t, "hello\n\"\"\"\nline one\n  line two\n\"\"\"\n\"\"\"one line\"\"\"\n/set system \"\"\"be\nbrief\"\"\"\nx \"\"\"a\nb\"\"\" y\nlast")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hello", "line one\n  line two", "one line", "/set system be\nbrief", "x a\nb y", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("inputs %q, want %q", got, want)
	}
	if strings.Count(screen, Prompt) != 7 || strings.Count(screen, ContinuePrompt) != 5 {
		t.Errorf("prompts written: %q", screen)
	}
	if _, _, err := readAll(t, "\"\"\"\nnever closed\n"); err == nil || !strings.Contains(err.Error(), `inside a """ block`) {
		t.Errorf("an open block at the end: %v", err)
	}
	long := "\"\"\"\n" + strings.Repeat(strings.Repeat("x", 1000)+"\n", maxInput/1000+2)
	if _, _, err := readAll(t, long); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("an unbounded block: %v", err)
	}
}

func TestParams(t *testing.T) {
	p := Params{Sampler: runtime.DefaultSamplerOptions(), NumPredict: -1}
	for _, set := range [][2]string{{"temperature", "0.5"}, {"temp", "0.25"}, {"top_k", "7"}, {"TOP_P", "0.5"}, {"min_p", "0.1"},
		{"repeat_penalty", "1.1"}, {"repeat_last_n", "-1"}, {"frequency_penalty", "-2"}, {"presence_penalty", "0.5"},
		{"seed", "42"}, {"num_predict", "12"}, {"max_tokens", "13"}} {
		if err := p.Set(set[0], set[1]); err != nil {
			t.Errorf("Set(%q, %q): %v", set[0], set[1], err)
		}
	}
	want := runtime.DefaultSamplerOptions()
	want.Temperature, want.TopK, want.TopP, want.MinP, want.RepeatPenalty, want.RepeatLastN = 0.25, 7, 0.5, 0.1, 1.1, -1
	want.FrequencyPenalty, want.PresencePenalty, want.Seed = -2, 0.5, 42
	if p.Sampler != want || p.NumPredict != 13 {
		t.Errorf("params %+v, want %+v and num_predict 13", p, want)
	}
	before := p
	for _, bad := range [][3]string{
		{"temperature", "hot", "want a number"}, {"temperature", "-1", "out of range"}, {"top_p", "1.5", "out of range"},
		{"top_k", "2.5", "want an integer"}, {"top_k", "-3", "out of range"}, {"num_predict", "-2", "out of range"},
		{"frequency_penalty", "3", "out of range"}, {"temperature", "NaN", "want a number"}, {"top_k", "99999999999", "out of range"},
		{"colour", "blue", "unknown parameter"}, {"num_ctx", "4096", "-c 4096"},
	} {
		err := p.Set(bad[0], bad[1])
		if err == nil || !strings.Contains(err.Error(), bad[2]) {
			t.Errorf("Set(%q, %q) = %v, want %q", bad[0], bad[1], err, bad[2])
		}
	}
	if p != before {
		t.Errorf("a refused Set changed the parameters: %+v", p)
	}
	// llama.cpp's samplers, by Ollama's names and llama.cpp's flag spellings.
	q := Params{Sampler: runtime.DefaultSamplerOptions(), NumPredict: -1}
	for _, set := range [][2]string{{"typical_p", "0.9"}, {"mirostat", "2"}, {"mirostat-ent", "3"}, {"mirostat_eta", "0.2"},
		{"dry_multiplier", "0.8"}, {"dry-base", "2"}, {"dry_allowed_length", "3"}, {"dry_penalty_last_n", "-1"},
		{"xtc_probability", "0.5"}, {"xtc-threshold", "0.2"}} {
		if err := q.Set(set[0], set[1]); err != nil {
			t.Errorf("Set(%q, %q): %v", set[0], set[1], err)
		}
	}
	o := q.Sampler
	if o.TypicalP != 0.9 || o.Mirostat != 2 || o.MirostatTau != 3 || o.MirostatEta != 0.2 || o.DryMultiplier != 0.8 ||
		o.DryBase != 2 || o.DryAllowedLength != 3 || o.DryPenaltyLastN != -1 || o.XTCProbability != 0.5 || o.XTCThreshold != 0.2 {
		t.Errorf("samplers set to %+v", o)
	}
	if err := q.Set("mirostat", "3"); err == nil || !strings.Contains(err.Error(), "mirostat") {
		t.Errorf("mirostat 3: %v", err)
	}
	if v, _ := p.Get("top_p"); v != "0.5" {
		t.Errorf("Get(top_p) = %q", v)
	}
}

func newState(t *testing.T) *State {
	return &State{Model: "tiny", Params: Params{Sampler: runtime.DefaultSamplerOptions(), NumPredict: -1},
		ConversationsDir: filepath.Join(t.TempDir(), "conv"), Info: []string{"architecture llama"}, Template: "{{ x }}"}
}

func run(s *State, line string) (string, string, Action) {
	var out, errb bytes.Buffer
	a := s.Command(line, &out, &errb)
	return out.String(), errb.String(), a
}

func TestCommands(t *testing.T) {
	s := newState(t)
	if _, _, a := run(s, "/bye"); a != Quit {
		t.Error("/bye does not quit")
	}
	for _, c := range []string{"/?", "/help"} {
		if out, _, a := run(s, c); a != Continue || !strings.Contains(out, "/set parameter NAME VALUE") || !strings.Contains(out, "/load NAME") {
			t.Errorf("%s: %q", c, out)
		}
	}
	if _, errs, a := run(s, "/what is this"); a != Continue || !strings.Contains(errs, `Unknown command "/what"`) || !strings.Contains(errs, "/?") {
		t.Errorf("unknown command: %q", errs)
	}
	if out, _, _ := run(s, "/show info"); out != "architecture llama\n" {
		t.Errorf("/show info: %q", out)
	}
	if out, _, _ := run(s, "/show template"); out != "{{ x }}\n" {
		t.Errorf("/show template: %q", out)
	}
	if _, errs, _ := run(s, "/show nothing"); !strings.Contains(errs, "usage: /show") {
		t.Errorf("/show nothing: %q", errs)
	}
	run(s, "/set parameter top_k 5")
	run(s, "/set think")
	if out, _, _ := run(s, "/show parameters"); !strings.Contains(out, "top_k              5\n") || !strings.Contains(out, "think              true") {
		t.Errorf("/show parameters: %q", out)
	}
	// A template without a thinking switch: /set think is noted as doing nothing.
	s.NoThinkSwitch = true
	if out, errs, _ := run(s, "/set nothink"); !strings.Contains(out, "Set 'nothink' mode.") || !strings.Contains(errs, "no thinking switch") {
		t.Errorf("/set nothink without a switch: %q %q", out, errs)
	}
	s.NoThinkSwitch = false
	if _, errs, _ := run(s, "/set think"); errs != "" {
		t.Errorf("/set think with a switch: %q", errs)
	}
	if _, errs, _ := run(s, "/set parameter top_k"); !strings.Contains(errs, "usage: /set parameter NAME VALUE") {
		t.Errorf("/set parameter without a value: %q", errs)
	}
	if _, errs, _ := run(s, "/set colour blue"); !strings.Contains(errs, "usage: /set") {
		t.Errorf("/set colour: %q", errs)
	}

	// The system message: set, shown, warned about when the template drops it.
	dropped := 0
	s.DropsSystem = func(sys string) bool { dropped++; return sys == "ignored" }
	if _, errs, _ := run(s, "/set system be kind"); errs != "" || s.System != "be kind" || dropped != 1 {
		t.Errorf("/set system: %q %q", errs, s.System)
	}
	if out, _, _ := run(s, "/show system"); out != "be kind\n" {
		t.Errorf("/show system: %q", out)
	}
	if _, errs, _ := run(s, "/set system ignored"); !strings.Contains(errs, "leaves the system message out") {
		t.Errorf("no warning for a dropped system message: %q", errs)
	}
	run(s, "/set system")
	if s.System != "" {
		t.Error("/set system with no text kept the message")
	}

	s.System = "sys"
	s.SetMessages([]chat.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}})
	if m := s.Messages(); len(m) != 3 || m[0].Role != "system" || m[2].Content != "a" {
		t.Errorf("Messages() = %+v", m)
	}
	if out, _, _ := run(s, "/save chat-1"); !strings.Contains(out, "2 messages") {
		t.Errorf("/save: %q", out)
	}
	run(s, "/clear")
	run(s, "/set parameter top_k 9")
	run(s, "/set nothink")
	s.System = "other"
	if len(s.Turns) != 0 {
		t.Fatal("/clear kept turns")
	}
	out, errs, _ := run(s, "/load chat-1")
	if !strings.Contains(out, "2 messages") || errs != "" || s.System != "sys" || len(s.Turns) != 2 || s.Params.Sampler.TopK != 5 || !*s.Think {
		t.Errorf("/load: %q %q %+v", out, errs, s)
	}
	s.Model = "other-model"
	if _, errs, _ := run(s, "/load chat-1"); !strings.Contains(errs, "saved with tiny") {
		t.Errorf("/load from another model: %q", errs)
	}
	for _, c := range []string{"/save", "/load", "/save ../x", "/load /etc/passwd", "/load absent", "/save a:b"} {
		if _, errs, _ := run(s, c); errs == "" {
			t.Errorf("%s: no error", c)
		}
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson": "{", "role": `{"messages":[{"role":"wizard","content":"x"}]}`,
		"system": `{"messages":[{"role":"system","content":"x"}]}`,
	} {
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644)
		if _, _, err := Load(dir, name); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	big, _ := os.Create(filepath.Join(dir, "big.json"))
	big.Truncate(maxConversation + 1)
	big.Close()
	if _, _, err := Load(dir, "big"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized file: %v", err)
	}
	// A bad parameter in a file is reported and skipped, the rest loads.
	os.WriteFile(filepath.Join(dir, "param.json"), []byte(`{"parameters":{"top_k":"x","seed":"3"},"messages":[]}`), 0o644)
	s := newState(t)
	s.ConversationsDir = dir
	if _, errs, _ := run(s, "/load param"); !strings.Contains(errs, "top_k: want an integer") || s.Params.Sampler.Seed != 3 {
		t.Errorf("bad parameter: %q seed %d", errs, s.Params.Sampler.Seed)
	}
}

// Every parameter reads back what was set, and setting one changes no other.
func TestParamsRoundTrip(t *testing.T) {
	for _, name := range ParamNames {
		p := Params{Sampler: runtime.DefaultSamplerOptions(), NumPredict: -1}
		before := map[string]string{}
		for _, n := range ParamNames {
			before[n], _ = p.Get(n)
		}
		if err := p.Set(name, "1"); err != nil {
			t.Fatalf("Set(%s, 1): %v", name, err)
		}
		for _, n := range ParamNames {
			got, _ := p.Get(n)
			want := before[n]
			if n == name {
				want = "1"
			}
			if got != want {
				t.Errorf("after Set(%s, 1): %s is %q, want %q", name, n, got, want)
			}
		}
	}
}

package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/internal/shared"
	"github.com/woolly-llm/woolly/server"
)

// modelsEnv points WOOLLY_MODELS at a new directory (and HOME at another,
// so nothing of the user's is touched) and returns the directory and the
// shared tiny model's path.
func modelsEnv(t *testing.T) (string, string) {
	t.Helper()
	src := filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
	t.Setenv("HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "models")
	t.Setenv("WOOLLY_MODELS", dir)
	return dir, src
}

func mustMain(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	out, errs, code := rtMain(t, args...)
	if code != want {
		t.Fatalf("woolly %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
	}
	return out, errs
}

// listNames runs woolly list and returns the NAME column.
func listNames(t *testing.T, verb string) []string {
	t.Helper()
	out, _ := mustMain(t, 0, verb)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("list header: %q", out)
	}
	var names []string
	for _, l := range lines[1:] {
		names = append(names, strings.Fields(l)[0])
	}
	return names
}

func TestModelVerbs(t *testing.T) {
	dir, src := modelsEnv(t)
	if got := listNames(t, "list"); len(got) != 0 {
		t.Fatalf("empty directory lists %q", got)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatal("list did not create the models directory")
	}
	out, _ := mustMain(t, 0, "import", src, "tiny")
	if !strings.Contains(out, "'tiny:latest'") {
		t.Errorf("import said %q", out)
	}
	mustMain(t, 0, "import", "--link", src, "tiny:q8")
	mustMain(t, 0, "import", src) // the file's own name
	_, errs := mustMain(t, 1, "import", src, "tiny")
	if !strings.Contains(errs, "exists") || !strings.Contains(errs, "--force") {
		t.Errorf("import over a model: %s", errs)
	}
	mustMain(t, 0, "import", "--force", src, "tiny")
	_, errs = mustMain(t, 1, "import", filepath.Join(dir, "nothing.gguf"))
	if !strings.Contains(errs, "nothing.gguf") {
		t.Errorf("import of a missing file: %s", errs)
	}
	mustMain(t, 2, "import")
	if got := listNames(t, "ls"); !slices.Equal(got, []string{"stories260K-Q8_0:latest", "tiny:latest", "tiny:q8"}) {
		t.Fatalf("ls = %q", got)
	}
	out, _ = mustMain(t, 0, "list")
	if !strings.Contains(out, "-> "+src) {
		t.Errorf("list does not show the link's target:\n%s", out)
	}

	mustMain(t, 0, "cp", "tiny:q8", "tiny2")
	mustMain(t, 1, "cp", "tiny", "tiny2")
	mustMain(t, 1, "cp", "absent", "x")
	mustMain(t, 2, "cp", "tiny")
	if got := listNames(t, "list"); !slices.Equal(got, []string{"stories260K-Q8_0:latest", "tiny:latest", "tiny2:latest", "tiny:q8"}) {
		t.Fatalf("after cp: %q", got)
	}
	// rm checks every name first: one missing removes none.
	_, errs = mustMain(t, 1, "rm", "tiny2", "absent")
	if !strings.Contains(errs, `"absent" not found`) {
		t.Errorf("rm of a missing model: %s", errs)
	}
	out, _ = mustMain(t, 0, "rm", "tiny2", "tiny:q8", "stories260K-Q8_0")
	if strings.Count(out, "deleted") != 3 {
		t.Errorf("rm said %q", out)
	}
	if got := listNames(t, "list"); !slices.Equal(got, []string{"tiny:latest"}) {
		t.Fatalf("after rm: %q", got)
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatal("rm of a linked model removed the linked file")
	}
	mustMain(t, 1, "rm", "../x")
	mustMain(t, 2, "rm")

	_, errs = mustMain(t, 1, "pull", "qwen3")
	if !strings.Contains(errs, "downloads nothing") || !strings.Contains(errs, "woolly import") {
		t.Errorf("pull: %s", errs)
	}
}

// run and chat take a NAME of the models directory (tags, :latest, flags
// after it, the prompt as positional words) and answer as -m PATH does.
func TestRunByName(t *testing.T) {
	_, src := modelsEnv(t)
	mustMain(t, 0, "import", src, "tiny")
	mustMain(t, 0, "import", src, "tiny:q8")
	type res struct {
		Tokens []int32 `json:"tokens"`
		Text   string  `json:"text"`
	}
	gen := func(args ...string) res {
		t.Helper()
		out, _ := mustMain(t, 0, append([]string{"run"}, args...)...)
		var r res
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%q: %v: %s", args, err, out)
		}
		return r
	}
	want := gen("-m", src, "-p", "Once upon a time", "-n", "8", "--temp", "0", "--json", "-t", "1")
	if len(want.Tokens) != 8 {
		t.Fatalf("reference run: %+v", want)
	}
	for _, args := range [][]string{
		{"tiny", "Once upon a time", "-n", "8", "--temp", "0", "--json", "-t", "1"},
		{"-n", "8", "tiny:latest", "--temp", "0", "Once", "upon", "a", "time", "--json", "-t", "1"},
		{"tiny:q8", "-n", "8", "--temp", "0", "--json", "-t", "1", "-p", "Once upon a time"},
		{"-m", "tiny", "-n", "8", "--temp", "0", "--json", "-t", "1", "Once upon a time"},
		{"-m", src, "-n", "8", "--temp", "0", "--json", "-t", "1", "Once upon a time"},
		{src, "-n", "8", "--temp", "0", "--json", "-t", "1", "--", "Once upon a time"},
	} {
		if got := gen(args...); !slices.Equal(got.Tokens, want.Tokens) || got.Text != want.Text {
			t.Errorf("run %q = %+v, want %+v", args, got, want)
		}
	}
	_, errs := mustMain(t, 1, "run", "absent", "hi")
	if !strings.Contains(errs, `model "absent" not found`) || !strings.Contains(errs, "woolly import") {
		t.Errorf("a missing name: %s", errs)
	}
	_, errs = mustMain(t, 1, "run", "tiny:q4", "hi")
	if !strings.Contains(errs, `"tiny:q4" not found`) {
		t.Errorf("a missing tag: %s", errs)
	}
	_, errs = mustMain(t, 2, "run", "tiny", "hi", "-p", "hello")
	if !strings.Contains(errs, "twice") {
		t.Errorf("two prompts: %s", errs)
	}
	_, errs = mustMain(t, 2, "run")
	if !strings.Contains(errs, "a model is required") {
		t.Errorf("no model: %s", errs)
	}
	// Not a terminal (go test's stdin): no prompt is an error, not a chat.
	_, errs = mustMain(t, 2, "run", "tiny")
	if !strings.Contains(errs, "a prompt is required") {
		t.Errorf("no prompt: %s", errs)
	}

	old := chatInput
	defer func() { chatInput = old }()
	chatInput = strings.NewReader("Hello\n/bye\n")
	out, errs := mustMain(t, 0, "chat", "tiny", "-n", "4", "--temp", "0", "-t", "1")
	if strings.Count(out, ">>> ") != 2 {
		t.Errorf("chat by name: %q %s", out, errs)
	}
	_, errs = mustMain(t, 2, "chat", "tiny", "extra")
	if !strings.Contains(errs, "unexpected arguments") {
		t.Errorf("chat with a prompt: %s", errs)
	}
}

func TestShow(t *testing.T) {
	_, src := modelsEnv(t)
	mustMain(t, 0, "import", src, "tiny")
	out, _ := mustMain(t, 0, "show", "tiny")
	for _, want := range []string{"architecture", "llama", "parameters", "context length", "quantization", "Q8_0",
		"Capabilities", "completion", "temperature", "0.8", "top_k", "40", "Template", "ChatML"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	phi3 := filepath.Join(filepath.Dir(src), "synth-phi3-mini-Q4_K_M.gguf")
	mustMain(t, 0, "import", "--link", phi3, "phi3:mini")
	out, _ = mustMain(t, 0, "show", "phi3:mini")
	if !strings.Contains(out, "phi3") || !strings.Contains(out, "Q4_K_M") || !strings.Contains(out, "    {{ bos_token }}{% for message in messages %}") {
		t.Errorf("show phi3:mini:\n%s", out)
	}
	tmpl, _ := mustMain(t, 0, "show", "--template", "phi3:mini")
	if !strings.HasPrefix(tmpl, "{{ bos_token }}") || !strings.Contains(tmpl, "<|user|>") || strings.Contains(tmpl, "Capabilities") {
		t.Errorf("show --template:\n%s", tmpl)
	}
	// A model without a template: nothing on stdout, a message on stderr
	// naming what chat uses instead, exit 1.
	out, errs := mustMain(t, 1, "show", "--template", "tiny")
	if out != "" || !strings.Contains(errs, "no chat template") || !strings.Contains(errs, "ChatML") {
		t.Errorf("show --template of a model without one: stdout %q stderr %q", out, errs)
	}
	params, _ := mustMain(t, 0, "show", "tiny", "--parameters")
	if !strings.Contains(params, "temperature") || strings.Contains(params, "Template") {
		t.Errorf("show --parameters:\n%s", params)
	}
	mustMain(t, 1, "show", "absent")
	mustMain(t, 2, "show")
	mustMain(t, 2, "show", "--template", "--parameters", "tiny")
}

func TestServerURL(t *testing.T) {
	t.Setenv("WOOLLY_PORT", "")
	os.Unsetenv("WOOLLY_PORT")
	for in, want := range map[string]string{
		"": "http://127.0.0.1:8080", "0.0.0.0": "http://127.0.0.1:8080", "example.test": "http://example.test:8080",
		"10.1.2.3:11434": "http://10.1.2.3:11434", "[::1]:9000": "http://[::1]:9000", "::": "http://127.0.0.1:8080",
		"http://h:1/": "http://h:1", "https://h": "https://h",
	} {
		if got, err := serverURL(in); err != nil || got != want {
			t.Errorf("serverURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	t.Setenv("WOOLLY_PORT", "11434")
	if got, _ := serverURL("localhost"); got != "http://localhost:11434" {
		t.Errorf("with WOOLLY_PORT: %q", got)
	}
	t.Setenv("WOOLLY_PORT", "port")
	if _, err := serverURL(""); err == nil {
		t.Error("a bad WOOLLY_PORT was accepted")
	}
}

// ps asks a running server (here one on loopback over the models
// directory) which models it holds.
func TestPs(t *testing.T) {
	dir, src := modelsEnv(t)
	mustMain(t, 0, "import", src, "tiny")
	srv, err := server.New(server.Config{ModelsDir: dir}, server.RuntimeBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	t.Setenv("WOOLLY_HOST", hs.URL)
	out, _ := mustMain(t, 0, "ps")
	if strings.TrimSpace(out) != "NAME   SIZE   PROCESSOR   UNTIL" {
		t.Errorf("ps with nothing loaded: %q", out)
	}
	body := `{"model":"tiny","prompt":"Once","stream":false,"keep_alive":"10m","options":{"num_predict":1}}`
	resp, err := http.Post(hs.URL+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("generate: %s", resp.Status)
	}
	os.Unsetenv("WOOLLY_HOST")
	out, _ = mustMain(t, 0, "ps", "--host", strings.TrimPrefix(hs.URL, "http://"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "tiny:latest ") || !strings.Contains(lines[1], "100% CPU") ||
		!strings.Contains(lines[1], "from now") {
		t.Errorf("ps after a generation:\n%s", out)
	}

	// stop unloads it (keep_alive 0); ps then lists nothing.
	mustMain(t, 0, "stop", "tiny:latest", "--host", hs.URL)
	out, _ = mustMain(t, 0, "ps", "--host", hs.URL)
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("ps after stop:\n%s", out)
	}
	_, errs := mustMain(t, 1, "stop", "absent", "--host", hs.URL)
	if !strings.Contains(errs, "404") || !strings.Contains(errs, "absent") {
		t.Errorf("stop of a missing model: %s", errs)
	}
	mustMain(t, 2, "stop")

	// Nothing listening: an error naming the address and how to start one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, errs = mustMain(t, 1, "ps", "--host", addr)
	if !strings.Contains(errs, "no answer from a woolly server at http://"+addr) || !strings.Contains(errs, "woolly serve") {
		t.Errorf("ps without a server: %s", errs)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("ps took too long to give up")
	}
	mustMain(t, 2, "ps", "extra")
}

func dirExists(d string) bool {
	fi, err := os.Stat(d)
	return err == nil && fi.IsDir()
}

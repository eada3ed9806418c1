package cli

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goruntime "runtime"
)

// The CLI items of issue 25: every usage error is one line naming the
// flag, exit 2, before a model is loaded or a server started.
func TestUsageErrorsNameTheFlag(t *testing.T) {
	models := t.TempDir()
	over := strconv.Itoa(goruntime.NumCPU() + 1)
	badTmpl := filepath.Join(models, "bad.jinja")
	emptyTmpl := filepath.Join(models, "empty.jinja")
	if os.WriteFile(badTmpl, []byte("{% for x in %}"), 0o644) != nil || os.WriteFile(emptyTmpl, []byte(" \n"), 0o644) != nil {
		t.Fatal("writing templates")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-m", "missing.gguf", "-p", "hi", "-t", "-1"}, "-t -1"},
		{[]string{"run", "-m", "missing.gguf", "-p", "hi", "-t", "10000"}, "-t 10000"},
		{[]string{"run", "-m", "missing.gguf", "-p", "hi", "-t", over}, "-t " + over},
		{[]string{"run", "-m", "missing.gguf", "-p", "hi", "-c", "-5"}, "-c -5"},
		{[]string{"chat", "-m", "missing.gguf", "-t", "-1"}, "-t -1"},
		{[]string{"chat", "-m", "missing.gguf", "-c", "-5"}, "-c -5"},
		{[]string{"run", "-m", "missing.gguf", "-p", ""}, "-p is empty"},
		{[]string{"serve", "--models", models, "-c", "-1"}, "-c -1"},
		{[]string{"serve", "--models", models, "-t", "-2"}, "-t -2"},
		{[]string{"serve", "--models", models, "--body-timeout", "0s"}, "--body-timeout"},
		{[]string{"serve", "--models", models, "--timeout", "-5s"}, "--timeout"},
		{[]string{"serve", "--models", models, "--chat-template-file", badTmpl}, "--chat-template-file " + badTmpl},
		{[]string{"serve", "--models", models, "--chat-template-file", emptyTmpl}, "--chat-template-file " + emptyTmpl},
		{[]string{"serve", "--models", models, "--chat-template-file", filepath.Join(models, "none")}, "--chat-template-file"},
		{[]string{"serve", "--models", models, "--chat-template", "chatmlx"}, `--chat-template "chatmlx"`},
		{[]string{"serve", "--models", models, "--chat-template", "{% if %}"}, "--chat-template"},
		{[]string{"serve", "--models", models, "--chat-template", "chatml", "--chat-template-file", badTmpl}, "both given"},
		{[]string{"logits", "-m", "missing.gguf"}, "--tokens"},
		{[]string{"logits", "-m", "missing.gguf", "-p", "hi", "--top", "0"}, "--top 0"},
		{[]string{"logits", "-m", "missing.gguf", "-p", "hi", "-t", "-1"}, "-t -1"},
		{[]string{"perplexity", "-m", "missing.gguf"}, "-f FILE"},
		{[]string{"perplexity", "-m", "missing.gguf", "-f", "x.txt", "-c", "2"}, "-c 2"},
		{[]string{"bench", "-m", "missing.gguf", "-n", "-5"}, `-n "-5"`},
		{[]string{"bench", "-m", "missing.gguf", "-r", "0"}, "-r 0"},
		{[]string{"bench", "-m", "missing.gguf", "-t", "10000"}, "-t 10000"},
		{[]string{"synth", "--preset", "nope", "-o", "x.gguf"}, "--preset"},
		{[]string{"synth", "--preset", "mini", "-o", "x.gguf", "-t", "-1"}, "-t -1"},
		{[]string{"quantize", "missing.gguf", "out.gguf", "q9"}, "TYPE"},
	} {
		done := make(chan struct{})
		var stdout, stderr string
		var code int
		go func() {
			defer close(done)
			stdout, stderr, code = rtMain(t, c.args...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // serve started instead of refusing
			t.Fatalf("%v: still running after 10 s", c.args)
		}
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", c.args, code, stderr, c.want)
		}
	}
}

// Errors found after parsing name what they are about, and print nothing
// before them.
func TestCommandErrorsNameTheirCause(t *testing.T) {
	model := chatModel(t) // stories260K: a context of 128
	missingDir := filepath.Join(t.TempDir(), "nodir")
	long := strings.Repeat("Once upon a time ", 100)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-m", "missing.gguf"}, "missing.gguf"},
		{[]string{"synth", "--preset", "mini", "-o", filepath.Join(missingDir, "x.gguf")}, "the directory " + missingDir + " does not exist"},
		{[]string{"quantize", model, filepath.Join(missingDir, "x.gguf"), "q8_0"}, "the directory " + missingDir + " does not exist"},
		{[]string{"logits", "-m", model, "-p", long}, "-p has 402 tokens, more than the model's context of 128"},
		{[]string{"bench", "-m", model, "-p", "8", "-n", "100000", "-r", "1"}, "100000 positions"},
	} {
		stdout, stderr, code := rtMain(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, ".tmp") || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, no output and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// chat takes --stop like run: the answer ends before the stop string.
func TestChatStop(t *testing.T) {
	model := chatModel(t)
	old := chatInput
	defer func() { chatInput = old }()
	answer := func(extra ...string) string {
		chatInput = strings.NewReader("Hello\n/bye\n")
		var out, errb bytes.Buffer
		if err := runChat(append([]string{"-m", model, "-n", "16", "--temp", "0", "-t", "1"}, extra...), &out, &errb); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		return strings.Split(out.String(), ">>> ")[1]
	}
	full := answer()
	words := strings.Fields(full)
	if len(words) < 2 {
		t.Fatalf("answer %q too short to pick a stop word", full)
	}
	stop := words[1]
	got := answer("--stop", stop)
	if strings.Contains(got, stop) || !strings.HasPrefix(full, strings.TrimSuffix(got, "\n")) || len(got) >= len(full) {
		t.Errorf("--stop %q: %q (without: %q)", stop, got, full)
	}
}

// Ctrl-C during run ends it with exit code 130, as llama-cli.
func TestRunInterruptExits130(t *testing.T) {
	model := filepath.Join("..", "..", "..", "shared", "models", "synth-llama-mini-Q4_K_M.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared models absent (%v)", err)
	}
	// This test's own handler keeps a stray SIGINT from killing the test
	// binary once run has stopped listening.
	mine := make(chan os.Signal, 1)
	signal.Notify(mine, os.Interrupt)
	defer signal.Stop(mine)
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	var code int
	var wg sync.WaitGroup
	wg.Go(func() {
		code = realMain([]string{"run", "-m", model, "-p", "hello", "-n", "100000", "-c", "2048", "-t", "1"}, pw, &errb)
		pw.Close()
	})
	first := make([]byte, 1)
	if _, err := io.ReadFull(pr, first); err != nil { // generating
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	go io.Copy(io.Discard, pr)
	wg.Wait()
	if code != 130 || !strings.Contains(errb.String(), "stop: cancel") {
		t.Errorf("exit %d, stderr %q; want 130 after the summary", code, errb.String())
	}
}

// Package e2e runs `woolly serve` as a process and drives it with the
// official ollama, openai and @anthropic-ai/sdk npm clients (e2e.mjs).
// Run `npm ci` in this directory first; without node_modules the client
// part is skipped.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/loader"
)

const testModel = "stories260K-Q8_0"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildWoolly builds the woolly command once per test run.
func buildWoolly(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "woolly-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "woolly")
		if out, err := exec.Command("go", "build", "-o", binPath, "../cmd/woolly").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// toolsModel is a shared model given a chat template that takes tools
// (Qwen2.5's): modelsWithTools writes it beside links to the shared models.
const toolsModel = "qwen-tools"

// modelsWithTools makes a models directory holding links to the shared
// models and toolsModel.
func modelsWithTools(t *testing.T, shared string) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(shared, "*.gguf"))
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := os.ReadFile(filepath.Join("..", "runtime", "chat", "testdata", "tools", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	err = loader.CopyWith(filepath.Join(shared, "synth-qwen2-mini-Q4_K_M.gguf"), filepath.Join(dir, toolsModel+".gguf"),
		func(_ *loader.File, w *loader.Writer) { w.SetString("tokenizer.chat_template", string(tmpl)) })
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// startServer builds woolly and runs `woolly serve` on a free loopback port;
// it returns the base URL and the running command.
func startServer(t *testing.T, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	models := filepath.Join("..", "..", "shared", "models")
	if _, err := os.Stat(filepath.Join(models, testModel+".gguf")); err != nil {
		t.Skipf("shared models absent (%v); the e2e test needs ../shared/models", err)
	}
	models = modelsWithTools(t, models)
	bin := buildWoolly(t)
	args := append([]string{"serve", "--host", "127.0.0.1", "--port", "0", "--models", models, "-t", "1"}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("server: " + sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case u := <-addr:
		return u, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("woolly serve did not report its address")
	}
	return "", nil
}

func TestServeWithNpmClients(t *testing.T) {
	url, cmd := startServer(t, "--api-key", "e2e-key")
	// The server is up and guarded by the key.
	res, err := http.Get(url + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/tags without the key: %d", res.StatusCode)
	}
	res, err = http.Get(url + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("health: %d", res.StatusCode)
	}

	// The npm clients: a subtest of their own, so that without them the
	// run says "skipped", not "passed".
	t.Run("npm-clients", func(t *testing.T) {
		node := nodeWith(t, "node_modules", "the npm clients")
		runScript(t, node, "e2e.mjs", 3*time.Minute, "WOOLLY_URL="+url, "WOOLLY_MODEL="+testModel, "WOOLLY_API_KEY=e2e-key",
			"WOOLLY_TOOLS_MODEL="+toolsModel)
	})

	// SIGTERM: a graceful exit with status 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, "SIGTERM")
}

// TestShutdownCancelsStreams checks that SIGINT during a long streaming
// answer still ends the server promptly and cleanly.
func TestShutdownCancelsStreams(t *testing.T) {
	url, cmd := startServer(t)
	body := `{"model":"` + testModel + `","prompt":"Once upon a time","options":{"num_predict":-1,"num_ctx":512}}`
	res, err := http.Post(url+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	io.Copy(io.Discard, br)
	waitExit(t, cmd, "SIGINT")
}

// waitExit waits for woolly serve to end after sig: status 0 within 20s.
func waitExit(t *testing.T, cmd *exec.Cmd, sig string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("woolly serve after %s: %v", sig, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("woolly serve did not exit within 20s of %s", sig)
	}
}

// nodeWith returns node's path when it and need (the npm packages below
// e2e, installed by `npm ci --prefix e2e`) are there; else it skips t (or
// fails it in CI), saying that what (the script's part) cannot run.
func nodeWith(t *testing.T, need, what string) string {
	t.Helper()
	if _, err := os.Stat(need); err != nil {
		skipTool(t, "e2e/%s is missing; run `npm ci --prefix e2e` (node >= 20) to enable %s", need, what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skipTool(t, "node is not installed: %s cannot run", what)
	}
	return node
}

// runScript runs `node script` in this directory with env added to the
// environment, for at most limit, logs its output and fails t unless it
// ran to its last line ("N checks passed").
func runScript(t *testing.T, node, script string, limit time.Duration, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	js := exec.CommandContext(ctx, node, script)
	js.Env = append(os.Environ(), env...)
	out, err := js.CombinedOutput()
	t.Logf("node %s:\n%s", script, out)
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	if !strings.Contains(string(out), "checks passed") {
		t.Fatalf("%s did not finish", script)
	}
}

// skipTool skips t for want of a tool (node, the npm packages, Chromium),
// or fails it in CI (CI=true), where .ci/run installs every one of them: a
// CI run must not report a client test as passed that never ran.
func skipTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so this is a failure: "+format, args...)
	}
	t.Skipf(format, args...)
}

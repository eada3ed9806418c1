package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWebChatPage loads the chat page of a running `woolly serve` in
// headless Chromium (e2e/web.mjs, playwright-core), sends a message and
// watches the answer stream in, stops a long one, and reloads to find the
// conversation kept. The screenshot goes to $WOOLLY_SCREENSHOT, else to
// the test's artifact directory (go test -artifacts keeps it).
func TestWebChatPage(t *testing.T) {
	exe := os.Getenv("CHROMIUM")
	if exe == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				exe = p
				break
			}
		}
	}
	if exe == "" {
		skipTool(t, "no Chromium (install the Debian package `chromium`, or set CHROMIUM to a Chrome binary); .ci/run installs it")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skipTool(t, "node is not installed; the browser test drives Chromium with playwright-core")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "playwright-core")); err != nil {
		skipTool(t, "e2e/node_modules/playwright-core is missing; run `npm ci --prefix e2e`")
	}
	shot := os.Getenv("WOOLLY_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.ArtifactDir(), "web-chat.png")
	} else if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	// Opened here so that go test's cache sees a change to them (node and
	// the woolly build read them outside the test process).
	for _, f := range []string{"web.mjs", "../server/web/index.html", "../server/web/app.js", "../server/web/style.css"} {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	url, _ := startServer(t, "--api-key", "web-key")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	js := exec.CommandContext(ctx, node, "web.mjs")
	js.Env = append(os.Environ(), "WOOLLY_URL="+url, "WOOLLY_MODEL="+testModel, "WOOLLY_SLOW_MODEL=synth-llama-mini-F16",
		"WOOLLY_API_KEY=web-key", "CHROMIUM="+exe, "SCREENSHOT="+shot)
	out, err := js.CombinedOutput()
	t.Logf("node web.mjs:\n%s", out)
	t.Logf("screenshot: %s", shot)
	if err != nil {
		t.Fatalf("node web.mjs: %v", err)
	}
	if !strings.Contains(string(out), "checks passed") {
		t.Fatal("web.mjs did not finish")
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestWebChatPage loads the chat page of a running `woolly serve` in
// headless Chromium (e2e/web.mjs, playwright-core), sends a message and
// watches the answer stream in, stops a long one, and reloads to find the
// conversation kept. The screenshot goes to $WOOLLY_SCREENSHOT, else to
// the test's artifact directory (go test -artifacts keeps it).
func TestWebChatPage(t *testing.T) {
	exe := chromium(t)
	node := nodeWith(t, filepath.Join("node_modules", "playwright-core"), "the browser test (it drives Chromium with playwright-core)")
	shot := os.Getenv("WOOLLY_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.ArtifactDir(), "web-chat.png")
	} else if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	// Opened here so that go test's cache sees a change to them (node and
	// the woolly build read them outside the test process).
	for _, f := range []string{"web.mjs", "check.mjs", "../server/web/index.html", "../server/web/app.js", "../server/web/style.css"} {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	url, _ := startServer(t, "--api-key", "web-key")
	t.Logf("screenshot: %s", shot)
	runScript(t, node, "web.mjs", 4*time.Minute, "WOOLLY_URL="+url, "WOOLLY_MODEL="+testModel, "WOOLLY_SLOW_MODEL=synth-llama-mini-F16",
		"WOOLLY_API_KEY=web-key", "CHROMIUM="+exe, "SCREENSHOT="+shot)
}

// chromium is the browser's path: $CHROMIUM, else the first of Chromium's
// usual names on the PATH; without one it skips t (fails it in CI).
func chromium(t *testing.T) string {
	t.Helper()
	if exe := os.Getenv("CHROMIUM"); exe != "" {
		return exe
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipTool(t, "no Chromium (install the Debian package `chromium`, or set CHROMIUM to a Chrome binary); .ci/run installs it")
	return ""
}

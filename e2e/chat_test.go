package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a reader goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(cond func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestChatCtrlC: Ctrl-C (SIGINT) during an answer stops the answer; the
// program goes on to the next prompt and /bye ends it with status 0.
func TestChatCtrlC(t *testing.T) {
	// A random-weight model that talks until its context is full (~3 s).
	model := filepath.Join("..", "..", "shared", "models", "synth-llama-mini-F16.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared models absent (%v)", err)
	}
	cmd := exec.Command(buildWoolly(t), "chat", "-m", model, "--temp", "0", "-t", "1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitFor(func() bool { return strings.Count(out.String(), ">>> ") == 1 }, 30*time.Second) {
		t.Fatalf("no prompt; stderr: %s", errb.String())
	}
	io.WriteString(stdin, "Once upon a time\n")
	// Wait for the answer to start streaming, then interrupt it.
	if !waitFor(func() bool { return len(out.String()) > len(">>> ")+20 }, 30*time.Second) {
		t.Fatalf("no answer; stderr: %s", errb.String())
	}
	if strings.Count(out.String(), ">>> ") > 1 {
		t.Skip("the answer ended before the interrupt could be sent")
	}
	cmd.Process.Signal(syscall.SIGINT)
	if !waitFor(func() bool { return strings.Count(out.String(), ">>> ") == 2 }, 30*time.Second) {
		t.Fatalf("no prompt after Ctrl-C; stdout %q stderr %s", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "answer stopped") {
		t.Errorf("stderr lacks 'answer stopped': %s", errb.String())
	}
	io.WriteString(stdin, "/bye\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat exit: %v; stderr %s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chat did not exit after /bye")
	}
}

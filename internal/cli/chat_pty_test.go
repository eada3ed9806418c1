package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/internal/shared"
)

// TestMain lets a test run this binary as the woolly command (the chat on
// a pseudo-terminal needs a process of its own: the terminal's signals go
// to it).
func TestMain(m *testing.M) {
	if os.Getenv("WOOLLY_TEST_MAIN") == "1" {
		os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// screen collects what a process writes to its terminal.
type screen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark int // expect looks after this offset
	done chan struct{}
}

func (s *screen) read(f *os.File) {
	defer close(s.done)
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// expect waits until want appears after the mark and moves the mark past
// it; it returns the text from the old mark to the end of want.
func (s *screen) expect(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		text := s.buf.String()
		if i := strings.Index(text[s.mark:], want); i >= 0 {
			seen := text[s.mark : s.mark+i+len(want)]
			s.mark += i + len(want)
			s.mu.Unlock()
			return seen
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q; its end:\n%q", want, text[max(0, len(text)-800):])
		}
		select {
		case <-s.done:
			s.mu.Lock()
			text = s.buf.String()
			s.mu.Unlock()
			if !strings.Contains(text[s.mark:], want) {
				t.Fatalf("the program ended without showing %q; it showed:\n%q", want, text)
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startOnPty runs woolly with args on a new pseudo-terminal (HOME and
// WOOLLY_MODELS set) and returns its screen, a way to type (then to wait
// for each of then to show in turn: it returns what the screen showed up
// to the last), and a way to wait for it to exit (failing the test, named
// by what was typed last, if it does not within 30 seconds or exits with
// an error). The process is
// killed at the end of the test if still running.
func startOnPty(t *testing.T, home, dir string, args ...string) (*screen, func(keys string, then ...string) string, func(string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "WOOLLY_TEST_MAIN=1", "HOME="+home, "WOOLLY_MODELS="+dir, "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	sc := &screen{done: make(chan struct{})}
	go sc.read(tty)
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		tty.Close()
	})
	send := func(keys string, then ...string) string {
		t.Helper()
		if _, err := tty.WriteString(keys); err != nil {
			t.Fatal(err)
		}
		seen := ""
		for _, want := range then {
			seen += sc.expect(t, want)
		}
		return seen
	}
	wait := func(last string) {
		t.Helper()
		select {
		case <-exited:
			if waitErr != nil {
				t.Fatalf("%s: %v", last, waitErr)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the chat did not end after %s", last)
		}
	}
	return sc, send, wait
}

// tinyModels makes a models directory holding the shared tiny model as
// "tiny" (a link) and returns a home directory and the models directory.
func tinyModels(t *testing.T) (string, string) {
	src := filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
	home := t.TempDir()
	dir := filepath.Join(home, "models")
	if err := models.Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := models.Import(dir, src, "tiny", models.ImportOptions{Link: true}); err != nil {
		t.Fatal(err)
	}
	return home, dir
}

// `woolly run NAME` with no prompt, on a terminal, is the chat (Ollama's
// run); Ctrl-D on an empty line ends it.
func TestRunWithoutPromptChats(t *testing.T) {
	home, dir := tinyModels(t)
	sc, send, wait := startOnPty(t, home, dir, "run", "tiny", "-n", "4", "-t", "1")
	sc.expect(t, "/? lists the commands")
	sc.expect(t, ">>> ")
	send("Hi there\r", "Hi there\r\n", ">>> ")
	send("\x04")
	wait("Ctrl-D")
}

// The chat on a terminal: line editing and history (the Up arrow recalls a
// line instead of reaching the model as "\x1b[A"), the slash commands,
// """ blocks, /save and /load, Ctrl-C at the prompt, /bye.
func TestChatREPLOnTerminal(t *testing.T) {
	home, dir := tinyModels(t)
	sc, send, wait := startOnPty(t, home, dir, "chat", "tiny", "-n", "6", "--temp", "0", "-t", "1", "-c", "256", "--show-prompt")

	// turn sends keys that end in a message and returns the prompt the
	// model was given (--show-prompt) once the answer is written.
	turn := func(keys string) string {
		t.Helper()
		send(keys, "[prompt] ")
		line := sc.expect(t, "\n")
		sc.expect(t, ">>> ")
		return strings.TrimRight(line, "\r\n")
	}

	sc.expect(t, "/? lists the commands")
	sc.expect(t, ">>> ")
	if p := turn("Hello\r"); !strings.Contains(p, `<|im_start|>user\nHello<|im_end|>`) {
		t.Fatalf("first turn: %s", p)
	}

	// Up recalls "Hello": the second prompt holds it twice, and no escape.
	send("\x1b[A", "Hello")
	if p := turn("\r"); strings.Count(p, `<|im_start|>user\nHello<|im_end|>`) != 2 || strings.Contains(p, `\x1b`) {
		t.Fatalf("Up then Enter: %s", p)
	}
	// Line editing: Left and a typed letter mid-line, Ctrl-A to the start.
	send("ello\x1b[D\x1b[D\x1b[D\x1b[DH\x01/show system\x1b[3~\x1b[3~\x1b[3~\x1b[3~\x1b[3~\r", "No system message was set.")

	// Tab completes the commands and their words.
	if seen := send("/sh\tpa\t\r", "num_predict"); !strings.Contains(seen, "temperature ") {
		t.Fatalf("/sh<Tab>pa<Tab>: %q", seen)
	}
	sc.expect(t, ">>> ")

	if help := send("/?\r", "this help"); !strings.Contains(help, "/set parameter NAME VALUE") {
		t.Fatalf("/?: %q", help)
	}
	sc.expect(t, `Use """ to begin a multi-line message`)
	send("/help\r", "/load NAME")
	send("/frobnicate now\r", `Unknown command "/frobnicate": /? lists the commands`)
	if seen := send("/set parameter temperature hot\r", "temperature: want a number"); strings.Contains(seen, "[prompt]") {
		t.Fatalf("an unknown command reached the model: %q", seen)
	}
	send("/set parameter top_p 2\r", "top_p 2 is out of range")
	send("/set parameter temperature 0.25\r", "Set parameter 'temperature' to '0.25'.")
	if seen := send("/show parameters\r", "num_predict"); !strings.Contains(seen, "temperature        0.25") || !strings.Contains(seen, "top_p              0.95") {
		t.Fatalf("/show parameters: %q", seen)
	}
	send("/set parameter temperature 0\r", "Set parameter")

	send(`"""`+"\r", "... ")
	send("line one\r", "... ")
	if p := turn(`line two"""` + "\r"); !strings.Contains(p, `<|im_start|>user\nline one\nline two<|im_end|>`) {
		t.Fatalf(`""" block: %s`, p)
	}

	send("/set system be brief\r", "Set the system message.")
	send("/show system\r", "be brief")
	if p := turn("Hi\r"); !strings.HasPrefix(p, `"<|im_start|>system\nbe brief<|im_end|>`) || !strings.Contains(p, "Hello") {
		t.Fatalf("with a system message: %s", p)
	}

	send("/save first\r", "Saved the conversation (8 messages)")
	saved := filepath.Join(home, ".woolly", "conversations", "first.json")
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var conv struct {
		System   string
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(b, &conv); err != nil || conv.System != "be brief" || len(conv.Messages) != 8 || conv.Messages[0].Content != "Hello" {
		t.Fatalf("saved %s: %v", b, err)
	}
	send("/clear\r", "Cleared the conversation.")
	if p := turn("Again\r"); strings.Contains(p, "Hello") || !strings.Contains(p, "be brief") {
		t.Fatalf("after /clear: %s", p)
	}
	send("/load first\r", "8 messages.")
	if p := turn("More\r"); !strings.Contains(p, `user\nHello<|im_end|>`) || strings.Contains(p, "Again") {
		t.Fatalf("after /load: %s", p)
	}
	send("/load ../etc/passwd\r", "invalid conversation name")

	// Ctrl-C at the prompt drops the line and says how to leave.
	send("half a line\x03", "to leave, type /bye or press Ctrl-D", ">>> ")
	send("/bye\r")
	wait("/bye")
	hist, err := os.ReadFile(filepath.Join(home, ".woolly", "history"))
	if err != nil || !strings.Contains(string(hist), "/set system be brief\n") {
		t.Errorf("history file: %q, %v", hist, err)
	}
}

// A system message the chat template leaves out (the Phi-3 mini's renders
// only user and assistant turns) gets a warning, at the start and on
// /set system; one the template keeps (ChatML) does not.
func TestChatWarnsDroppedSystem(t *testing.T) {
	dir := filepath.Join(shared.Dir(t), "models")
	t.Setenv("HOME", t.TempDir())
	old := chatInput
	defer func() { chatInput = old }()
	for _, c := range []struct {
		model string
		warn  int
	}{{"synth-phi3-mini-Q4_K_M.gguf", 2}, {"stories260K-Q8_0.gguf", 0}} {
		chatInput = strings.NewReader("/set system be brief\n/show system\n/bye\n")
		out, errs := mustMain(t, 0, "chat", "-m", filepath.Join(dir, c.model), "--system", "talk like a pirate", "-n", "2", "-t", "1")
		if got := strings.Count(errs, "leaves the system message out"); got != c.warn {
			t.Errorf("%s: %d warnings, want %d:\n%s", c.model, got, c.warn, errs)
		}
		if !strings.Contains(out, "be brief") {
			t.Errorf("%s: /show system: %q", c.model, out)
		}
	}
}

// Ctrl-C on the terminal while an answer is written stops the answer (the
// terminal's interrupt, SIGINT), and the chat goes on.
func TestChatCtrlCStopsAnswerOnTerminal(t *testing.T) {
	home, dir := tinyModels(t)
	// A context far past the model's 128 makes an answer long enough to
	// interrupt (-n -1: until the context is full).
	sc, send, wait := startOnPty(t, home, dir, "chat", "tiny", "-n", "-1", "-t", "1", "-c", "32768")
	sc.expect(t, ">>> ")
	send("Once upon a time\r", "Once upon a time\r\n")
	sc.expect(t, " ") // the answer has begun
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	send("\x03", "woolly chat: answer stopped")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the answer stopped %v after Ctrl-C", d)
	}
	sc.expect(t, ">>> ")
	send("/bye\r")
	wait("/bye")
}

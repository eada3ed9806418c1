package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime"
)

func chatModel(t *testing.T) string {
	p := filepath.Join("..", "..", "..", "shared", "models", "stories260K-Q8_0.gguf")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared models absent (%v)", err)
	}
	return p
}

func TestChatPipe(t *testing.T) {
	model := chatModel(t)
	old := chatInput
	defer func() { chatInput = old }()
	chatInput = strings.NewReader("Hello\n\nWho are you?\n/bye\nnever read\n")
	var out, errb bytes.Buffer
	if err := runChat([]string{"-m", model, "-n", "8", "--temp", "0", "-t", "1", "--show-prompt"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	// Three prompts: two turns (the empty line is skipped silently), then /bye.
	turns := strings.Split(out.String(), ">>> ")
	if len(turns) != 5 || turns[0] != "" || turns[2] != "" {
		t.Fatalf("stdout %q", out.String())
	}
	first := strings.TrimSuffix(turns[1], "\n")
	if first == "" || strings.TrimSuffix(turns[3], "\n") == "" {
		t.Fatalf("empty answer in %q", out.String())
	}
	if !strings.Contains(errb.String(), "no chat template; using ChatML") {
		t.Errorf("stderr lacks the ChatML notice: %s", errb.String())
	}
	// The second prompt carries the history: the first question and answer.
	var prompts []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if p, ok := strings.CutPrefix(l, "[prompt] "); ok {
			prompts = append(prompts, p)
		}
	}
	if len(prompts) != 2 {
		t.Fatalf("prompts %q", prompts)
	}
	if !strings.Contains(prompts[1], `user\nHello<|im_end|>`) || !strings.Contains(prompts[1], "assistant\\n") ||
		!strings.Contains(prompts[1], `Who are you?`) || !strings.HasPrefix(prompts[1], strings.TrimSuffix(prompts[0], `"`)) {
		t.Errorf("second prompt lacks the history: %s", prompts[1])
	}
	if strings.Contains(out.String(), "never read") {
		t.Error("input after /bye was used")
	}
}

// interruptingWriter raises an interrupt at its first write, as Ctrl-C
// during an answer would.
type interruptingWriter struct {
	ch     chan os.Signal
	writes int
}

func (w *interruptingWriter) Write(b []byte) (int, error) {
	if w.writes == 0 {
		w.ch <- os.Interrupt
	}
	w.writes++
	return len(b), nil
}

func TestChatInterruptStopsAnswer(t *testing.T) {
	m, err := runtime.Load(chatModel(t), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sess, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan os.Signal, 1)
	var atPrompt bytes.Buffer
	ctrlC := newInterruptWatcher(&atPrompt)
	go ctrlC.watch(ch)
	defer close(ch)
	w := &interruptingWriter{ch: ch}
	o := runtime.GenerateOptions{MaxTokens: -1, Sampler: runtime.SamplerOptions{Temperature: 0}}
	_, reason, err := chatTurn(sess, o, "Once upon a time", ctrlC, w)
	if err != nil {
		t.Fatal(err)
	}
	if reason != "cancel" {
		t.Fatalf("stop reason %q after an interrupt, want cancel (%d pieces written)", reason, w.writes)
	}
	if sess.Pos() >= sess.NCtx() {
		t.Error("the answer ran to the end of the context despite the interrupt")
	}
	// The session still works for the next turn.
	_, reason, err = chatTurn(sess, runtime.GenerateOptions{MaxTokens: 4}, "The dog", ctrlC, &bytes.Buffer{})
	if err != nil || reason != "length" {
		t.Fatalf("next turn: %q %v", reason, err)
	}
	if atPrompt.Len() != 0 {
		t.Errorf("an interrupt during an answer printed %q as if at the prompt", atPrompt.String())
	}
}

// Ctrl-C at the prompt (no answer being written) says how to leave.
func TestChatInterruptAtPrompt(t *testing.T) {
	var out bytes.Buffer
	ctrlC := newInterruptWatcher(&out)
	ctrlC.interrupt()
	if !strings.Contains(out.String(), "/bye") || !strings.Contains(out.String(), "Ctrl-D") {
		t.Errorf("Ctrl-C at the prompt printed %q, want how to leave (/bye, Ctrl-D)", out.String())
	}
	canceled := false
	ctrlC.answering(func() { canceled = true })
	out.Reset()
	ctrlC.interrupt()
	if !canceled || out.Len() != 0 {
		t.Errorf("during an answer: canceled %v, printed %q", canceled, out.String())
	}
}

func TestServeFlagErrors(t *testing.T) {
	var out, errb bytes.Buffer
	t.Setenv("WOOLLY_MODELS", "")
	t.Setenv("HOME", t.TempDir())
	// No --models: the default directory, created (then the bad --timeout stops it).
	if err := runServe([]string{"--timeout", "soon"}, &out, &errb); err == nil {
		t.Error("bad --timeout accepted")
	} else if d, _ := defaultModelsDir(); d == "" || !dirExists(d) {
		t.Errorf("no --models: the default directory %q was not created", d)
	}
	if err := runServe([]string{"--models", t.TempDir(), "--timeout", "soon"}, &out, &errb); err == nil {
		t.Error("bad --timeout accepted")
	}
	if err := runServe([]string{"--models", t.TempDir(), "--keep-alive", "later"}, &out, &errb); err == nil {
		t.Error("bad --keep-alive accepted")
	}
	t.Setenv("WOOLLY_PORT", "eighty")
	if err := runServe([]string{"--models", t.TempDir()}, &out, &errb); err == nil {
		t.Error("bad WOOLLY_PORT accepted")
	}
	for in, want := range map[string]string{"5m": "5m0s", "30": "30s", "-1": "-1s", "0": "0s", "1.5": "1.5s"} {
		d, err := parseKeepAlive(in)
		if err != nil || d.String() != want {
			t.Errorf("parseKeepAlive(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
}

// A conversation longer than the context keeps going: the oldest turns are
// dropped (and said so), the history is not wiped.
func TestChatLongerThanContext(t *testing.T) {
	model := chatModel(t)
	old := chatInput
	defer func() { chatInput = old }()
	var in strings.Builder
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&in, "question %d: %s\n", i, strings.Repeat("tell me about the cat and the dog ", 3))
	}
	in.WriteString("/bye\n")
	chatInput = strings.NewReader(in.String())
	var out, errb bytes.Buffer
	if err := runChat([]string{"-m", model, "-n", "6", "--temp", "0", "-t", "1", "-c", "128", "--show-prompt", "--system", "be kind"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if got := strings.Count(out.String(), ">>> "); got != 7 {
		t.Fatalf("%d prompts, want 7 (six turns and /bye): %q", got, out.String())
	}
	e := errb.String()
	if !strings.Contains(e, "dropped the") || strings.Contains(e, "starting over") {
		t.Fatalf("stderr %s: want the oldest messages dropped, not a restart", e)
	}
	prompts := strings.Split(e, "[prompt] ")
	last := prompts[len(prompts)-1]
	if !strings.Contains(last, "be kind") || !strings.Contains(last, "question 5") || strings.Contains(last, "question 0") {
		t.Fatalf("last prompt %s: want the system message and the newest question, not the oldest", last)
	}
}

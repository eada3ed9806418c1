// Package repl is the chat REPL's front end, apart from the model: reading
// lines (with line editing and history on a terminal), """ multi-line
// input, the slash commands (/?, /set, /show, /clear, /save, /load,
// /bye), the chat's parameters, and saved conversations. cmd/woolly's chat
// drives it and does the generation.
package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"
	"golang.org/x/term"
)

// ErrInterrupt is Ctrl-C at the prompt (on a terminal); the line typed so
// far is dropped.
var ErrInterrupt = errors.New("interrupted")

// LineReader reads the user's lines. ReadLine returns io.EOF at the end of
// the input (Ctrl-D on an empty line) and ErrInterrupt for Ctrl-C.
type LineReader interface {
	ReadLine(prompt string) (string, error)
	Close() error
}

// maxLine bounds one line read from a pipe.
const maxLine = 1 << 20

// NewLineReader reads from in. When in is the process's standard input and
// a terminal, lines are edited with readline: arrows, Home/End, Ctrl-A/E/K/
// U/W, Ctrl-R search, Up and Down through the history (kept in
// historyFile, unless it is ""). Otherwise (a pipe, a file) lines are read
// as they come and the prompt is written to out.
func NewLineReader(in io.Reader, out io.Writer, historyFile string) (LineReader, error) {
	if f, ok := in.(*os.File); ok && f == os.Stdin && term.IsTerminal(int(f.Fd())) {
		if historyFile != "" { // its directory is made on first use; without one, no history is kept
			if err := os.MkdirAll(filepath.Dir(historyFile), 0o755); err != nil {
				historyFile = ""
			}
		}
		rl, err := readline.NewEx(&readline.Config{
			HistoryFile:       historyFile,
			HistorySearchFold: true,
			AutoComplete:      completer(),
			Stdout:            out,
			InterruptPrompt:   "^C",
			EOFPrompt:         "",
		})
		if err != nil {
			return nil, err
		}
		return &terminalReader{rl}, nil
	}
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 64<<10), maxLine)
	return &pipeReader{s: s, out: out}, nil
}

type terminalReader struct{ rl *readline.Instance }

func (r *terminalReader) ReadLine(prompt string) (string, error) {
	r.rl.SetPrompt(prompt)
	line, err := r.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return "", ErrInterrupt
	}
	return line, err
}

func (r *terminalReader) Close() error { return r.rl.Close() }

type pipeReader struct {
	s   *bufio.Scanner
	out io.Writer
}

func (r *pipeReader) ReadLine(prompt string) (string, error) {
	fmt.Fprint(r.out, prompt)
	if !r.s.Scan() {
		fmt.Fprintln(r.out)
		if err := r.s.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	return r.s.Text(), nil
}

func (r *pipeReader) Close() error { return nil }

// Prompts of the REPL.
const (
	Prompt         = ">>> "
	ContinuePrompt = "... "
)

// maxInput bounds a multi-line message.
const maxInput = 4 << 20

// ReadInput reads one input: a line, or, when a line opens a block with
// `"""` (an odd count of them, so `"""text"""` on one line is one line),
// the lines up to the one that closes it, joined by newlines with the
// quotes removed. `/set system """` opens a block too. Ctrl-C in a block
// drops the block (ErrInterrupt); the input ending inside one is an error.
func ReadInput(r LineReader) (string, error) {
	line, err := r.ReadLine(Prompt)
	if err != nil {
		return "", err
	}
	if strings.Count(line, `"""`)%2 == 0 {
		return unquote(line), nil
	}
	var b strings.Builder
	b.WriteString(line)
	for {
		next, err := r.ReadLine(ContinuePrompt)
		if errors.Is(err, io.EOF) {
			return "", errors.New(`the input ended inside a """ block`)
		}
		if err != nil {
			return "", err
		}
		b.WriteString("\n")
		b.WriteString(next)
		if b.Len() > maxInput {
			return "", fmt.Errorf("a multi-line message longer than %d bytes", maxInput)
		}
		if strings.Count(next, `"""`)%2 == 1 {
			return unquote(b.String()), nil
		}
	}
}

// unquote removes the first and the last `"""` of a block (and the newline
// right after the opening one, when that line has nothing else after it).
func unquote(s string) string {
	i := strings.Index(s, `"""`)
	j := strings.LastIndex(s, `"""`)
	if i < 0 || i == j {
		return s
	}
	inner := strings.TrimPrefix(s[i+3:j], "\n")
	return s[:i] + strings.TrimSuffix(inner, "\n") + s[j+3:]
}

// completer completes the commands with Tab: /sh<Tab> is /show, /show
// pa<Tab> is /show parameters, /set parameter t<Tab> lists the parameters
// that start with t.
func completer() readline.AutoCompleter {
	var params []readline.PrefixCompleterInterface
	for _, n := range ParamNames {
		params = append(params, readline.PcItem(n))
	}
	return readline.NewPrefixCompleter(
		readline.PcItem("/set",
			readline.PcItem("parameter", params...),
			readline.PcItem("system"),
			readline.PcItem("think"),
			readline.PcItem("nothink"),
		),
		readline.PcItem("/show",
			readline.PcItem("info"),
			readline.PcItem("parameters"),
			readline.PcItem("system"),
			readline.PcItem("template"),
		),
		readline.PcItem("/clear"),
		readline.PcItem("/save"),
		readline.PcItem("/load"),
		readline.PcItem("/help"),
		readline.PcItem("/bye"),
	)
}

// Command testreport reads `go test -json` on standard input and prints
// what plain `go test` prints (a result line a package, the output of each
// failing test, build errors), without the verbose lines -json implies. It
// adds one thing: every skipped test, with its reason, goes to the file
// named by $WOOLLY_SKIPLOG (one line each), so that `make test` can say at
// its end what did not run.
//
// It exits 1 when a test, a package or a build failed, 0 otherwise.
//
//	go test -json ./... | go run ./internal/testreport
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), with the fields
// read here.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Output     string
}

// report holds each running test's output until the test ends.
type report struct {
	out    io.Writer
	held   map[string][]string // package + "\x00" + test -> output lines
	skips  []string            // "pkg Test: reason"
	failed bool
}

func main() {
	r := &report{out: os.Stdout, held: map[string][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if err := r.writeSkips(os.Getenv("WOOLLY_SKIPLOG")); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if r.failed {
		os.Exit(1)
	}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(r.out, "%s\n", line) // not an event: go test's own message
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "build-fail":
		r.failed = true
	case "output":
		if e.Test == "" {
			if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "testing: warning: no tests to run") {
				fmt.Fprint(r.out, e.Output)
			}
			return
		}
		r.held[key] = append(r.held[key], e.Output)
	case "fail":
		r.failed = true
		for _, l := range r.held[key] {
			fmt.Fprint(r.out, l)
		}
		delete(r.held, key)
	case "skip":
		if e.Test != "" {
			r.skips = append(r.skips, fmt.Sprintf("%s %s: %s", e.Package, e.Test, skipReason(r.held[key])))
		}
		delete(r.held, key)
	case "pass":
		delete(r.held, key)
	}
}

// skipReason is the message a skipped test gave (its last line of output
// that is not go test's own), or "no reason given".
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		return l
	}
	return "no reason given"
}

func (r *report) writeSkips(path string) error {
	if len(r.skips) == 0 {
		return nil
	}
	fmt.Fprintf(r.out, "test-go: %d tests skipped (listed at the end of make test)\n", len(r.skips))
	if path == "" {
		for _, s := range r.skips {
			fmt.Fprintln(r.out, "  skipped:", s)
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, s := range r.skips {
		fmt.Fprintf(f, "test-go: %s\n", s)
	}
	return f.Close()
}

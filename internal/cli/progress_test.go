package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Off a terminal, progress is a plain line at most every few seconds and at
// the end, never carriage-return frames; --no-progress prints nothing.
func TestProgressOffTTY(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "quantizing", false)
	clock := time.Unix(1000, 0)
	p.now = func() time.Time { return clock }
	const total = 100 << 20
	for done := int64(0); done <= total; done += 1 << 20 {
		p.update(done, total)
		clock = clock.Add(200 * time.Millisecond) // 100 updates over 20 s
	}
	p.finish()
	out := buf.String()
	if strings.Contains(out, "\r") {
		t.Fatalf("carriage return in non-terminal output: %q", out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || len(lines) > 6 {
		t.Fatalf("%d lines over 20 s (want one per 5 s and the last): %q", len(lines), out)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "100%") || !strings.Contains(last, "MiB/s") {
		t.Errorf("last line %q, want 100%% and a rate", last)
	}
	// 100 MiB over 20 s: the rate is over the whole run (5 MiB/s), not
	// between two nearby writes.
	if !strings.Contains(lines[len(lines)-1], "5.0 MiB/s") {
		t.Errorf("rate in %q, want 5.0 MiB/s", lines[len(lines)-1])
	}

	buf.Reset()
	off := newProgress(&buf, "quantizing", true)
	off.update(1, 2)
	off.update(2, 2)
	off.finish()
	if buf.Len() != 0 {
		t.Errorf("--no-progress printed %q", buf.String())
	}
}

// woolly quantize and synth refuse to overwrite their input, in one line.
func TestQuantizeRefusesInPlaceCLI(t *testing.T) {
	in := filepath.Join(sharedDir(t), "models", "stories260K-F32.gguf")
	_, stderr, code := rtMain(t, "quantize", in, in, "q8_0")
	if code != 1 || !strings.Contains(stderr, "is the input file") {
		t.Errorf("quantize IN IN: exit %d, %q", code, stderr)
	}
	// Without --no-progress and off a terminal, the progress is plain lines.
	out := filepath.Join(t.TempDir(), "q.gguf")
	_, stderr, code = rtMain(t, "quantize", in, out, "q8_0")
	if code != 0 || strings.Contains(stderr, "\r") || !strings.Contains(stderr, "quantizing: 100%") {
		t.Errorf("quantize to a pipe: exit %d, stderr %q", code, stderr)
	}
}

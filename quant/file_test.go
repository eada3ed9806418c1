package quant

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sharedModel(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "models", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared model not found at %s: %v", p, err)
	}
	return p
}

// QuantizeFile through the library: byte-identical to llama-quantize's file,
// progress reported up to the total, no temporary file left behind.
func TestQuantizeFile(t *testing.T) {
	in := sharedModel(t, "stories260K-F32.gguf")
	want, err := os.ReadFile(sharedModel(t, "stories260K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "q8.gguf")
	var last, total int64
	calls := 0
	sum, err := QuantizeFile(in, out, FileType(7), FileOptions{Threads: 2, Progress: func(d, n int64) {
		if d < last {
			t.Errorf("progress went back: %d after %d", d, last)
		}
		last, total = d, n
		calls++
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("QuantizeFile q8_0: %d bytes, not llama-quantize's %d", len(got), len(want))
	}
	if calls == 0 || last != total || total != sum.BytesOut {
		t.Errorf("progress: %d calls, last %d of %d; summary says %d bytes out", calls, last, total, sum.BytesOut)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries after the write, want only the output", len(ents))
	}
}

// An output that is the input (same path, a cleaned path, a symlink, a
// hard link) is refused before anything is written.
func TestQuantizeFileRefusesInPlace(t *testing.T) {
	src := sharedModel(t, "stories260K-F32.gguf")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.gguf")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, filepath.Join(dir, ".", "in.gguf"), link, hard} {
		_, err := QuantizeFile(in, out, FileType(7), FileOptions{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), "is the input file") {
			t.Errorf("output %s: err %v, want a refusal naming the input", out, err)
		}
	}
	after, _ := os.ReadFile(in)
	if !bytes.Equal(after, b) {
		t.Fatal("the input changed")
	}
	// A refused conversion (requantizing without permission) leaves neither
	// the output nor a temporary file.
	q := filepath.Join(dir, "sub")
	if err := os.Mkdir(q, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(q, "q.gguf")
	if _, err := QuantizeFile(sharedModel(t, "stories260K-Q8_0.gguf"), out, FileType(2), FileOptions{Threads: 1}); err == nil {
		t.Fatal("requantizing Q8_0 tensors without AllowRequantize succeeded")
	}
	if ents, _ := os.ReadDir(q); len(ents) != 0 {
		t.Errorf("a failed quantize left %d files behind", len(ents))
	}
}

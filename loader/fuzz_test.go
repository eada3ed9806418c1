package loader

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. It must never panic; whatever it
// accepts must satisfy the invariants Data relies on, every tensor must be
// found by name, and writing an accepted file back must give a file that
// parses and re-encodes to the same bytes.
//
// The corpus is testdata/fuzz/FuzzParse: each shared model and vocabulary
// cut down to its metadata (arrays to 24 elements) and one one-row tensor per
// type, plus every input that found a bug. WOOLLY_FUZZ_SEEDS=PATTERN adds
// whole files from ../shared (e.g. "models/stories260K-*.gguf"); they make
// each execution slow, so they are off by default.
//
//	go test ./loader -run '^$' -fuzz '^FuzzParse$' -fuzztime 60s -parallel 1
func FuzzParse(f *testing.F) {
	dir := filepath.Join("..", "..", "shared")
	if g := os.Getenv("WOOLLY_FUZZ_SEEDS"); g != "" {
		m, _ := filepath.Glob(filepath.Join(dir, g))
		for _, p := range m {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	w, _ := buildTestFile(f, 64)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		for _, kv := range file.KV {
			file.Get(kv.Key)
			file.String(kv.Key)
			file.Uint(kv.Key)
			file.Int(kv.Key)
			file.Float(kv.Key)
			file.Bool(kv.Key)
			file.Strings(kv.Key)
			file.Float32s(kv.Key)
			file.Int32s(kv.Key)
		}
		file.Architecture()
		file.FileType()
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if got, ok := file.Tensor(ti.Name); !ok || got != ti {
				t.Fatalf("tensor %q (index %d): lookup by name gives %v, %v", ti.Name, i, got, ok)
			}
			d := file.Data(ti)
			if d == nil || int64(len(d)) != ti.Size || ti.Offset%file.Alignment != 0 {
				t.Fatalf("tensor %q: accepted but Data is %d bytes, want %d (offset %d)", ti.Name, len(d), ti.Size, ti.Offset)
			}
			if rb, err := ti.Type.RowBytes(ti.Shape[0]); err != nil || rb*ti.Rows() != ti.Size {
				t.Fatalf("tensor %q: size %d inconsistent with %s %v", ti.Name, ti.Size, ti.Type, ti.Shape)
			}
		}
		out1 := rewrite(t, file)
		f2, err := Parse(out1)
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if len(f2.KV) != len(file.KV) || len(f2.Tensors) != len(file.Tensors) {
			t.Fatalf("rewrite changed counts")
		}
		if out2 := rewrite(t, f2); !bytes.Equal(out1, out2) {
			t.Fatalf("rewrite is not stable")
		}
	})
}

// rewrite writes f back through WriterFrom.
func rewrite(t *testing.T, f *File) []byte {
	w, err := WriterFrom(f)
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	return buf.Bytes()
}

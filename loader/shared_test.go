package loader

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/internal/shared"
)

func sharedDir(t testing.TB) string { return shared.Dir(t) }

// TestSharedModels checks every model against ref/tensor_types.json, which
// was produced by llama.cpp's gguf-py.
func TestSharedModels(t *testing.T) {
	dir := sharedDir(t)
	ref := shared.TensorTypes(t, dir)
	models, _ := filepath.Glob(filepath.Join(dir, "models", "*.gguf"))
	if len(models) == 0 {
		t.Fatal("no models in shared/models")
	}
	for _, path := range models {
		name := filepath.Base(path)
		rf, ok := ref[name]
		if !ok {
			t.Errorf("%s: not in tensor_types.json", name)
			continue
		}
		f, err := Open(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Size != rf.FileBytes || f.Size != int64(len(raw)) {
			t.Errorf("%s: size %d, want %d", name, f.Size, rf.FileBytes)
		}
		if len(f.Tensors) != len(rf.Tensors) {
			t.Errorf("%s: %d tensors, want %d", name, len(f.Tensors), len(rf.Tensors))
		}
		if f.Architecture() == "" {
			t.Errorf("%s: no architecture", name)
		}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			want, ok := rf.Tensors[ti.Name]
			if !ok {
				t.Errorf("%s: unexpected tensor %q", name, ti.Name)
				continue
			}
			abs := f.DataOffset + int64(ti.Offset)
			if ti.Type.String() != want.Type || !reflect.DeepEqual(ti.Shape, want.Ne) || abs != want.DataOffset || ti.Size != want.NBytes {
				t.Errorf("%s: tensor %q: got %s %v at %d (%d bytes), want %s %v at %d (%d bytes)", name, ti.Name,
					ti.Type, ti.Shape, abs, ti.Size, want.Type, want.Ne, want.DataOffset, want.NBytes)
				continue
			}
			d := f.Data(ti)
			if int64(len(d)) != want.NBytes || !bytes.Equal(d, raw[abs:abs+want.NBytes]) {
				t.Errorf("%s: tensor %q: Data does not match the file bytes at %d", name, ti.Name, abs)
			}
		}
		for n := range rf.Tensors {
			if _, ok := f.Tensor(n); !ok {
				t.Errorf("%s: tensor %q missing", name, n)
			}
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestDequantRawBytes checks Data against the block bytes that ref/dequant
// copied out of the model files.
func TestDequantRawBytes(t *testing.T) {
	dir := sharedDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "ref", "dequant", "index.json"))
	if err != nil {
		t.Skipf("no ref/dequant/index.json: %v", err)
	}
	var idx struct {
		Entries []struct {
			Model     string  `json:"model"`
			InModels  bool    `json:"model_in_models_dir"`
			Tensor    string  `json:"tensor"`
			Type      string  `json:"type"`
			Ne        []int64 `json:"tensor_ne"`
			RawFile   string  `json:"raw_file"`
			ByteRange []int64 `json:"byte_range"`
			DataOff   int64   `json:"tensor_data_offset"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range idx.Entries {
		if !e.InModels {
			continue
		}
		f, err := Open(filepath.Join(dir, e.Model))
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := f.Tensor(e.Tensor)
		if !ok {
			t.Fatalf("%s: no tensor %q", e.Model, e.Tensor)
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.RawFile))
		if err != nil {
			t.Fatal(err)
		}
		start := e.ByteRange[0] - f.DataOffset - int64(ti.Offset)
		d := f.Data(ti)
		if ti.Type.String() != e.Type || !reflect.DeepEqual(ti.Shape, e.Ne) || f.DataOffset+int64(ti.Offset) != e.DataOff ||
			start < 0 || start+int64(len(raw)) > int64(len(d)) || !bytes.Equal(d[start:start+int64(len(raw))], raw) {
			t.Errorf("%s %s: Data does not hold %s", e.Model, e.Tensor, e.RawFile)
		}
		f.Close()
		n++
	}
	if n == 0 {
		t.Error("no dequant entry refers to a model in models/")
	}
}

// TestVocabFiles loads every vocabulary-only file.
func TestVocabFiles(t *testing.T) {
	dir := sharedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	if len(files) == 0 {
		t.Skip("no vocab files")
	}
	for _, path := range files {
		name := filepath.Base(path)
		start := time.Now()
		f, err := Open(path)
		el := time.Since(start)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		toks, ok := f.Strings("tokenizer.ggml.tokens")
		if !ok || len(toks) < 100 {
			t.Errorf("%s: tokenizer.ggml.tokens missing or short (%d)", name, len(toks))
		}
		model, ok := f.String("tokenizer.ggml.model")
		if !ok {
			t.Errorf("%s: no tokenizer.ggml.model", name)
		}
		if tt, ok := f.Int32s("tokenizer.ggml.token_type"); ok && len(tt) != len(toks) {
			t.Errorf("%s: %d token types for %d tokens", name, len(tt), len(toks))
		}
		if sc, ok := f.Float32s("tokenizer.ggml.scores"); ok && len(sc) != len(toks) {
			t.Errorf("%s: %d scores for %d tokens", name, len(sc), len(toks))
		}
		// The independent walker in corrupt_test.go must see the same keys.
		b, _ := os.ReadFile(path)
		w, err := walk(b)
		if err != nil {
			t.Fatalf("%s: test walker: %v", name, err)
		}
		if len(w.kvs) != len(f.KV) {
			t.Errorf("%s: %d KVs, walker sees %d", name, len(f.KV), len(w.kvs))
		}
		for i := range w.kvs {
			if i < len(f.KV) && w.kvs[i].key != f.KV[i].Key {
				t.Errorf("%s: key %d is %q, walker sees %q", name, i, f.KV[i].Key, w.kvs[i].key)
			}
		}
		merges, _ := f.Strings("tokenizer.ggml.merges")
		t.Logf("%s: %s, %d tokens, %d merges, %d keys, opened in %v", name, model, len(toks), len(merges), len(f.KV), el)
		f.Close()
	}
}

func BenchmarkParseVocab(b *testing.B) {
	dir := sharedDir(b)
	files, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	sort.Slice(files, func(i, j int) bool { return fileSize(files[i]) > fileSize(files[j]) })
	if len(files) == 0 || !strings.HasSuffix(files[0], ".gguf") {
		b.Skip("no vocab files")
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TestRewriteIdentical writes every shared file back through the Writer:
// llama.cpp wrote them, so the bytes must come out identical (same order,
// same padding, GGUF v3).
func TestRewriteIdentical(t *testing.T) {
	dir := sharedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "models", "*.gguf"))
	vocab, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	for _, path := range append(files, vocab...) {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		out := rewrite(t, f) // WriterFrom: every shared file back byte for byte
		buf := bytes.NewBuffer(out)
		if !bytes.Equal(buf.Bytes(), f.Bytes()) {
			i := 0
			for i < min(buf.Len(), len(f.Bytes())) && buf.Bytes()[i] == f.Bytes()[i] {
				i++
			}
			t.Errorf("%s: rewrite differs at byte %d (%d vs %d bytes)", filepath.Base(path), i, buf.Len(), len(f.Bytes()))
		}
		f.Close()
	}
}

package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// Model-file faults (issue 14 item 3).

// copyModel copies a shared model to a writable temporary file.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	src, err := os.Open(filepath.Join(sharedDir(t), "models", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(t.TempDir(), name+".gguf")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A model file truncated underneath a loaded model is told apart before
// the weights are touched: CheckFile and NewSession (so Model.Generate, and
// the server, which checks before each request) return an error naming
// both sizes instead of faulting.
func TestTruncatedModelFile(t *testing.T) {
	path := copyModel(t, "stories260K-Q8_0")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	m := loadPath(t, path, LoadOptions{Threads: 1})
	if err := m.CheckFile(); err != nil {
		t.Fatalf("intact file: %v", err)
	}
	if _, err := newSession(t, m, 64).Eval([]int32{1, 100}, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	err = m.CheckFile()
	if !errors.Is(err, loader.ErrTruncated) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("CheckFile after truncation = %v, want loader.ErrTruncated naming the sizes", err)
	}
	t.Logf("%v", err)
	if _, err := m.NewSession(64); !errors.Is(err, loader.ErrTruncated) {
		t.Fatalf("NewSession after truncation = %v", err)
	}
	_, err = m.Generate(context.Background(), GenerateOptions{Prompt: "Once", MaxTokens: 2}, nil)
	if !errors.Is(err, loader.ErrTruncated) {
		t.Fatalf("Generate after truncation = %v", err)
	}
	// Growing back (even with other bytes) is not detectable: the size is all
	// that can be checked cheaply.
	if err := os.Truncate(path, st.Size()); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckFile(); err != nil {
		t.Fatalf("after growing back: %v", err)
	}
	// A file cut while it was being opened is refused by Open itself: the
	// parser sees the bytes it mapped, then the size is checked again.
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, LoadOptions{}); err == nil {
		t.Fatal("loading a truncated file succeeded")
	}
}

// What cannot be checked — a session already running when the file is cut
// — faults; the process must not die silently: Go reports the fault (a
// fatal error with "SIGBUS" or "unexpected fault address" and a stack).
// The fault happens in a child process (this test binary, re-run).
func TestTruncatedWhileMappedIsLoud(t *testing.T) {
	if p := os.Getenv("WOOLLY_TRUNCATE_CHILD"); p != "" {
		s := newSession(t, loadPath(t, p, LoadOptions{Threads: 1}), 64)
		if err := os.Truncate(p, 4096); err != nil {
			t.Fatal(err)
		}
		_, err := s.Eval([]int32{1, 100, 200}, false)
		t.Fatalf("Eval over a truncated mapping returned (%v) instead of faulting", err)
	}
	path := copyModel(t, "stories260K-Q8_0")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTruncatedWhileMappedIsLoud$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WOOLLY_TRUNCATE_CHILD="+path, "WOOLLY_HUGEPAGES=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child survived reading a truncated mapping:\n%s", out)
	}
	if !strings.Contains(string(out), "SIGBUS") && !strings.Contains(string(out), "fault") {
		t.Fatalf("the child died without naming the fault (%v):\n%s", err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	t.Logf("child: %v: %s", err, first)
}

// rewriteF32 copies a shared F32 model with one element of one tensor set
// to v (the loader's writer makes the crafted file).
func rewriteF32(t *testing.T, name, tensor string, index int, v float32) string {
	t.Helper()
	found := false
	path := variantEdit(t, name, nil, "", nil, func(ti *loader.TensorInfo, data []byte) (kernels.Type, []byte) {
		if ti.Name != tensor {
			return ti.Type, data
		}
		if ti.Type != kernels.F32 {
			t.Fatalf("%s is %s, want F32", tensor, ti.Type)
		}
		data = append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(data[4*index:], math.Float32bits(v))
		found = true
		return ti.Type, data
	})
	if !found {
		t.Fatalf("%s has no tensor %s", name, tensor)
	}
	return path
}

func evalRows(t *testing.T, path string, tokens []int32) [][]float32 {
	t.Helper()
	m := loadPath(t, path, LoadOptions{Threads: 1})
	all := evalAll(t, newSession(t, m, 64), tokens)
	nv := m.Config().NVocab
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = all[i*nv : (i+1)*nv]
	}
	return rows
}

func countNaN(row []float32) (nan, inf int) {
	for _, v := range row {
		switch {
		case v != v:
			nan++
		case math.IsInf(float64(v), 0):
			inf++
		}
	}
	return
}

// Non-finite weights propagate as IEEE arithmetic does, as in llama.cpp
// (ggml neither checks nor sanitizes): a NaN in a norm weight makes every
// logit NaN; a NaN in one token's embedding row poisons exactly the
// positions that attend to that token (causal), the earlier ones are
// bit-identical to the clean model's; +Inf in the output norm makes every
// logit infinite or NaN. (F32 model: quantized weights and activations
// round NaN through integer conversions, in ggml as anywhere.)
func TestNonFiniteWeightsPropagate(t *testing.T) {
	const name = "stories260K-F32"
	clean := evalRows(t, filepath.Join(sharedDir(t), "models", name+".gguf"), []int32{1, 100, 300, 200})
	for _, row := range clean {
		if n, i := countNaN(row); n+i > 0 {
			t.Fatalf("clean model: %d NaN, %d Inf logits", n, i)
		}
	}

	rows := evalRows(t, rewriteF32(t, name, "blk.0.attn_norm.weight", 0, float32(math.NaN())), []int32{1, 100, 300, 200})
	for p, row := range rows {
		if n, _ := countNaN(row); n != len(row) {
			t.Errorf("NaN in blk.0.attn_norm.weight: position %d has %d NaN logits of %d", p, n, len(row))
		}
	}

	// Token 300's embedding row: element 300*dim.
	dim := loadConfig(t, filepath.Join(sharedDir(t), "models", name+".gguf")).NEmbd
	rows = evalRows(t, rewriteF32(t, name, "token_embd.weight", 300*dim+5, float32(math.NaN())), []int32{1, 100, 300, 200})
	for p, row := range rows {
		n, _ := countNaN(row)
		switch {
		case p < 2 && n != 0:
			t.Errorf("NaN in token 300's embedding: position %d (before the token) has %d NaN logits", p, n)
		case p < 2:
			for v := range row {
				if math.Float32bits(row[v]) != math.Float32bits(clean[p][v]) {
					t.Fatalf("position %d before the poisoned token: logit %d = %v, clean model %v", p, v, row[v], clean[p][v])
				}
			}
		case n != len(row):
			t.Errorf("NaN in token 300's embedding: position %d (at or after it) has %d NaN logits of %d", p, n, len(row))
		}
	}

	rows = evalRows(t, rewriteF32(t, name, "output_norm.weight", 0, float32(math.Inf(1))), []int32{1, 100})
	for p, row := range rows {
		if n, i := countNaN(row); n+i != len(row) || i == 0 {
			t.Errorf("+Inf in output_norm.weight: position %d has %d NaN and %d Inf logits of %d", p, n, i, len(row))
		}
	}
}

// Sampling NaN logits: greedy picks as llama.cpp's greedy sampler does
// (start at token 0, move only to a strictly greater logit: NaN compares
// false, so all-NaN logits give token 0, and a NaN is never chosen over an
// earlier number); the random path returns some token in range without
// panicking (llama.cpp's dist sampler falls back to its last candidate).
func TestSampleNaNLogits(t *testing.T) {
	nan := float32(math.NaN())
	llamaGreedy := func(l []float32) int32 { // llama_sampler_greedy_apply's rule
		sel := 0
		for i := 1; i < len(l); i++ {
			if l[i] > l[sel] {
				sel = i
			}
		}
		return int32(sel)
	}
	for _, l := range [][]float32{
		{nan, nan, nan, nan},
		{nan, 1, 2, 3},
		{1, nan, 3, 2},
		{1, 2, nan, 0},
		{float32(math.Inf(-1)), nan, float32(math.Inf(1)), 5},
	} {
		g := NewSampler(SamplerOptions{Temperature: 0})
		if got, want := g.Sample(l), llamaGreedy(l); got != want {
			t.Errorf("greedy over %v = %d, llama.cpp's greedy %d", l, got, want)
		}
		r := NewSampler(DefaultSamplerOptions())
		if id := r.Sample(l); id < 0 || int(id) >= len(l) {
			t.Errorf("sampling %v gave %d", l, id)
		}
	}
}

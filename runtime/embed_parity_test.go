package runtime

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// embedRef is one reference file of testdata/embed, written by
// scripts/embed-ref.py from llama.cpp's llama-embedding.
type embedRef struct {
	Model      string      `json:"model"`
	Pooling    string      `json:"pooling"`
	Prompt     string      `json:"prompt"`
	NCtx       int         `json:"n_ctx"`
	Command    string      `json:"command"`
	Embeddings [][]float64 `json:"embeddings"`
}

// embedTolerance bounds |Woolly - llama-embedding| per value of the
// L2-normalized embeddings (the reference prints 7 decimals). Measured:
// 23 of the 45 files within 2e-7, the largest 4.9e-3 (synth-qwen3-mini,
// short prompt); the references come from llama.cpp's AVX2-only build
// (see testdata/embed/README.md).
const embedTolerance = 1e-2

// TestEmbedParity compares Model.Embed (normalized, the same pooling and
// context) with llama-embedding's vectors for the shared models.
func TestEmbedParity(t *testing.T) {
	shared := sharedDir(t)
	files, err := filepath.Glob(filepath.Join("testdata", "embed", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reference embeddings in testdata/embed (%v)", err)
	}
	models := map[string]*Model{}
	defer func() {
		for _, m := range models {
			m.Close()
		}
	}()
	worst := 0.0
	for _, file := range files {
		var ref embedRef
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		m := models[ref.Model]
		if m == nil {
			if m, err = Load(filepath.Join(shared, "models", ref.Model), LoadOptions{Threads: 1}); err != nil {
				t.Fatal(err)
			}
			models[ref.Model] = m
		}
		pool, err := ParsePooling(ref.Pooling)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		res, err := m.Embed(context.Background(), EmbedOptions{Inputs: []string{ref.Prompt}, Pooling: pool, NCtx: ref.NCtx, Normalize: true})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		e := res.Embeddings[0]
		got := [][]float32{e.Vector}
		if pool == PoolingNone {
			got = e.TokenVectors
		}
		if len(got) != len(ref.Embeddings) {
			t.Errorf("%s: %d embeddings, llama-embedding has %d (tokens %v)", file, len(got), len(ref.Embeddings), e.Tokens)
			continue
		}
		diff := 0.0
		for i, want := range ref.Embeddings {
			if len(got[i]) != len(want) {
				t.Fatalf("%s: embedding %d has %d values, want %d", file, i, len(got[i]), len(want))
			}
			for j, w := range want {
				diff = max(diff, math.Abs(float64(got[i][j])-w))
			}
		}
		worst = max(worst, diff)
		t.Logf("%-45s max |Δ| %.2g", filepath.Base(file), diff)
		if diff > embedTolerance {
			t.Errorf("%s: max |Δ| %g over %g (reference: %s)", file, diff, embedTolerance, ref.Command)
		}
	}
	t.Logf("max |Δ| over %d reference files: %.2g", len(files), worst)
}

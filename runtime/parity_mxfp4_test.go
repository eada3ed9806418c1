package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
)

// mxfp4ExpertsSHA256 pins the file writeMXFP4Experts makes, the one the
// reference logits in testdata/mxfp4 were computed on.
const mxfp4ExpertsSHA256 = "66785b0753beb4317f6d94ea2c74ba7943e2f4b1f3fc5c30e4c0ce27153d513f"

// writeMXFP4Experts writes src with every expert tensor (name containing
// "_exps") dequantized and quantized to MXFP4 by Woolly's quantizer (the
// bytes of llama.cpp's, see quant/testdata/mxfp4), every other tensor and
// all metadata unchanged.
func writeMXFP4Experts(t *testing.T, src, dst string) {
	t.Helper()
	f, err := loader.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := loader.NewWriter()
	for _, kv := range f.KV {
		w.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data, ty := f.Data(ti), ti.Type
		if strings.Contains(ti.Name, "_exps") {
			x := make([]float32, ti.Elements())
			if err := kernels.Dequant(ti.Type, data, x); err != nil {
				t.Fatal(err)
			}
			ty = kernels.MXFP4
			rb, err := ty.RowBytes(ti.Shape[0])
			if err != nil {
				t.Fatal(err)
			}
			data = make([]byte, rb*ti.Rows())
			if err := quant.Quantize(ty, x, int(ti.Shape[0]), data, 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.AddTensor(ti.Name, ty, ti.Shape, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(dst); err != nil {
		t.Fatal(err)
	}
}

// A MoE model with MXFP4 experts against llama.cpp: synth-qwen3moe-mini's
// experts (ffn_gate/up/down_exps, 8 per layer) requantized to MXFP4, the rest
// as llama-quantize wrote it (Q4_K_M). The reference (testdata/mxfp4, made
// by refdump at the reference commit) evaluated the prompt as one batch,
// then greedy steps one token at a time; MXFP4 has one summation order, so
// both must match to the precision of the JSON.
func TestParityMXFP4Experts(t *testing.T) {
	shared := sharedDir(t)
	src := filepath.Join(shared, "models", "synth-qwen3moe-mini-Q4_K_M.gguf")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("model not available: %v", err)
	}
	path := filepath.Join(t.TempDir(), "qwen3moe-mini-mxfp4-experts.gguf")
	writeMXFP4Experts(t, src, path)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if got := hex.EncodeToString(h.Sum(nil)); got != mxfp4ExpertsSHA256 {
		t.Fatalf("the MXFP4-experts file has sha256 %s, the reference was made on %s", got, mxfp4ExpertsSHA256)
	}

	m := loadPath(t, path, LoadOptions{})
	var ref refLogits
	readJSON(t, filepath.Join("testdata", "mxfp4", "qwen3moe-mini-mxfp4-experts.json"), &ref)
	nv := m.Info().NVocab
	n := len(ref.PromptIDs)
	if n == 0 || len(ref.Positions) != n || len(ref.Greedy.Steps) == 0 || len(ref.Greedy.IDs) < len(ref.Greedy.Steps) {
		t.Fatal("unexpected reference shape")
	}
	const tol = 1e-5
	worst := 0.0
	s := newSession(t, m, 0)
	all := evalAll(t, s, slices.Clone(ref.PromptIDs))
	for i := 0; i < n; i++ {
		worst = max(worst, compareTop(t, fmt.Sprintf("prompt pos %d", i), all[i*nv:(i+1)*nv], ref.Positions[i].Top, tol))
	}
	worst = max(worst, compareTop(t, "step 0", all[(n-1)*nv:n*nv], ref.Greedy.Steps[0].Top, tol))
	for k := 1; k < len(ref.Greedy.Steps); k++ {
		row, err := s.Eval([]int32{ref.Greedy.IDs[k-1]}, false)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, compareTop(t, fmt.Sprintf("step %d", k), row, ref.Greedy.Steps[k].Top, tol))
	}
	t.Logf("max |Δlogit| %.3g over %d prompt rows and %d steps (tolerance %g)", worst, n, len(ref.Greedy.Steps), tol)
	if worst > tol {
		t.Errorf("max |Δlogit| %.3g exceeds %g", worst, tol)
	}
}

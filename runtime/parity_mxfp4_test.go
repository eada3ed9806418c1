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

// writeMXFP4Experts writes, as file in a temporary directory, src with every expert tensor (name containing
// "_exps") dequantized and quantized to MXFP4 by Woolly's quantizer (the
// bytes of llama.cpp's, see quant/testdata/mxfp4), every other tensor and
// all metadata unchanged.
func writeMXFP4Experts(t *testing.T, src, file string) string {
	t.Helper()
	return rewriteFile(t, src, file, nil, "", nil, func(ti *loader.TensorInfo, data []byte) (kernels.Type, []byte) {
		if !strings.Contains(ti.Name, "_exps") {
			return ti.Type, data
		}
		x := make([]float32, ti.Elements())
		kernels.Dequant(ti.Type, data, x)
		rb, err := kernels.MXFP4.RowBytes(ti.Shape[0])
		if err != nil {
			t.Fatal(err)
		}
		data = make([]byte, rb*ti.Rows())
		if err := quant.Quantize(kernels.MXFP4, x, int(ti.Shape[0]), data, 2); err != nil {
			t.Fatal(err)
		}
		return kernels.MXFP4, data
	})
}

// MoE models with MXFP4 experts against llama.cpp, both made from
// synth-qwen3moe-mini-Q4_K_M:
//   - experts: its 12 expert tensors requantized to MXFP4, the rest as
//     llama-quantize wrote it (writeMXFP4Experts);
//   - MXFP4_MOE: woolly quantize --allow-requantize ... mxfp4, which is
//     llama-quantize's MXFP4_MOE file byte for byte (experts MXFP4, every
//     other weight Q8_0; quant's TestQuantizeFileMXFP4MatchesLlamaQuantize).
//
// The references (testdata/mxfp4, made by refdump at the reference commit)
// evaluated the prompt as one batch, then greedy steps one token at a
// time. The prompt rows must match to the precision of the JSON (1e-5) in
// both files, and so must the steps of the experts file. The MXFP4_MOE
// file's steps 6 and 7 (positions 18, 19) differ by 0.0136 and 0.0191, so
// its steps are held to contracts.md's 0.1 for quantized files: evaluated
// as one 20-token batch, positions 0..17 are bit-identical to llama.cpp's
// native build and 18, 19 differ by 0.033, while the experts file (the same
// MXFP4 tensors, Q4_K_M attention) stays exact there; the difference is in
// the path of its Q8_0 attention/output weights, not in MXFP4 (whose
// kernels the known-answer tests pin bit for bit).
func TestParityMXFP4Experts(t *testing.T) {
	shared := sharedDir(t)
	src := filepath.Join(shared, "models", "synth-qwen3moe-mini-Q4_K_M.gguf")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("model not available: %v", err)
	}
	dir := t.TempDir()
	experts := writeMXFP4Experts(t, src, "qwen3moe-mini-mxfp4-experts.gguf")
	moe := filepath.Join(dir, "qwen3moe-mini-MXFP4_MOE.gguf")
	if _, err := quant.QuantizeFile(src, moe, quant.FileMXFP4_MOE, quant.FileOptions{Threads: 2, AllowRequantize: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, sha, ref string
		stepTol        float64
	}{
		{experts, mxfp4ExpertsSHA256, "qwen3moe-mini-mxfp4-experts.json", 1e-5},
		{moe, "42233abc0eed8f74989d20a7c327ef5be13fd2dad635cc2b2332d01793b14dea", "qwen3moe-mini-MXFP4_MOE.json", 0.1},
	} {
		t.Run(strings.TrimSuffix(c.ref, ".json"), func(t *testing.T) {
			fh, err := os.Open(c.path)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.Copy(h, fh); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			if got := hex.EncodeToString(h.Sum(nil)); got != c.sha {
				t.Fatalf("%s has sha256 %s, the reference was made on %s", filepath.Base(c.path), got, c.sha)
			}
			mxfp4Parity(t, c.path, filepath.Join("testdata", "mxfp4", c.ref), c.stepTol)
		})
	}
}

// mxfp4Parity compares the prompt batch with the reference to 1e-5 and the
// greedy steps to stepTol.
func mxfp4Parity(t *testing.T, path, refPath string, stepTol float64) {
	m := loadPath(t, path, LoadOptions{})
	var ref refLogits
	readJSON(t, refPath, &ref)
	nv := m.Info().NVocab
	n := len(ref.PromptIDs)
	if n == 0 || len(ref.Positions) != n || len(ref.Greedy.Steps) == 0 || len(ref.Greedy.IDs) < len(ref.Greedy.Steps) {
		t.Fatal("unexpected reference shape")
	}
	const tol = 1e-5
	worst, worstStep := 0.0, 0.0
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
		worstStep = max(worstStep, compareTop(t, fmt.Sprintf("step %d", k), row, ref.Greedy.Steps[k].Top, stepTol))
	}
	t.Logf("max |Δlogit| %.3g over %d prompt rows (tolerance %g), %.3g over %d one-token steps (tolerance %g)",
		worst, n, tol, worstStep, len(ref.Greedy.Steps)-1, stepTol)
	if worst > tol {
		t.Errorf("prompt: max |Δlogit| %.3g exceeds %g", worst, tol)
	}
	if worstStep > stepTol {
		t.Errorf("steps: max |Δlogit| %.3g exceeds %g", worstStep, stepTol)
	}
}

package runtime

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
)

// Parity with llama.cpp's outputs in ../shared/ref (see its README).

func sharedDir(t testing.TB) string {
	d := filepath.Join("..", "..", "shared")
	if _, err := os.Stat(filepath.Join(d, "ref", "summary.json")); err != nil {
		t.Skipf("shared reference data not found at %s (needs ../shared next to the repo): %v", d, err)
	}
	return d
}

// tolerance is the max |Δlogit| per model of docs/exactness.md.
func tolerance(model string) float64 {
	switch {
	case strings.HasPrefix(model, "llama-2-tiny-random-F16"):
		return 2e-3
	case strings.HasPrefix(model, "synth-granite-mini"):
		return 1e-2
	case model == "synth-llama-mini-F16":
		return 1e-2
	case model == "stories260K-F32", model == "stories260K-F16":
		return 2e-2
	}
	return 0.1
}

type refTop [][2]float64 // [id, logit]

type refLogits struct {
	Prompt    string  `json:"prompt"`
	AddBOS    bool    `json:"add_bos"`
	NVocab    int     `json:"n_vocab"`
	PromptIDs []int32 `json:"prompt_ids"`
	Positions []struct {
		Top refTop `json:"top"`
	} `json:"positions"`
	Greedy struct {
		IDs   []int32 `json:"ids"`
		Text  string  `json:"text"`
		Steps []struct {
			Top refTop `json:"top"`
		} `json:"steps"`
	} `json:"greedy"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func modelNames(t testing.TB, shared string) []string {
	files, _ := filepath.Glob(filepath.Join(shared, "models", "*.gguf"))
	if len(files) == 0 {
		t.Skip("no models in ../shared/models")
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".gguf"))
	}
	return names
}

// compareTop checks a row of logits against a reference top list and
// returns max |Δ|. It fails when the top-1 differs while the reference's
// top-1/top-2 margin exceeds tol.
func compareTop(t *testing.T, what string, row []float32, top refTop, tol float64) float64 {
	t.Helper()
	md := 0.0
	for _, e := range top {
		md = max(md, math.Abs(float64(row[int(e[0])])-e[1]))
	}
	if len(top) >= 2 && top[0][1]-top[1][1] > tol {
		if got := argmax(row); got != int32(top[0][0]) {
			t.Errorf("%s: top-1 %d, reference %d (margin %.4g)", what, got, int32(top[0][0]), top[0][1]-top[1][1])
		}
	}
	return md
}

type parityRow struct {
	model           string
	batch, perToken float64
	tol             float64
}

func TestParityLogits(t *testing.T) {
	shared := sharedDir(t)
	var rows []*parityRow
	for _, name := range modelNames(t, shared) {
		t.Run(name, func(t *testing.T) {
			m := loadShared(t, name, LoadOptions{})
			tol := tolerance(name)
			pr := &parityRow{model: name, tol: tol}
			rows = append(rows, pr)
			refs, _ := filepath.Glob(filepath.Join(shared, "ref", "logits", name+".*.json"))
			if len(refs) == 0 {
				t.Fatalf("no reference logits for %s", name)
			}
			for _, rf := range refs {
				var ref refLogits
				readJSON(t, rf, &ref)
				tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(rf), name+"."), ".json")

				ids, err := m.Tokenizer().Encode(ref.Prompt, m.Tokenizer().AddBOS(), true)
				if err != nil {
					t.Errorf("%s: tokenize: %v", tag, err)
				} else if !slices.Equal(ids, ref.PromptIDs) {
					t.Errorf("%s: prompt ids %v, reference %v", tag, ids, ref.PromptIDs)
				}

				// Teacher forcing: prompt + greedy ids (teacherForced).
				seq, tops := teacherForced(ref)
				nv := m.Info().NVocab

				s := newSession(t, m, 0)
				all := evalAll(t, s, seq)
				for i := range seq {
					d := compareTop(t, fmt.Sprintf("%s batch pos %d", tag, i), all[i*nv:(i+1)*nv], tops[i], tol)
					pr.batch = max(pr.batch, d)
				}

				s.Reset()
				for i, id := range seq {
					row, err := s.Eval([]int32{id}, false)
					if err != nil {
						t.Fatal(err)
					}
					d := compareTop(t, fmt.Sprintf("%s token pos %d", tag, i), row, tops[i], tol)
					pr.perToken = max(pr.perToken, d)
				}
			}
			t.Logf("%s: max |Δlogit| batch %.3g, token by token %.3g (tolerance %g)", name, pr.batch, pr.perToken, tol)
			if pr.batch > tol || pr.perToken > tol {
				t.Errorf("%s: max |Δlogit| batch %.3g / token %.3g exceeds %g", name, pr.batch, pr.perToken, tol)
			}
		})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].model < rows[j].model })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %10s %10s %8s\n", "model", "batch", "per-token", "tol")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-28s %10.3g %10.3g %8g\n", r.model, r.batch, r.perToken, r.tol)
	}
	t.Log(b.String())
}

func TestParityGreedy(t *testing.T) {
	shared := sharedDir(t)
	for _, name := range []string{"stories260K-F32", "stories260K-F16", "stories260K-Q8_0",
		// The §9 minis: Woolly's logits are the reference's bits, so even the
		// steps with margins of 1e-4 must agree.
		"synth-qwen3-mini-Q4_K_M", "synth-qwen3moe-mini-Q4_K_M", "synth-mixtral-mini-Q4_K_M",
		"synth-gemma2-mini-Q4_K_M", "synth-gemma3-mini-Q4_K_M", "synth-phi3-mini-Q4_K_M",
		"synth-llama-mini-Q2_K", "synth-llama-mini-Q3_K_S", "synth-llama-mini-Q3_K_M",
		"synth-llama-mini-IQ4_XS", "synth-llama-mini-IQ4_NL"} {
		t.Run(name, func(t *testing.T) {
			m := loadShared(t, name, LoadOptions{})
			refs, _ := filepath.Glob(filepath.Join(shared, "ref", "logits", name+".*.json"))
			for _, rf := range refs {
				var ref refLogits
				readJSON(t, rf, &ref)
				res, err := m.Generate(context.Background(), GenerateOptions{
					Prompt: ref.Prompt, MaxTokens: len(ref.Greedy.IDs), NCtx: 512,
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.PromptTokens, ref.PromptIDs) {
					t.Errorf("%s: prompt ids %v, reference %v", rf, res.PromptTokens, ref.PromptIDs)
				}
				if !slices.Equal(res.Tokens, ref.Greedy.IDs) {
					t.Errorf("%s: greedy ids %v, reference %v", rf, res.Tokens, ref.Greedy.IDs)
				}
				if res.Text != ref.Greedy.Text {
					t.Errorf("%s: greedy text %q, reference %q", rf, res.Text, ref.Greedy.Text)
				}
				if res.StopReason != "length" {
					t.Errorf("%s: stop reason %q, want length", rf, res.StopReason)
				}
			}
		})
	}
}

func TestParityFullRows(t *testing.T) {
	shared := sharedDir(t)
	var idx struct {
		Entries []struct {
			Model     string  `json:"model"`
			File      string  `json:"file"`
			PromptIDs []int32 `json:"prompt_ids"`
			NPos      int     `json:"n_pos"`
			NVocab    int     `json:"n_vocab"`
		} `json:"entries"`
	}
	readJSON(t, filepath.Join(shared, "ref", "full", "index.json"), &idx)
	for _, e := range idx.Entries {
		name := strings.TrimSuffix(filepath.Base(e.Model), ".gguf")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(shared, e.File))
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != 4*e.NPos*e.NVocab {
				t.Fatalf("%s: %d bytes, want %d", e.File, len(raw), 4*e.NPos*e.NVocab)
			}
			m := loadPath(t, filepath.Join(shared, e.Model), LoadOptions{})
			all := evalAll(t, newSession(t, m, 0), e.PromptIDs[:e.NPos])
			if len(all) != len(raw)/4 {
				t.Fatalf("got %d logits, want %d", len(all), len(raw)/4)
			}
			md := 0.0
			for i := range all {
				ref := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				md = max(md, math.Abs(float64(all[i]-ref)))
			}
			tol := tolerance(name)
			t.Logf("%s: full rows max |Δlogit| %.3g (tolerance %g)", name, md, tol)
			if md > tol {
				t.Errorf("%s: full rows max |Δlogit| %.3g exceeds %g", name, md, tol)
			}
		})
	}
}

func TestParityPerplexity(t *testing.T) {
	shared := sharedDir(t)
	if testing.Short() {
		t.Skip("perplexity of every model is slow; skipped with -short")
	}
	var sum []struct {
		Model  string  `json:"model"`
		PPL    float64 `json:"ppl"`
		Chunks int     `json:"n_chunks"`
		NCtx   int     `json:"n_ctx"`
	}
	readJSON(t, filepath.Join(shared, "ref", "ppl", "summary.json"), &sum)
	text, err := os.ReadFile(filepath.Join(shared, "ref", "text", "dev.txt"))
	if err != nil {
		t.Fatal(err)
	}
	txt := strings.TrimSuffix(string(text), "\n")
	var report strings.Builder
	for _, e := range sum {
		name := strings.TrimSuffix(filepath.Base(e.Model), ".gguf")
		for _, mode := range []AttentionMode{AttentionDefault, AttentionExact} {
			t.Run(fmt.Sprintf("%s/attention=%d", name, mode), func(t *testing.T) {
				m, err := Load(filepath.Join(shared, e.Model), LoadOptions{Attention: mode})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				res, err := m.Perplexity(context.Background(), txt, e.NCtx, nil)
				if err != nil {
					t.Fatal(err)
				}
				rel := math.Abs(res.PPL-e.PPL) / e.PPL
				fmt.Fprintf(&report, "%-28s %d %12.4f %12.4f %8.4f%% %d/%d chunks\n", name, mode, res.PPL, e.PPL, 100*rel, res.Chunks, e.Chunks)
				if res.Chunks != e.Chunks {
					t.Errorf("%d chunks, reference %d", res.Chunks, e.Chunks)
				}
				if rel > 0.005 {
					t.Errorf("PPL %.4f, reference %.4f (%.3f%% off, limit 0.5%%)", res.PPL, e.PPL, 100*rel)
				}
			})
		}
	}
	t.Logf("\n%-28s %s %12s %12s %9s\n%s", "model", "attn", "woolly", "llama.cpp", "rel", report.String())
}

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
			if got := fileSHA256(t, c.path); got != c.sha {
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

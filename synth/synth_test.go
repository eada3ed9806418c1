package synth

import (
	"crypto/sha256"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
	wrt "github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/tokenizer"

	"github.com/woolly-llm/woolly/internal/shared"
)

func preset(t *testing.T, name string) Preset {
	t.Helper()
	p, err := FindPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fileType(t *testing.T, name string) quant.FileType {
	t.Helper()
	ft, err := quant.ParseFileType(name)
	if err != nil {
		t.Fatal(err)
	}
	return ft
}

// write synthesizes opt into a file in a fresh directory and opens it.
func write(t *testing.T, opt Options) (string, Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	res, err := WriteFile(path, opt)
	if err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	return path, res
}

func open(t *testing.T, path string) *loader.File {
	t.Helper()
	f, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func fileSHA(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestDeterministic: the same options give the same bytes, whatever the
// thread count; another seed gives other bytes.
func TestDeterministic(t *testing.T) {
	opt := Options{Preset: preset(t, "mini"), Type: fileType(t, "q4_k_m"), Seed: 1, Threads: 2}
	a, _ := write(t, opt)
	opt.Threads = 1
	b, _ := write(t, opt)
	opt.Threads, opt.Seed = 2, 2
	c, _ := write(t, opt)
	if fileSHA(t, a) != fileSHA(t, b) {
		t.Error("two runs with the same options (1 and 2 threads) wrote different files")
	}
	if fileSHA(t, a) == fileSHA(t, c) {
		t.Error("different seeds wrote the same file")
	}
}

// TestMiniShape: the mini preset has the shared minis' tensors, shapes and
// Q4_K_M types, weights of the intended scale, and a vocabulary the
// tokenizer loads; the Result and the progress reports agree with the file.
func TestMiniShape(t *testing.T) {
	sh := shared.Dir(t)
	var last, total int64
	path, res := write(t, Options{Preset: preset(t, "mini"), Type: fileType(t, "q4_k_m"), Seed: 1,
		Progress: func(d, n int64) { last, total = d, n }})
	f := open(t, path)
	if last == 0 || last != total {
		t.Errorf("progress ended at %d of %d bytes", last, total)
	}
	if st, _ := os.Stat(path); res.Bytes != st.Size() || res.Tensors != len(f.Tensors) {
		t.Errorf("result says %d bytes, %d tensors; the file has %d, %d", res.Bytes, res.Tensors, st.Size(), len(f.Tensors))
	}

	tt := shared.TensorTypes(t, sh)
	want := tt["synth-llama-mini-Q4_K_M.gguf"].Tensors
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for _, ti := range f.Tensors {
		w, ok := want[ti.Name]
		if !ok {
			t.Errorf("unexpected tensor %s", ti.Name)
			continue
		}
		if ti.Type.String() != w.Type || len(ti.Shape) != len(w.Ne) {
			t.Errorf("%s: %v %v, want %s %v", ti.Name, ti.Type, ti.Shape, w.Type, w.Ne)
			continue
		}
		for i := range w.Ne {
			if ti.Shape[i] != w.Ne[i] {
				t.Errorf("%s: shape %v, want %v", ti.Name, ti.Shape, w.Ne)
			}
		}
	}
	for _, k := range []string{"llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
		"llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count", "llama.vocab_size"} {
		if _, ok := f.Uint(k); !ok {
			t.Errorf("metadata %s missing", k)
		}
	}
	if ft, _ := f.Uint("general.file_type"); ft != 15 {
		t.Errorf("general.file_type %d, want 15", ft)
	}

	// Weights: std 1/sqrt(fan_in) (here 1/16), norms around 1.
	check := func(name string, wantStd, wantMean float64) {
		ti, _ := f.Tensor(name)
		vals := make([]float32, ti.Elements())
		if err := quant.ToF32(ti.Type, f.Data(ti), vals); err != nil {
			t.Fatal(err)
		}
		var s, s2 float64
		for _, v := range vals {
			s += float64(v)
			s2 += float64(v) * float64(v)
		}
		mean := s / float64(len(vals))
		std := math.Sqrt(s2/float64(len(vals)) - mean*mean)
		if math.Abs(mean-wantMean) > 0.01 || math.Abs(std-wantStd) > wantStd*0.05 {
			t.Errorf("%s: mean %.4f std %.4f, want %.2f and %.4f", name, mean, std, wantMean, wantStd)
		}
	}
	check("blk.0.attn_q.weight", 1.0/16, 0)
	check("blk.1.ffn_down.weight", 1/math.Sqrt(768), 0)
	check("blk.0.attn_norm.weight", 0.1, 1)

	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer: %v", err)
	}
	if tok.NumTokens() != 32000 || tok.Model() != "llama" {
		t.Errorf("tokenizer: %d tokens, model %q", tok.NumTokens(), tok.Model())
	}
	text := "Hello, wörld! the cat"
	ids, err := tok.Encode(text, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 2 || ids[0] != 1 {
		t.Errorf("encode %q = %v, want BOS first", text, ids)
	}
	if got := tok.Decode(ids[1:]); got != text {
		t.Errorf("decode(encode(%q)) = %q", text, got)
	}
}

func TestVocabFromFile(t *testing.T) {
	vocab := filepath.Join(shared.Dir(t), "vocab", "ggml-vocab-gpt-2.gguf")
	path, res := write(t, Options{Preset: preset(t, "mini"), Type: fileType(t, "q8_0"), VocabPath: vocab})
	f := open(t, path)
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	embd, _ := f.Tensor("token_embd.weight")
	if len(toks) != 50257 || embd.Shape[1] != 50257 || res.Preset.Vocab != 50257 {
		t.Errorf("%d tokens, token_embd %v, result vocabulary %d; want 50257", len(toks), embd.Shape, res.Preset.Vocab)
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "gpt2" {
		t.Errorf("tokenizer model %q, want gpt2", m)
	}
	if embd.Type.String() != "Q8_0" {
		t.Errorf("token_embd %v, want Q8_0", embd.Type)
	}
}

// TestRefusals: an unknown preset, an incomplete preset and a vocabulary
// file that is the output are errors naming the problem, and write nothing.
func TestRefusals(t *testing.T) {
	if _, err := FindPreset("llama-9000"); err == nil || !strings.Contains(err.Error(), "llama-9000") || !strings.Contains(err.Error(), "mini") {
		t.Errorf("FindPreset(llama-9000) = %v, want an error naming it and the presets", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	if _, err := WriteFile(out, Options{Preset: Preset{Name: "half", Arch: "llama"}}); err == nil || !strings.Contains(err.Error(), "half") {
		t.Errorf("incomplete preset: %v, want an error naming it", err)
	}
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(out, Options{Preset: preset(t, "mini"), VocabPath: out}); err == nil {
		t.Error("vocabulary file = output: no error")
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("the refused output was overwritten: %q", b)
	}
}

// TestPresetParams: the presets have the published parameter counts of the
// models they imitate.
func TestPresetParams(t *testing.T) {
	want := map[string]int64{
		"tinyllama-1.1b": 1100048384,  // TinyLlama-1.1B
		"llama-7b":       6738415616,  // Llama-2-7B
		"qwen3-0.6b":     596049920,   // Qwen3-0.6B (tied embeddings)
		"gemma3-1b":      999885952,   // Gemma-3-1B
		"phi3-mini":      3821079552,  // Phi-3-mini-4k
		"gpt-oss-20b":    20914757184, // openai/gpt-oss-20b (safetensors total)
	}
	for _, p := range Presets() {
		var n int64
		for _, ts := range p.Tensors() {
			n += ts.Elements()
		}
		t.Logf("%s: %d parameters", p.Name, n)
		if w, ok := want[p.Name]; ok && n != w {
			t.Errorf("%s: %d parameters, want %d", p.Name, n, w)
		}
	}
	v, _, types := byteVocab(49159)
	seen := map[string]bool{}
	for i, s := range v {
		if seen[s] {
			t.Fatalf("token %q repeated (id %d)", s, i)
		}
		seen[s] = true
	}
	if len(v) != 49159 || len(types) != 49159 || v[3] != "<0x00>" || v[258] != "<0xFF>" {
		t.Errorf("byte vocabulary: %d tokens, %q %q", len(v), v[3], v[258])
	}
}

// TestGraniteRuns: a small model with granite-8b's structure (tied
// embeddings, granite scales) loads in the runtime and gives finite logits;
// the tied embedding is quantized like an output tensor (Q6_K).
func TestGraniteRuns(t *testing.T) {
	small := Preset{Name: "granite-test", Arch: "granite", Dim: 256, Layers: 2, Heads: 8, KVHeads: 2, FFN: 512,
		Vocab: 1000, Ctx: 256, Tied: true, RopeBase: 10000000, Eps: 1e-5, Granite: true}
	path, _ := write(t, Options{Preset: small, Type: fileType(t, "q4_k_m"), Seed: 1})
	f := open(t, path)
	embd, _ := f.Tensor("token_embd.weight")
	_, hasOut := f.Tensor("output.weight")
	if embd.Type.String() != "Q6_K" || hasOut {
		t.Errorf("tied embedding: token_embd %v, output.weight present %v", embd.Type, hasOut)
	}
	for _, k := range []string{"granite.embedding_scale", "granite.residual_scale", "granite.attention.scale", "granite.logit_scale"} {
		if _, ok := f.Float(k); !ok {
			t.Errorf("metadata %s missing", k)
		}
	}

	m, err := wrt.Load(path, wrt.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatalf("runtime cannot load the synthesized granite model: %v", err)
	}
	defer m.Close()
	s, err := m.NewSession(32)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.Eval([]int32{1, 300, 301, 302}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(logits) != 1000 {
		t.Fatalf("%d logits, want 1000", len(logits))
	}
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d = %v", i, v)
		}
	}
}

// TestNewArchPresetsRun: a small model with the structure of each
// newer-architecture preset (qwen3, gemma3, phi3, qwen3moe, qwen35) is written with
// the preset's keys and tensor names, loads in the runtime, and gives the
// same finite logits when its tokens are evaluated as one batch and one at a
// time (the batch path of the expert FFN groups tokens by expert).
func TestNewArchPresetsRun(t *testing.T) {
	for _, name := range []string{"qwen3-0.6b", "gemma3-1b", "phi3-mini", "qwen3moe-7b-a1b", "qwen35-0.8b"} {
		t.Run(name, func(t *testing.T) {
			p := preset(t, name)
			small := p
			small.Name, small.Dim, small.Layers, small.FFN, small.Vocab, small.Ctx = name+"-test", 256, 2, 512, 1000, 256
			small.Heads, small.KVHeads = 4, 2
			if p.KVHeads == p.Heads {
				small.KVHeads = 4
			}
			if p.HeadDim > 0 {
				small.HeadDim = 96 // q width 384 != n_embd, as in the real presets
			}
			if p.Window > 0 {
				small.Layers, small.Window = 6, 8
			}
			if p.Experts > 0 {
				small.Experts, small.ExpertsUse, small.ExpertFF = 8, 3, 128
			}
			if p.DeltaNet {
				small.Layers = 4 // three Gated DeltaNet layers and a full-attention one
			}
			path, _ := write(t, Options{Preset: small, Type: fileType(t, "q8_0"), Seed: 1})
			m, err := wrt.Load(path, wrt.LoadOptions{Threads: 2})
			if err != nil {
				t.Fatalf("runtime cannot load the synthesized %s model: %v", p.Arch, err)
			}
			defer m.Close()
			if got := m.Config().Arch; got != p.Arch {
				t.Fatalf("architecture %q, want %q", got, p.Arch)
			}
			toks := make([]int32, 24)
			for i := range toks {
				toks[i] = int32(3 + (i*37)%900)
			}
			s1, _ := m.NewSession(64)
			batch, err := s1.Eval(toks, true)
			if err != nil {
				t.Fatal(err)
			}
			s2, _ := m.NewSession(64)
			nv := m.Config().NVocab
			for i, tok := range toks {
				row, err := s2.Eval([]int32{tok}, false)
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range row {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("position %d logit %d = %v", i, j, v)
					}
					// Below 64 rows both paths use the same attention numerics.
					if b := batch[i*nv+j]; b != v {
						t.Fatalf("position %d logit %d: batch %v, one at a time %v", i, j, b, v)
					}
				}
			}
		})
	}
}

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
	wrt "github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

func synthMini(t *testing.T, path string, extra ...string) {
	t.Helper()
	var so, se bytes.Buffer
	args := append([]string{"--preset", "mini", "--no-progress", "-o", path}, extra...)
	if err := runSynth(args, &so, &se); err != nil {
		t.Fatalf("synth: %v\n%s", err, se.String())
	}
	t.Log(so.String())
}

func fileSHA(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestSynthDeterministic: same flags give the same bytes, whatever the
// thread count; another seed gives other bytes.
func TestSynthDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf"), filepath.Join(dir, "c.gguf")
	synthMini(t, a, "-t", "2")
	synthMini(t, b, "-t", "1")
	synthMini(t, c, "-t", "2", "--seed", "2")
	if fileSHA(t, a) != fileSHA(t, b) {
		t.Error("two runs with the same flags (1 and 2 threads) wrote different files")
	}
	if fileSHA(t, a) == fileSHA(t, c) {
		t.Error("different seeds wrote the same file")
	}
}

// TestSynthMiniShape: the mini preset has the shared minis' tensors, shapes
// and Q4_K_M types, weights of the intended scale, and a vocabulary the
// tokenizer loads.
func TestSynthMiniShape(t *testing.T) {
	sh := sharedDir(t)
	p := filepath.Join(t.TempDir(), "m.gguf")
	synthMini(t, p)
	f, err := loader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	b, err := os.ReadFile(filepath.Join(sh, "ref", "tensor_types.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tt map[string]struct {
		Tensors map[string]struct {
			Type string  `json:"type"`
			Ne   []int64 `json:"ne"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(b, &tt); err != nil {
		t.Fatal(err)
	}
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

func TestSynthVocabFromFile(t *testing.T) {
	sh := sharedDir(t)
	p := filepath.Join(t.TempDir(), "m.gguf")
	synthMini(t, p, "--vocab", filepath.Join(sh, "vocab", "ggml-vocab-gpt-2.gguf"), "--type", "q8_0")
	f, err := loader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	embd, _ := f.Tensor("token_embd.weight")
	if len(toks) != 50257 || embd.Shape[1] != 50257 {
		t.Errorf("%d tokens, token_embd %v; want 50257", len(toks), embd.Shape)
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "gpt2" {
		t.Errorf("tokenizer model %q, want gpt2", m)
	}
	if embd.Type.String() != "Q8_0" {
		t.Errorf("token_embd %v, want Q8_0", embd.Type)
	}
}

// TestSynthPresetParams: the presets have the published parameter counts
// of the models they imitate.
func TestSynthPresetParams(t *testing.T) {
	want := map[string]int64{
		"tinyllama-1.1b": 1100048384, // TinyLlama-1.1B
		"llama-7b":       6738415616, // Llama-2-7B
		"qwen3-0.6b":     596049920,  // Qwen3-0.6B (tied embeddings)
		"gemma3-1b":      999885952,  // Gemma-3-1B
		"phi3-mini":      3821079552, // Phi-3-mini-4k
	}
	for _, p := range synthPresets {
		var n int64
		for _, ts := range p.tensors() {
			e := int64(1)
			for _, d := range ts.shape {
				e *= d
			}
			n += e
		}
		t.Logf("%s: %d parameters", p.name, n)
		if w, ok := want[p.name]; ok && n != w {
			t.Errorf("%s: %d parameters, want %d", p.name, n, w)
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

// TestSynthGraniteRuns: a small model with granite-8b's structure (tied
// embeddings, granite scales) loads in the runtime and gives finite logits;
// the tied embedding is quantized like an output tensor (Q6_K).
func TestSynthGraniteRuns(t *testing.T) {
	small := synthPreset{name: "granite-test", arch: "granite", dim: 256, layers: 2, heads: 8, kvHeads: 2, ffn: 512,
		vocab: 1000, ctx: 256, tied: true, ropeBase: 10000000, eps: 1e-5, granite: true}
	synthPresets = append(synthPresets, small)
	defer func() { synthPresets = synthPresets[:len(synthPresets)-1] }()
	p := filepath.Join(t.TempDir(), "g.gguf")
	var so, se bytes.Buffer
	if err := runSynth([]string{"--preset", "granite-test", "--no-progress", "-o", p}, &so, &se); err != nil {
		t.Fatalf("synth: %v\n%s", err, se.String())
	}
	f, err := loader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
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
	f.Close()

	m, err := wrt.Load(p, wrt.LoadOptions{Threads: 2})
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

// TestSynthNewArchPresetsRun: a small model with the structure of each
// newer-architecture preset (qwen3, gemma3, phi3, qwen3moe) is written with
// the preset's keys and tensor names, loads in the runtime, and gives the
// same finite logits when its tokens are evaluated as one batch and one at a
// time (the batch path of the expert FFN groups tokens by expert).
func TestSynthNewArchPresetsRun(t *testing.T) {
	for _, name := range []string{"qwen3-0.6b", "gemma3-1b", "phi3-mini", "qwen3moe-7b-a1b"} {
		t.Run(name, func(t *testing.T) {
			var p synthPreset
			for _, q := range synthPresets {
				if q.name == name {
					p = q
				}
			}
			if p.name == "" {
				t.Fatalf("preset %s missing", name)
			}
			small := p
			small.name, small.dim, small.layers, small.ffn, small.vocab, small.ctx = name+"-test", 256, 2, 512, 1000, 256
			small.heads, small.kvHeads = 4, 2
			if p.kvHeads == p.heads {
				small.kvHeads = 4
			}
			if p.headDim > 0 {
				small.headDim = 96 // q width 384 != n_embd, as in the real presets
			}
			if p.window > 0 {
				small.layers, small.window = 6, 8
			}
			if p.experts > 0 {
				small.experts, small.expertsUse, small.expertFF = 8, 3, 128
			}
			synthPresets = append(synthPresets, small)
			defer func() { synthPresets = synthPresets[:len(synthPresets)-1] }()
			path := filepath.Join(t.TempDir(), "m.gguf")
			var so, se bytes.Buffer
			if err := runSynth([]string{"--preset", small.name, "--type", "q8_0", "--no-progress", "-o", path}, &so, &se); err != nil {
				t.Fatalf("synth: %v\n%s", err, se.String())
			}
			m, err := wrt.Load(path, wrt.LoadOptions{Threads: 2})
			if err != nil {
				t.Fatalf("runtime cannot load the synthesized %s model: %v", p.arch, err)
			}
			defer m.Close()
			if got := m.Config().Arch; got != p.arch {
				t.Fatalf("architecture %q, want %q", got, p.arch)
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

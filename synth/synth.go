// Package synth writes GGUF models with random weights and the shapes of
// real models (for benchmarks when the real weights are not at hand): the
// tensors and metadata keys llama.cpp's converters write for the preset's
// architecture, weights N(0, 1/fan_in) (norms 1 + 0.1·N(0, 1)) quantized by
// package quant as the file type's mix says, and a tokenizer (a built-in
// byte-level vocabulary, or the tokenizer.* keys of another GGUF file).
//
// The bytes depend only on the options, not on the thread count: every row
// is drawn from its own seed.
package synth

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
)

// Preset is the shape of a real model.
type Preset struct {
	Name     string
	Arch     string
	Dim      int // embedding length
	Layers   int
	Heads    int
	KVHeads  int
	FFN      int // feed-forward length
	Vocab    int
	Ctx      int // context_length written to the file
	Tied     bool
	RopeBase float32
	Eps      float32
	Granite  bool // granite scales

	HeadDim    int  // attention head size (0: Dim / Heads)
	QKNorm     bool // per-head q/k norms (qwen3, gemma3)
	PostNorms  bool // gemma's post-attention and post-FFN norms
	Fused      bool // phi3: attn_qkv and a gate+up ffn_up
	Experts    int  // mixture of experts: expert count (0: dense)
	ExpertsUse int  // experts used per token
	ExpertFF   int  // rows of each expert's gate/up
	Window     int  // sliding window (gemma3)
	RopeSWA    float32

	// Gated DeltaNet hybrids (qwen35): every FullAttnEvery-th layer is gated
	// full attention, the others linear attention with SSMGroups key heads
	// and SSMVHeads value heads of SSMState, a causal conv of SSMConv taps.
	DeltaNet      bool
	FullAttnEvery int
	SSMConv       int
	SSMState      int
	SSMGroups     int
	SSMVHeads     int
	Rot           int     // rope.dimension_count (0: the head size)
	RopeSections  [4]int  // rope.dimension_sections
	Pre           string  // tokenizer.ggml.pre to write over the copied vocabulary's ("": keep)
	SharedFF      int     // qwen35moe: the shared expert's width (expert_shared_feed_forward_length)
	Yarn          float32 // gpt-oss: YaRN RoPE scaling factor (0: none)
	YarnOrigCtx   int     // gpt-oss: rope.scaling.original_context_length

	// Encoders (bert, nomic-bert; encoder.go): Pooling is pooling_type
	// (1 mean, 2 cls, 4 rank), Classes the classification head's labels.
	Encoder bool
	Pooling int
	Classes int
	Dense   int     // gemma-embedding: the width between dense_2 and dense_3
	G4      *Gemma4 // gemma4's per-layer shapes (gemma4.go)
}

var presets = []Preset{
	{Name: "tinyllama-1.1b", Arch: "llama", Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000, Ctx: 2048, RopeBase: 10000, Eps: 1e-5},
	{Name: "llama-7b", Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 32, FFN: 11008, Vocab: 32000, Ctx: 4096, RopeBase: 10000, Eps: 1e-5},
	// Granite-3.3-8B: tied embeddings, granite scales (embedding 12, residual
	// 0.22, attention 1/128, logits 16). Its real context is 128K; the file
	// says 4096 so a default session does not allocate a 40 GB KV cache.
	{Name: "granite-8b", Arch: "granite", Dim: 4096, Layers: 40, Heads: 32, KVHeads: 8, FFN: 12800, Vocab: 49159, Ctx: 4096, Tied: true, RopeBase: 10000000, Eps: 1e-5, Granite: true},
	// The shared synthetic minis' shape (../shared/ref/README.md §1a).
	{Name: "mini", Arch: "llama", Dim: 256, Layers: 4, Heads: 8, KVHeads: 2, FFN: 768, Vocab: 32000, Ctx: 512, RopeBase: 10000, Eps: 1e-5},
	// Qwen3-0.6B: head size 128 (q width 2048 > n_embd), q/k norms, tied.
	{Name: "qwen3-0.6b", Arch: "qwen3", Dim: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072, Vocab: 151936, Ctx: 40960, Tied: true, RopeBase: 1000000, Eps: 1e-6, QKNorm: true},
	// Gemma-3-1B: 5 local (window 512, RoPE base 10^4) then 1 global layer (10^6), GeGLU, post-norms.
	{Name: "gemma3-1b", Arch: "gemma3", Dim: 1152, Layers: 26, Heads: 4, KVHeads: 1, HeadDim: 256, FFN: 6912, Vocab: 262144, Ctx: 32768, Tied: true, RopeBase: 1000000, Eps: 1e-6, QKNorm: true, PostNorms: true, Window: 512, RopeSWA: 10000},
	// Phi-3-mini-4k: fused attn_qkv and gate+up, NeoX RoPE.
	{Name: "phi3-mini", Arch: "phi3", Dim: 3072, Layers: 32, Heads: 32, KVHeads: 32, FFN: 8192, Vocab: 32064, Ctx: 4096, RopeBase: 10000, Eps: 1e-5, Fused: true},
	// A Qwen3-MoE with 7B weights of which ~1B are read per token: 64
	// experts of which 8 are used, each 1024 wide.
	// A Qwen3.5-style mini (random weights): 3 Gated DeltaNet layers to 1
	// gated full-attention layer, partial interleaved multi-section RoPE,
	// for parity tests against llama.cpp (run with the gpt-2 vocabulary,
	// pre-tokenizer qwen35; see runtime/testdata/qwen35/README.md).
	{Name: "qwen35-mini", Arch: "qwen35", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128, Vocab: 32000, Ctx: 512, Tied: true,
		RopeBase: 10000000, Eps: 1e-6, QKNorm: true, DeltaNet: true, FullAttnEvery: 4, SSMConv: 4, SSMState: 16, SSMGroups: 2, SSMVHeads: 4,
		Rot: 16, RopeSections: [4]int{3, 3, 2, 0}, Pre: "qwen35"},
	// Qwen3.5-0.8B's text model (Qwen/Qwen3.5-0.8B config.json): 18 Gated
	// DeltaNet layers (16 key and 16 value heads of 128, conv 4) and 6 gated
	// full-attention layers (8 heads, 2 KV heads of 256, a quarter rotated,
	// IMRoPE sections 11/11/10), tied embeddings; no MTP block.
	{Name: "qwen35-0.8b", Arch: "qwen35", Dim: 1024, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 256, FFN: 3584, Vocab: 248320, Ctx: 262144, Tied: true,
		RopeBase: 10000000, Eps: 1e-6, QKNorm: true, DeltaNet: true, FullAttnEvery: 4, SSMConv: 4, SSMState: 128, SSMGroups: 16, SSMVHeads: 16,
		Rot: 64, RopeSections: [4]int{11, 11, 10, 0}, Pre: "qwen35"},
	// The same shapes cut to one group of 3 DeltaNet layers and 1 attention
	// layer, for tracing real-shape differences from llama.cpp (see
	// runtime/testdata/qwen35/README.md).
	{Name: "qwen35-0.8b-4l", Arch: "qwen35", Dim: 1024, Layers: 4, Heads: 8, KVHeads: 2, HeadDim: 256, FFN: 3584, Vocab: 248320, Ctx: 262144, Tied: true,
		RopeBase: 10000000, Eps: 1e-6, QKNorm: true, DeltaNet: true, FullAttnEvery: 4, SSMConv: 4, SSMState: 128, SSMGroups: 16, SSMVHeads: 16,
		Rot: 64, RopeSections: [4]int{11, 11, 10, 0}, Pre: "qwen35"},
	// Its mixture-of-experts sibling (Qwen3.5-MoE / Qwen3.6-A3B style): 8
	// experts of 32, 2 used, softmax routing, and a sigmoid-gated shared
	// expert of 64.
	{Name: "qwen35moe-mini", Arch: "qwen35moe", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128, Vocab: 32000, Ctx: 512, Tied: true,
		RopeBase: 10000000, Eps: 1e-6, QKNorm: true, DeltaNet: true, FullAttnEvery: 4, SSMConv: 4, SSMState: 16, SSMGroups: 2, SSMVHeads: 4,
		Rot: 16, RopeSections: [4]int{3, 3, 2, 0}, Pre: "qwen35", Experts: 8, ExpertsUse: 2, ExpertFF: 32, SharedFF: 64},
	// Qwen3-Next-style mini: the same blocks with plain NeoX RoPE, one
	// ssm_ba matrix for beta and alpha, key heads shared by consecutive
	// value heads; always experts (8 of 32, 2 used) and a shared expert.
	{Name: "qwen3next-mini", Arch: "qwen3next", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128, Vocab: 32000, Ctx: 512, Tied: true,
		RopeBase: 10000000, Eps: 1e-6, QKNorm: true, DeltaNet: true, FullAttnEvery: 4, SSMConv: 4, SSMState: 16, SSMGroups: 2, SSMVHeads: 4,
		Rot: 16, Pre: "qwen2", Experts: 8, ExpertsUse: 2, ExpertFF: 32, SharedFF: 64},
	// gpt-oss-style mini (random weights): attention sinks, sliding window
	// 128 on even layers, YaRN (factor 32 over 4096, base 150000), q/k/v/o
	// biases, 8 experts of 64 with biases, 4 used (softmax over the chosen
	// logits), swiglu_oai; for parity tests against llama.cpp (run with the
	// gpt-2 vocabulary, pre-tokenizer gpt-4o; see runtime/testdata/gptoss).
	{Name: "gpt-oss-mini", Arch: "gpt-oss", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 64, Vocab: 32000, Ctx: 131072,
		RopeBase: 150000, Eps: 1e-5, Experts: 8, ExpertsUse: 4, ExpertFF: 64, Window: 128, RopeSWA: 150000, Pre: "gpt-4o",
		Yarn: 32, YarnOrigCtx: 4096},
	// gpt-oss-20b's shapes (openai/gpt-oss-20b config.json): 24 layers, 64
	// heads and 8 KV heads of 64, 32 experts of 2880 (4 used), vocabulary
	// 201088, untied; with --type mxfp4 about 12 GB, like OpenAI's file.
	{Name: "gpt-oss-20b", Arch: "gpt-oss", Dim: 2880, Layers: 24, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, Vocab: 201088, Ctx: 131072,
		RopeBase: 150000, Eps: 1e-5, Experts: 32, ExpertsUse: 4, ExpertFF: 2880, Window: 128, RopeSWA: 150000,
		Yarn: 32, YarnOrigCtx: 4096},
	// The same shapes cut to 4 layers (2 sliding-window, 2 full), about
	// 2.6 GB as mxfp4: for profiling the per-layer cost on a shared machine.
	{Name: "gpt-oss-20b-4l", Arch: "gpt-oss", Dim: 2880, Layers: 4, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, Vocab: 201088, Ctx: 131072,
		RopeBase: 150000, Eps: 1e-5, Experts: 32, ExpertsUse: 4, ExpertFF: 2880, Window: 128, RopeSWA: 150000,
		Yarn: 32, YarnOrigCtx: 4096},
	// A Gemma-4-style mini (random weights): local layers of head size 16
	// (window 32, RoPE base 1e4) and global ones of 32 (1e6, rope_freqs),
	// per-layer token embeddings of 32, the last 3 layers reading the KV of
	// layers 1 and 2, per-layer FFN widths and KV heads, no attn_v in
	// layer 2; see runtime/testdata/gemma4/README.md.
	{Name: "gemma4-mini", Arch: "gemma4", Dim: 64, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256, Vocab: 32000, Ctx: 512, Tied: true,
		RopeBase: 1000000, Eps: 1e-6, QKNorm: true, PostNorms: true, Window: 32, RopeSWA: 10000, Rot: 32,
		G4: &Gemma4{Local: []bool{true, true, false, true, true, false}, HeadDimSWA: 16, RotSWA: 16, KVHeads: []int{2, 2, 1, 2, 2, 1},
			FFN: []int{128, 128, 128, 256, 256, 256}, PerLayer: 32, SharedKV: 3, SoftCap: 30, NoV: []bool{false, false, true, false, false, false}}},
	// Its mixture-of-experts sibling in the 26B-A4B layout: every layer has
	// the dense MLP beside 4 GELU experts of 32 (2 used; gate and up fused
	// in even layers), no per-layer inputs, no shared KV.
	{Name: "gemma4-moe-mini", Arch: "gemma4", Dim: 64, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256, Vocab: 32000, Ctx: 512, Tied: true,
		RopeBase: 1000000, Eps: 1e-6, QKNorm: true, PostNorms: true, Window: 32, RopeSWA: 10000, Rot: 32, Experts: 4, ExpertsUse: 2, ExpertFF: 32,
		G4: &Gemma4{Local: []bool{true, true, false, true, true, false}, HeadDimSWA: 16, RotSWA: 16, KVHeads: []int{2, 2, 1, 2, 2, 1},
			FFN: []int{128, 128, 128, 128, 128, 128}, SoftCap: 30, NoV: []bool{false, false, true, false, false, false}}},
	// Gemma-4-E4B-like shapes (random weights): 42 layers, 5 local (window
	// 512, head size 256) to 1 global (head size 512, proportional RoPE
	// factors), 8 heads, 2 KV heads, FFN 10240, per-layer inputs of 256 over
	// a 262144-token vocabulary (synth's Gemma 4-style vocabulary padded with
	// <unusedN>), the last 18 layers sharing KV. Context 4096 in the file.
	{Name: "gemma4-e4b", Arch: "gemma4", Dim: 2560, Layers: 42, Heads: 8, KVHeads: 2, HeadDim: 512, FFN: 10240, Vocab: 262144, Ctx: 4096, Tied: true,
		RopeBase: 1000000, Eps: 1e-6, QKNorm: true, PostNorms: true, Window: 512, RopeSWA: 10000, Rot: 512,
		G4: &Gemma4{Local: gemma4Pattern(42, 6), HeadDimSWA: 256, RotSWA: 256, KVHeads: repeatInt(42, 2), FFN: repeatInt(42, 10240),
			PerLayer: 256, SharedKV: 18, SoftCap: 30, VocabSize: 262144}},
	{Name: "qwen3moe-7b-a1b", Arch: "qwen3moe", Dim: 2048, Layers: 16, Heads: 16, KVHeads: 4, HeadDim: 128, FFN: 6144, Vocab: 151936, Ctx: 40960, RopeBase: 1000000, Eps: 1e-6, QKNorm: true, Experts: 64, ExpertsUse: 8, ExpertFF: 1024},
}

// Presets returns the built-in presets (a copy).
func Presets() []Preset { return append([]Preset(nil), presets...) }

// PresetNames lists the built-in presets' names.
func PresetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return names
}

// FindPreset returns the built-in preset of that name (case-insensitive).
func FindPreset(name string) (Preset, error) {
	for _, p := range presets {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (want one of %s)", name, strings.Join(PresetNames(), ", "))
}

// HeadSize is the attention head size.
func (p Preset) HeadSize() int {
	if p.HeadDim > 0 {
		return p.HeadDim
	}
	return p.Dim / p.Heads
}

// Tensor is one tensor of a synthesized model.
type Tensor struct {
	Name  string
	Shape []int64 // ne order
	Norm  bool    // 1 + 0.1·N(0,1) instead of N(0,1)/sqrt(fan_in)
}

// Elements is the tensor's element count.
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Tensors lists the model's tensors in the order llama.cpp's converters
// write them.
func (p Preset) Tensors() []Tensor {
	hd := int64(p.HeadSize())
	d, q, kv, f, v := int64(p.Dim), hd*int64(p.Heads), hd*int64(p.KVHeads), int64(p.FFN), int64(p.Vocab)
	if p.G4 != nil {
		return p.gemma4Tensors()
	}
	if p.Encoder {
		return p.encoderTensors()
	}
	ts := []Tensor{{"token_embd.weight", []int64{d, v}, false}}
	for l := 0; l < p.Layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		ts = append(ts, Tensor{b + "attn_norm.weight", []int64{d}, true})
		if p.DeltaNet {
			ts = append(ts, p.deltaNetTensors(b, l)...)
			continue
		}
		if p.Arch == "gpt-oss" {
			ts = append(ts, p.gptOssTensors(b)...)
			continue
		}
		if p.Fused {
			ts = append(ts, Tensor{b + "attn_qkv.weight", []int64{d, q + 2*kv}, false})
		} else {
			ts = append(ts,
				Tensor{b + "attn_q.weight", []int64{d, q}, false},
				Tensor{b + "attn_k.weight", []int64{d, kv}, false},
				Tensor{b + "attn_v.weight", []int64{d, kv}, false})
		}
		if p.QKNorm {
			ts = append(ts,
				Tensor{b + "attn_q_norm.weight", []int64{hd}, true},
				Tensor{b + "attn_k_norm.weight", []int64{hd}, true})
		}
		ts = append(ts, Tensor{b + "attn_output.weight", []int64{q, d}, false})
		if p.PostNorms {
			ts = append(ts, Tensor{b + "post_attention_norm.weight", []int64{d}, true})
		}
		ts = append(ts, Tensor{b + "ffn_norm.weight", []int64{d}, true})
		switch {
		case p.Experts > 0:
			ne, fe := int64(p.Experts), int64(p.ExpertFF)
			ts = append(ts,
				Tensor{b + "ffn_gate_inp.weight", []int64{d, ne}, false},
				Tensor{b + "ffn_gate_exps.weight", []int64{d, fe, ne}, false},
				Tensor{b + "ffn_up_exps.weight", []int64{d, fe, ne}, false},
				Tensor{b + "ffn_down_exps.weight", []int64{fe, d, ne}, false})
		case p.Fused:
			ts = append(ts,
				Tensor{b + "ffn_up.weight", []int64{d, 2 * f}, false},
				Tensor{b + "ffn_down.weight", []int64{f, d}, false})
		default:
			ts = append(ts,
				Tensor{b + "ffn_gate.weight", []int64{d, f}, false},
				Tensor{b + "ffn_up.weight", []int64{d, f}, false},
				Tensor{b + "ffn_down.weight", []int64{f, d}, false})
		}
		if p.PostNorms {
			ts = append(ts, Tensor{b + "post_ffw_norm.weight", []int64{d}, true})
		}
	}
	ts = append(ts, Tensor{"output_norm.weight", []int64{d}, true})
	if p.Dense > 0 {
		ts = append(ts, p.denseTensors()...)
	}
	if !p.Tied {
		ts = append(ts, Tensor{"output.weight", []int64{d, v}, false})
	}
	return ts
}

// deltaNetTensors are the tensors of layer l (prefix b) of a Gated DeltaNet
// hybrid after attn_norm, as llama.cpp's loader names and shapes them.
// ssm_a is drawn as a norm weight and negated when written (A = -exp(A_log)).
func (p Preset) deltaNetTensors(b string, l int) []Tensor {
	hd := int64(p.HeadSize())
	d, q, kv, f := int64(p.Dim), hd*int64(p.Heads), hd*int64(p.KVHeads), int64(p.FFN)
	var ts []Tensor
	if (l+1)%p.FullAttnEvery != 0 {
		s, nk, nv := int64(p.SSMState), int64(p.SSMGroups), int64(p.SSMVHeads)
		cc := 2*s*nk + s*nv
		ts = append(ts,
			Tensor{b + "attn_qkv.weight", []int64{d, cc}, false},
			Tensor{b + "attn_gate.weight", []int64{d, s * nv}, false},
			Tensor{b + "ssm_conv1d.weight", []int64{int64(p.SSMConv), cc}, false},
			Tensor{b + "ssm_dt.bias", []int64{nv}, true},
			Tensor{b + "ssm_a", []int64{nv}, true},
		)
		if p.Arch == "qwen3next" { // beta and alpha in one matrix
			ts = append(ts, Tensor{b + "ssm_ba.weight", []int64{d, 2 * nv}, false})
		} else {
			ts = append(ts,
				Tensor{b + "ssm_beta.weight", []int64{d, nv}, false},
				Tensor{b + "ssm_alpha.weight", []int64{d, nv}, false})
		}
		ts = append(ts,
			Tensor{b + "ssm_norm.weight", []int64{s}, true},
			Tensor{b + "ssm_out.weight", []int64{s * nv, d}, false})
	} else {
		ts = append(ts,
			Tensor{b + "attn_q.weight", []int64{d, 2 * q}, false}, // q and its gate, per head
			Tensor{b + "attn_k.weight", []int64{d, kv}, false},
			Tensor{b + "attn_v.weight", []int64{d, kv}, false},
			Tensor{b + "attn_q_norm.weight", []int64{hd}, true},
			Tensor{b + "attn_k_norm.weight", []int64{hd}, true},
			Tensor{b + "attn_output.weight", []int64{q, d}, false})
	}
	ts = append(ts, Tensor{b + "post_attention_norm.weight", []int64{d}, true})
	if p.Experts > 0 {
		ne, fe, fs := int64(p.Experts), int64(p.ExpertFF), int64(p.SharedFF)
		return append(ts,
			Tensor{b + "ffn_gate_inp.weight", []int64{d, ne}, false},
			Tensor{b + "ffn_gate_exps.weight", []int64{d, fe, ne}, false},
			Tensor{b + "ffn_up_exps.weight", []int64{d, fe, ne}, false},
			Tensor{b + "ffn_down_exps.weight", []int64{fe, d, ne}, false},
			Tensor{b + "ffn_gate_inp_shexp.weight", []int64{d}, false},
			Tensor{b + "ffn_gate_shexp.weight", []int64{d, fs}, false},
			Tensor{b + "ffn_up_shexp.weight", []int64{d, fs}, false},
			Tensor{b + "ffn_down_shexp.weight", []int64{fs, d}, false})
	}
	return append(ts,
		Tensor{b + "ffn_gate.weight", []int64{d, f}, false},
		Tensor{b + "ffn_up.weight", []int64{d, f}, false},
		Tensor{b + "ffn_down.weight", []int64{f, d}, false})
}

// Options says what WriteFile writes.
type Options struct {
	Preset    Preset
	Type      quant.FileType
	VocabPath string // copy the tokenizer.* keys from this GGUF ("": a built-in byte-level vocabulary)
	Seed      uint64
	Threads   int                     // 0: all CPUs
	Progress  func(done, total int64) // bytes of tensor data written so far; may be nil
}

// Result describes a written model.
type Result struct {
	Preset  Preset // Vocab is the vocabulary's size (another with Options.VocabPath)
	Params  int64  // parameter count
	Tensors int
	Types   map[ggml.Type]int // tensors per type
	Bytes   int64             // file size
}

// WriteFile writes the model to path, through a temporary file beside it
// renamed at the end (a crash leaves no half file under the final name).
func WriteFile(path string, opt Options) (Result, error) {
	p := opt.Preset
	if p.Name == "" || p.Arch == "" || p.Dim <= 0 || p.Layers <= 0 || p.Heads <= 0 || p.KVHeads <= 0 || p.Vocab <= 0 {
		return Result{}, fmt.Errorf("synth: preset %q incomplete (name, arch, dim, layers, heads, kv heads and vocab are required)", p.Name)
	}
	if opt.VocabPath != "" {
		if err := loader.CheckNotSameFile(opt.VocabPath, path); err != nil {
			return Result{}, err
		}
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	w := loader.NewWriter()
	nVocab, err := writeMetadata(w, p, opt.Type, opt.VocabPath)
	if err != nil {
		return Result{}, err
	}
	p.Vocab = nVocab

	ts := p.Tensors()
	descs := make([]quant.TensorDesc, len(ts))
	for i, t := range ts {
		descs[i] = quant.TensorDesc{Name: t.Name, Type: ggml.F32, Shape: t.Shape}
	}
	plan, err := quant.Plan(opt.Type, descs, quant.Model{Arch: p.Arch, NLayer: p.Layers, NHead: p.Heads, NHeadKV: p.KVHeads})
	if err != nil {
		return Result{}, err
	}
	res := Result{Preset: p, Tensors: len(ts), Types: map[ggml.Type]int{}}
	var total, done int64
	advance := func(n int) {
		done += int64(n)
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	for i, t := range ts {
		ty := plan[i].Type
		res.Types[ty]++
		rows := t.Elements() / t.Shape[0]
		rb, err := ty.RowBytes(t.Shape[0])
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", t.Name, err)
		}
		total += rb * rows
		res.Params += t.Elements()
		tseed := splitmix64(opt.Seed ^ splitmix64(uint64(i)+0x5eed))
		err = w.AddTensorFunc(t.Name, ty, t.Shape, func(out io.Writer) error {
			return writeTensorData(out, t, ty, tseed, threads, advance)
		})
		if err != nil {
			return Result{}, err
		}
	}
	if err := w.WriteFile(path); err != nil {
		return Result{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return Result{}, err
	}
	res.Bytes = st.Size()
	return res, nil
}

// writeMetadata writes the model's metadata and tokenizer and returns the
// vocabulary size.
func writeMetadata(w *loader.Writer, p Preset, ft quant.FileType, vocabPath string) (int, error) {
	a := p.Arch
	w.SetString("general.architecture", a)
	w.SetString("general.name", "synth-"+p.Name)
	w.SetUint32(a+".context_length", uint32(p.Ctx))
	w.SetUint32(a+".embedding_length", uint32(p.Dim))
	w.SetUint32(a+".block_count", uint32(p.Layers))
	w.SetUint32(a+".feed_forward_length", uint32(p.FFN))
	w.SetUint32(a+".attention.head_count", uint32(p.Heads))
	w.SetUint32(a+".attention.head_count_kv", uint32(p.KVHeads))
	hd := uint32(p.HeadSize())
	w.SetUint32(a+".attention.key_length", hd)
	w.SetUint32(a+".attention.value_length", hd)
	if p.Rot > 0 {
		w.SetUint32(a+".rope.dimension_count", uint32(p.Rot))
	} else {
		w.SetUint32(a+".rope.dimension_count", hd)
	}
	if p.DeltaNet {
		secs := make([]int32, 4)
		for i, s := range p.RopeSections {
			secs[i] = int32(s)
		}
		if p.RopeSections != [4]int{} {
			w.SetInt32s(a+".rope.dimension_sections", secs)
		}
		w.SetUint32(a+".full_attention_interval", uint32(p.FullAttnEvery))
		w.SetUint32(a+".ssm.conv_kernel", uint32(p.SSMConv))
		w.SetUint32(a+".ssm.state_size", uint32(p.SSMState))
		w.SetUint32(a+".ssm.group_count", uint32(p.SSMGroups))
		w.SetUint32(a+".ssm.time_step_rank", uint32(p.SSMVHeads))
		w.SetUint32(a+".ssm.inner_size", uint32(p.SSMState*p.SSMVHeads))
	}
	if p.Encoder {
		writeEncoderMetadata(w, p)
		if p.RopeBase > 0 {
			w.SetFloat32(a+".rope.freq_base", p.RopeBase)
		}
	} else {
		w.SetFloat32(a+".rope.freq_base", p.RopeBase)
		w.SetFloat32(a+".attention.layer_norm_rms_epsilon", p.Eps)
	}
	if p.Granite {
		w.SetFloat32(a+".embedding_scale", 12)
		w.SetFloat32(a+".residual_scale", 0.22)
		w.SetFloat32(a+".attention.scale", 1/float32(hd))
		w.SetFloat32(a+".logit_scale", 16)
	}
	if p.Experts > 0 {
		w.SetUint32(a+".expert_count", uint32(p.Experts))
		w.SetUint32(a+".expert_used_count", uint32(p.ExpertsUse))
		w.SetUint32(a+".expert_feed_forward_length", uint32(p.ExpertFF))
		if p.SharedFF > 0 {
			w.SetUint32(a+".expert_shared_feed_forward_length", uint32(p.SharedFF))
		}
	}
	if p.Window > 0 {
		w.SetUint32(a+".attention.sliding_window", uint32(p.Window))
		w.SetFloat32(a+".rope.freq_base_swa", p.RopeSWA)
	}
	if p.G4 != nil {
		gemma4Metadata(w, p)
	}
	if p.Dense > 0 {
		writeDenseMetadata(w, p)
	}
	if p.Arch == "gpt-oss" {
		gptOssMetadata(w, p)
	}
	w.SetUint32("general.file_type", uint32(ft))
	if ft.DefaultType().BlockElems() > 1 {
		w.SetUint32("general.quantization_version", 2)
	}
	n := p.Vocab
	if vocabPath != "" {
		vf, err := loader.Open(vocabPath)
		if err != nil {
			return 0, err
		}
		defer vf.Close()
		toks, ok := vf.Strings("tokenizer.ggml.tokens")
		if !ok {
			return 0, fmt.Errorf("%s has no tokenizer.ggml.tokens", vocabPath)
		}
		for _, kv := range vf.KV {
			if strings.HasPrefix(kv.Key, "tokenizer.") {
				w.Set(kv.Key, kv.Value)
			}
		}
		n = len(toks)
		if p.Pre != "" {
			w.SetString("tokenizer.ggml.pre", p.Pre)
		}
	} else if p.G4 != nil {
		n = writeGemma4Vocab(w, p.G4.VocabSize) // a Gemma 4-style BPE vocabulary (gemma4.go)
	} else if p.Encoder {
		n = writeWordPieceVocab(w, n)
	} else {
		toks, scores, types := byteVocab(n)
		w.SetString("tokenizer.ggml.model", "llama")
		w.SetStrings("tokenizer.ggml.tokens", toks)
		w.SetFloat32s("tokenizer.ggml.scores", scores)
		w.SetInt32s("tokenizer.ggml.token_type", types)
		w.SetUint32("tokenizer.ggml.bos_token_id", 1)
		w.SetUint32("tokenizer.ggml.eos_token_id", 2)
		w.SetUint32("tokenizer.ggml.unknown_token_id", 0)
		w.SetBool("tokenizer.ggml.add_bos_token", true)
		w.SetBool("tokenizer.ggml.add_eos_token", false)
	}
	w.SetUint32(a+".vocab_size", uint32(n))
	return n, nil
}

// writeVocabTokens writes a built-in vocabulary's tokenizer model,
// pre-tokenizer and tokens.
func writeVocabTokens(w *loader.Writer, model, pre string, toks []string) {
	w.SetString("tokenizer.ggml.model", model)
	w.SetString("tokenizer.ggml.pre", pre)
	w.SetStrings("tokenizer.ggml.tokens", toks)
}

// byteVocab builds an SPM-style ("llama") vocabulary of n tokens: <unk>,
// <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then filler pieces
// ("▁a", "a", "▁ab", ...) with descending scores so the tokenizer merges
// common letter pairs first.
func byteVocab(n int) ([]string, []float32, []int32) {
	const (
		normal  = 1
		unknown = 2
		control = 3
		byteTok = 6
	)
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{unknown, control, control}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, byteTok)
	}
	seen := map[string]bool{}
	add := func(s string) bool {
		if len(toks) >= n || seen[s] {
			return len(toks) < n
		}
		seen[s] = true
		toks = append(toks, s)
		types = append(types, normal)
		return len(toks) < n
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	all := letters + strings.ToUpper(letters) + "0123456789.,!?'\"-:;()"
	add("▁")
	for _, c := range all {
		add("▁" + string(c))
		add(string(c))
	}
	// Longer pieces: lower-case strings of growing length, in a fixed order.
	for length := 2; len(toks) < n; length++ {
		idx := make([]int, length)
		for {
			var sb strings.Builder
			for _, i := range idx {
				sb.WriteByte(letters[i])
			}
			if !add("▁"+sb.String()) || !add(sb.String()) {
				break
			}
			k := length - 1
			for k >= 0 {
				idx[k]++
				if idx[k] < len(letters) {
					break
				}
				idx[k] = 0
				k--
			}
			if k < 0 {
				break
			}
		}
	}
	toks, types = toks[:n], types[:n]
	scores := make([]float32, n)
	for i := range scores {
		if types[i] == normal {
			scores[i] = -float32(i)
		}
	}
	return toks, scores, types
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// writeTensorData generates tensor t row by row (each row from its own
// seed, so the bytes do not depend on the thread count), converts it to ty
// and streams it to out in chunks.
func writeTensorData(out io.Writer, t Tensor, ty ggml.Type, seed uint64, threads int, advance func(int)) error {
	rowLen := int(t.Shape[0])
	nrows := 1
	for _, d := range t.Shape[1:] {
		nrows *= int(d)
	}
	rb64, err := ty.RowBytes(int64(rowLen))
	if err != nil {
		return err
	}
	rb := int(rb64)
	chunkRows := max(1, (8<<20)/rowLen)
	buf := make([]byte, min(nrows, chunkRows)*rb)
	std := float32(1 / math.Sqrt(float64(rowLen)))
	for r0 := 0; r0 < nrows; r0 += chunkRows {
		n := min(chunkRows, nrows-r0)
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, threads)
		for g := 0; g < min(threads, n); g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				row := make([]float32, rowLen)
				src := rand.NewPCG(0, 0)
				rng := rand.New(src)
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					r := r0 + i
					src.Seed(seed, uint64(r))
					if t.Norm {
						for j := range row {
							row[j] = 1 + 0.1*float32(rng.NormFloat64())
						}
						if strings.HasSuffix(t.Name, ".ssm_a") { // a decay rate: A = -exp(A_log) < 0
							for j := range row {
								row[j] *= -0.25
							}
						}
					} else {
						for j := range row {
							row[j] = std * float32(rng.NormFloat64())
						}
					}
					if err := quant.QuantizeRow(ty, row, buf[i*rb:(i+1)*rb]); err != nil {
						errs[g] = err
						return
					}
				}
			}(g)
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		if _, err := out.Write(buf[:n*rb]); err != nil {
			return err
		}
		advance(n * rb)
	}
	return nil
}

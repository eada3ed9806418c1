package synth

import (
	"fmt"
	"strings"

	"github.com/woolly-llm/woolly/loader"
)

// Encoder embedding models (bert, nomic-bert): the tensors and keys
// llama.cpp's converter writes for them, and a small built-in WordPiece
// vocabulary (tokenizer.ggml.model = "bert").

// encoderPresets are the random-weight minis of the encoder architectures,
// for parity tests against llama.cpp's llama-embedding (runtime/testdata/encoder).
var encoderPresets = []Preset{
	// A MiniLM-style BERT: learned absolute positions, token types, q/k/v
	// and every projection with biases, post-LayerNorm blocks, GELU FFN,
	// mean pooling.
	{Name: "bert-mini", Arch: "bert", Dim: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 2048, Ctx: 512,
		Eps: 1e-12, Encoder: true, Pooling: 1},
	// A nomic-embed-style BERT: RoPE (NeoX, base 1000) instead of learned
	// positions, one fused attn_qkv, SwiGLU FFN, no biases, mean pooling.
	{Name: "nomic-bert-mini", Arch: "nomic-bert", Dim: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 2048, Ctx: 512,
		RopeBase: 1000, Eps: 1e-12, Encoder: true, Pooling: 1},
	// bert-mini with a classification head (cls, cls.output with one
	// label) and rank pooling: a cross-encoder reranker.
	{Name: "bert-rerank-mini", Arch: "bert", Dim: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 2048, Ctx: 512,
		Eps: 1e-12, Encoder: true, Pooling: 4, Classes: 1},
	// bge-small-en-v1.5's shape (BAAI/bge-small-en-v1.5 config.json): 12
	// layers of 384, 12 heads, FFN 1536, the 30522-piece vocabulary's
	// size, 512 positions, CLS pooling; for speed figures.
	{Name: "bge-small", Arch: "bert", Dim: 384, Layers: 12, Heads: 12, KVHeads: 12, FFN: 1536, Vocab: 30522, Ctx: 512,
		Eps: 1e-12, Encoder: true, Pooling: 2},
	// An EmbeddingGemma-style mini: Gemma 3 blocks (q/k norms, post-norms,
	// GeGLU, head size 32 > n_embd/n_head), a symmetric sliding window of
	// 8 on layer 0 (sliding_window_pattern 2), mean pooling, then the
	// dense_2 (64 -> 128) and dense_3 (128 -> 64) projections.
	{Name: "gemma-embedding-mini", Arch: "gemma-embedding", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128,
		Vocab: 2048, Ctx: 512, Tied: true, RopeBase: 1000000, Eps: 1e-6, QKNorm: true, PostNorms: true, Window: 8,
		RopeSWA: 10000, Pooling: 1, Dense: 128},
}

func init() { presets = append(presets, encoderPresets...) }

// encoderTensors lists an encoder's tensors in the converter's order.
func (p Preset) encoderTensors() []Tensor {
	d, f, v := int64(p.Dim), int64(p.FFN), int64(p.Vocab)
	nomic := p.Arch == "nomic-bert"
	ts := []Tensor{{"token_embd.weight", []int64{d, v}, false}}
	if !nomic {
		ts = append(ts, Tensor{"position_embd.weight", []int64{d, int64(p.Ctx)}, false})
	}
	ts = append(ts,
		Tensor{"token_types.weight", []int64{d, 2}, false},
		Tensor{"token_embd_norm.weight", []int64{d}, true},
		Tensor{"token_embd_norm.bias", []int64{d}, false})
	for l := 0; l < p.Layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		if nomic {
			ts = append(ts, Tensor{b + "attn_qkv.weight", []int64{d, 3 * d}, false})
		} else {
			for _, n := range []string{"attn_q", "attn_k", "attn_v"} {
				ts = append(ts,
					Tensor{b + n + ".weight", []int64{d, d}, false},
					Tensor{b + n + ".bias", []int64{d}, false})
			}
		}
		ts = append(ts, Tensor{b + "attn_output.weight", []int64{d, d}, false})
		if !nomic {
			ts = append(ts, Tensor{b + "attn_output.bias", []int64{d}, false})
		}
		ts = append(ts,
			Tensor{b + "attn_output_norm.weight", []int64{d}, true},
			Tensor{b + "attn_output_norm.bias", []int64{d}, false},
			Tensor{b + "ffn_up.weight", []int64{d, f}, false})
		if nomic {
			ts = append(ts, Tensor{b + "ffn_gate.weight", []int64{d, f}, false})
		} else {
			ts = append(ts, Tensor{b + "ffn_up.bias", []int64{f}, false})
		}
		ts = append(ts, Tensor{b + "ffn_down.weight", []int64{f, d}, false})
		if !nomic {
			ts = append(ts, Tensor{b + "ffn_down.bias", []int64{d}, false})
		}
		ts = append(ts,
			Tensor{b + "layer_output_norm.weight", []int64{d}, true},
			Tensor{b + "layer_output_norm.bias", []int64{d}, false})
	}
	if p.Classes > 0 {
		c := int64(p.Classes)
		ts = append(ts,
			Tensor{"cls.weight", []int64{d, d}, false},
			Tensor{"cls.bias", []int64{d}, false},
			Tensor{"cls.output.weight", []int64{d, c}, false},
			Tensor{"cls.output.bias", []int64{c}, false})
	}
	return ts
}

// denseTensors are EmbeddingGemma's projections after pooling.
func (p Preset) denseTensors() []Tensor {
	d, h := int64(p.Dim), int64(p.Dense)
	return []Tensor{{"dense_2.weight", []int64{d, h}, false}, {"dense_3.weight", []int64{h, d}, false}}
}

// writeDenseMetadata writes EmbeddingGemma's pooling, window pattern and
// projection keys.
func writeDenseMetadata(w *loader.Writer, p Preset) {
	a := p.Arch
	w.SetUint32(a+".pooling_type", uint32(p.Pooling))
	w.SetUint32(a+".attention.sliding_window_pattern", 2)
	w.SetUint32(a+".dense_2_feat_in", uint32(p.Dim))
	w.SetUint32(a+".dense_2_feat_out", uint32(p.Dense))
	w.SetUint32(a+".dense_3_feat_in", uint32(p.Dense))
	w.SetUint32(a+".dense_3_feat_out", uint32(p.Dim))
}

// writeEncoderMetadata writes an encoder's own keys.
func writeEncoderMetadata(w *loader.Writer, p Preset) {
	a := p.Arch
	w.SetFloat32(a+".attention.layer_norm_epsilon", p.Eps)
	w.SetBool(a+".attention.causal", false)
	w.SetUint32(a+".pooling_type", uint32(p.Pooling))
	if p.Classes > 0 {
		labels := make([]string, p.Classes)
		for i := range labels {
			labels[i] = fmt.Sprintf("LABEL_%d", i)
		}
		w.SetStrings(a+".classifier.output_labels", labels)
	}
}

// writeWordPieceVocab writes a built-in WordPiece vocabulary of n tokens
// (n >= 1024): BERT's layout of specials ([PAD] 0, [unused0..98] 1-99,
// [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103), then every printable ASCII
// character and a few accented, CJK and other letters as word starts
// ("▁a") and continuations ("a"), common English words, and lower-case
// letter pairs and triples in a fixed order until n. Lower-casing and
// accent stripping are on, as in uncased BERT models.
func writeWordPieceVocab(w *loader.Writer, n int) int {
	const (
		normal  = 1
		unknown = 2
		control = 3
	)
	toks := []string{"[PAD]"}
	types := []int32{control}
	for i := 0; len(toks) < 100; i++ {
		toks = append(toks, fmt.Sprintf("[unused%d]", i))
		types = append(types, control)
	}
	toks = append(toks, "[UNK]", "[CLS]", "[SEP]", "[MASK]")
	types = append(types, unknown, control, control, control)
	seen := map[string]bool{}
	for _, t := range toks {
		seen[t] = true
	}
	add := func(s string) {
		if len(toks) < n && !seen[s] {
			seen[s] = true
			toks = append(toks, s)
			types = append(types, normal)
		}
	}
	for c := '!'; c <= '~'; c++ {
		if c >= 'A' && c <= 'Z' {
			continue // lower-cased away
		}
		add("▁" + string(c))
		add(string(c))
	}
	for _, c := range []string{"ß", "ø", "æ", "π", "λ", "ж", "и", "中", "文", "日", "本", "ह", "ि", "ं", "द", "ी"} {
		add("▁" + c)
		add(c)
	}
	for _, word := range strings.Fields("the a an and of to in is was it for on with as at by from he she they " +
		"we you i this that there little cat dog ran park friend played red ball under big tree when sun went " +
		"down walked home together happy tired mother gave warm milk kiss before bed once upon time what " +
		"embedding model search query document text") {
		add("▁" + word)
	}
	for _, s := range []string{"ing", "ed", "er", "ly", "es", "s", "tion"} {
		add(s)
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	for _, a := range letters {
		for _, b := range letters {
			add("▁" + string(a) + string(b))
			add(string(a) + string(b))
		}
	}
	for _, a := range letters {
		for _, b := range letters {
			for _, c := range letters {
				add("▁" + string(a) + string(b) + string(c))
				add(string(a) + string(b) + string(c))
			}
		}
	}
	writeVocabTokens(w, "bert", "default", toks)
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetUint32("tokenizer.ggml.token_type_count", 2)
	w.SetUint32("tokenizer.ggml.bos_token_id", 101)
	w.SetUint32("tokenizer.ggml.unknown_token_id", 100)
	w.SetUint32("tokenizer.ggml.seperator_token_id", 102)
	w.SetUint32("tokenizer.ggml.padding_token_id", 0)
	w.SetUint32("tokenizer.ggml.mask_token_id", 103)
	w.SetBool("tokenizer.ggml.normalizer.lowercase", true)
	return len(toks)
}

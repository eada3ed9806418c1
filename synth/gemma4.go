package synth

import (
	"fmt"
	"strings"

	"github.com/woolly-llm/woolly/loader"
)

// Gemma4 is the shape of a gemma4 preset beyond Preset's: local
// (sliding-window) and global layers with their own head sizes, rotated
// dims and KV head counts, per-layer feed-forward widths, per-layer token
// embeddings and KV shared across the last layers.
type Gemma4 struct {
	Local      []bool // one per layer: sliding-window layer
	HeadDimSWA int    // head size of the local layers (Preset.HeadDim: global)
	RotSWA     int    // rotated dims of the local layers (Preset.Rot: global)
	KVHeads    []int  // KV heads per layer
	FFN        []int  // feed_forward_length per layer
	PerLayer   int    // embedding_length_per_layer_input
	SharedKV   int    // attention.shared_kv_layers
	SoftCap    float32
	NoV        []bool // layers without attn_v (V from the K projection)
	VocabSize  int    // pad the built-in vocabulary to this many tokens with <unusedN> (0: no padding)
}

// gemma4HeadDim is layer l's head size.
func (p Preset) gemma4HeadDim(l int) int64 {
	if p.G4.Local[l] {
		return int64(p.G4.HeadDimSWA)
	}
	return int64(p.HeadSize())
}

// gemma4Tensors lists a gemma4 preset's tensors as llama.cpp's loader names
// and shapes them.
func (p Preset) gemma4Tensors() []Tensor {
	g := p.G4
	d, v, npl, nl := int64(p.Dim), int64(p.Vocab), int64(g.PerLayer), int64(p.Layers)
	ts := []Tensor{{"token_embd.weight", []int64{d, v}, false}}
	if npl > 0 {
		ts = append(ts,
			Tensor{"per_layer_token_embd.weight", []int64{npl * nl, v}, false},
			Tensor{"per_layer_model_proj.weight", []int64{d, npl * nl}, false},
			Tensor{"per_layer_proj_norm.weight", []int64{npl}, true})
	}
	ropeFreqs := false
	for l := 0; l < p.Layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		hd := p.gemma4HeadDim(l)
		q, kv, f := hd*int64(p.Heads), hd*int64(g.KVHeads[l]), int64(g.FFN[l])
		ownKV := l < p.Layers-g.SharedKV
		ts = append(ts,
			Tensor{b + "attn_norm.weight", []int64{d}, true},
			Tensor{b + "attn_q.weight", []int64{d, q}, false})
		if ownKV {
			ts = append(ts, Tensor{b + "attn_k.weight", []int64{d, kv}, false})
			if g.NoV == nil || !g.NoV[l] {
				ts = append(ts, Tensor{b + "attn_v.weight", []int64{d, kv}, false})
			}
		}
		ts = append(ts, Tensor{b + "attn_q_norm.weight", []int64{hd}, true})
		if ownKV {
			ts = append(ts, Tensor{b + "attn_k_norm.weight", []int64{hd}, true})
		}
		ts = append(ts,
			Tensor{b + "attn_output.weight", []int64{q, d}, false},
			Tensor{b + "post_attention_norm.weight", []int64{d}, true},
			Tensor{b + "layer_output_scale.weight", []int64{1}, true})
		if !g.Local[l] && !ropeFreqs {
			ts = append(ts, Tensor{"rope_freqs.weight", []int64{hd / 2}, true})
			ropeFreqs = true
		}
		ts = append(ts,
			Tensor{b + "ffn_norm.weight", []int64{d}, true},
			Tensor{b + "ffn_gate.weight", []int64{d, f}, false},
			Tensor{b + "ffn_up.weight", []int64{d, f}, false},
			Tensor{b + "ffn_down.weight", []int64{f, d}, false},
			Tensor{b + "post_ffw_norm.weight", []int64{d}, true})
		if p.Experts > 0 { // the 26B-A4B layout: a dense MLP beside the experts
			ne, fe := int64(p.Experts), int64(p.ExpertFF)
			ts = append(ts,
				Tensor{b + "ffn_gate_inp.weight", []int64{d, ne}, false},
				Tensor{b + "ffn_gate_inp.scale", []int64{d}, true},
				Tensor{b + "pre_ffw_norm_2.weight", []int64{d}, true},
				Tensor{b + "post_ffw_norm_1.weight", []int64{d}, true},
				Tensor{b + "post_ffw_norm_2.weight", []int64{d}, true})
			if l%2 == 0 { // gate and up in one tensor (gate rows first per expert)
				ts = append(ts, Tensor{b + "ffn_gate_up_exps.weight", []int64{d, 2 * fe, ne}, false})
			} else {
				ts = append(ts,
					Tensor{b + "ffn_gate_exps.weight", []int64{d, fe, ne}, false},
					Tensor{b + "ffn_up_exps.weight", []int64{d, fe, ne}, false})
			}
			ts = append(ts, Tensor{b + "ffn_down_exps.weight", []int64{fe, d, ne}, false})
		}
		if npl > 0 {
			ts = append(ts,
				Tensor{b + "inp_gate.weight", []int64{d, npl}, false},
				Tensor{b + "proj.weight", []int64{npl, d}, false},
				Tensor{b + "post_norm.weight", []int64{d}, true})
		}
	}
	ts = append(ts, Tensor{"output_norm.weight", []int64{d}, true})
	if !p.Tied {
		ts = append(ts, Tensor{"output.weight", []int64{d, v}, false})
	}
	return ts
}

// gemma4Metadata writes the gemma4 keys writeMetadata does not.
func gemma4Metadata(w *loader.Writer, p Preset) {
	a, g := p.Arch, p.G4
	kv := make([]int32, p.Layers)
	ff := make([]int32, p.Layers)
	for l := range kv {
		kv[l], ff[l] = int32(g.KVHeads[l]), int32(g.FFN[l])
	}
	w.SetInt32s(a+".attention.head_count_kv", kv)
	w.SetInt32s(a+".feed_forward_length", ff)
	w.SetUint32(a+".attention.key_length_swa", uint32(g.HeadDimSWA))
	w.SetUint32(a+".attention.value_length_swa", uint32(g.HeadDimSWA))
	w.SetUint32(a+".rope.dimension_count_swa", uint32(g.RotSWA))
	w.SetArray(a+".attention.sliding_window_pattern", loader.Array{Elem: loader.TypeBool, Values: append([]bool(nil), g.Local...)})
	w.SetUint32(a+".attention.shared_kv_layers", uint32(g.SharedKV))
	w.SetUint32(a+".embedding_length_per_layer_input", uint32(g.PerLayer))
	w.SetFloat32(a+".final_logit_softcapping", g.SoftCap)
}

// gemma4Corpus is the text the built-in Gemma 4-style vocabulary's merges
// are learned from (written for this purpose).
const gemma4Corpus = `Once upon a time there was a little dog named Sam. Sam liked to run in the park with his friend Lily.
One day Lily wanted to climb the big tree near the pond, but the tree was very tall and the branches were thin.
"Be careful!" said her mother. Lily smiled and said, "I will be careful, Mom. I just want to see the birds."
The little dog barked and wagged his tail. He did not like trees, but he liked Lily very much.
When the sun went down, they walked home together, happy and tired, and they ate warm soup with bread.
The next morning it was raining, so Lily and Sam stayed inside and played with blocks and a red ball.
They built a tall tower, and then the ball rolled into it and the tower fell down. Lily laughed and laughed.`

// gemma4Vocab builds a small vocabulary of Gemma 4's kind (tokenizer model
// "gemma4": BPE over raw UTF-8 with spaces written as U+2581 and byte
// fallback tokens <0x00>..<0xFF>): Gemma's special tokens, the bytes, the
// printable ASCII characters, ▁ and runs of newlines, then up to nMerges
// merges learned from gemma4Corpus (most frequent pair first, ties by text).
func gemma4Vocab(nMerges int) (tokens []string, types []int32, merges []string) {
	const (
		normal      = 1
		unknown     = 2
		control     = 3
		userDefined = 4
		byteTok     = 6
	)
	seen := map[string]bool{}
	add := func(s string, ty int32) {
		if !seen[s] {
			seen[s] = true
			tokens = append(tokens, s)
			types = append(types, ty)
		}
	}
	for _, s := range []string{"<pad>", "<eos>", "<bos>"} {
		add(s, control)
	}
	add("<unk>", unknown)
	add("<mask>", control)
	for _, s := range []string{"<|turn>", "<turn|>", "<|think|>"} {
		add(s, control)
	}
	for _, s := range []string{"<|channel>", "<channel|>"} {
		add(s, userDefined)
	}
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), byteTok)
	}
	add("▁", normal)
	for _, s := range []string{"\n", "\n\n", "\n\n\n"} {
		add(s, normal)
	}
	for c := byte(0x21); c < 0x7f; c++ {
		add(string(rune(c)), normal)
	}

	// Words: each line, spaces as ▁, cut before every ▁.
	counts := map[string]int{}
	var order []string
	for _, line := range strings.Split(gemma4Corpus, "\n") {
		line = strings.ReplaceAll(line, " ", "▁")
		start := 0
		for i := range line {
			if i > start && strings.HasPrefix(line[i:], "▁") {
				w := line[start:i]
				if counts[w] == 0 {
					order = append(order, w)
				}
				counts[w]++
				start = i
			}
		}
		if w := line[start:]; w != "" {
			if counts[w] == 0 {
				order = append(order, w)
			}
			counts[w]++
		}
	}
	words := make([][]string, len(order))
	for i, w := range order {
		for _, r := range w {
			words[i] = append(words[i], string(r))
		}
	}
	for len(merges) < nMerges {
		pairs := map[[2]string]int{}
		for i, w := range words {
			for j := 0; j+1 < len(w); j++ {
				pairs[[2]string{w[j], w[j+1]}] += counts[order[i]]
			}
		}
		var best [2]string
		bestN := 1
		for p, n := range pairs {
			if n > bestN || (n == bestN && bestN > 1 && p[0]+" "+p[1] < best[0]+" "+best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merges = append(merges, best[0]+" "+best[1])
		add(best[0]+best[1], normal)
		for i, w := range words {
			out := w[:0]
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == best[0] && w[j+1] == best[1] {
					out = append(out, best[0]+best[1])
					j++
				} else {
					out = append(out, w[j])
				}
			}
			words[i] = out
		}
	}
	return tokens, types, merges
}

// writeGemma4Vocab writes the built-in Gemma 4-style vocabulary and returns
// its size.
func writeGemma4Vocab(w *loader.Writer, pad int) int {
	toks, types, merges := gemma4Vocab(400)
	for i := 0; len(toks) < pad; i++ { // real-shape presets: Gemma's <unusedN> control tokens
		toks = append(toks, fmt.Sprintf("<unused%d>", i))
		types = append(types, 3)
	}
	writeVocabTokens(w, "gemma4", "gemma4", toks)
	w.SetFloat32s("tokenizer.ggml.scores", make([]float32, len(toks)))
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetStrings("tokenizer.ggml.merges", merges)
	w.SetUint32("tokenizer.ggml.bos_token_id", 2)
	w.SetUint32("tokenizer.ggml.eos_token_id", 1)
	w.SetUint32("tokenizer.ggml.unknown_token_id", 3)
	w.SetUint32("tokenizer.ggml.padding_token_id", 0)
	w.SetBool("tokenizer.ggml.add_bos_token", true)
	w.SetBool("tokenizer.ggml.add_space_prefix", false)
	w.SetString("tokenizer.chat_template", gemma4Template)
	return len(toks)
}

// gemma4Template is a short chat template in Gemma 4's format (system turn,
// <|turn>ROLE ... <turn|> turns, the generation prompt with an empty
// thought channel), for the synthetic vocabulary.
const gemma4Template = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}<|turn>system\n{{ messages[0]['content'] | trim }}<turn|>\n" +
	"{% set loop_messages = messages[1:] %}{% else %}{% set loop_messages = messages %}{% endif %}" +
	"{% for m in loop_messages %}<|turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n{{ m['content'] | trim }}<turn|>\n{% endfor %}" +
	"{% if add_generation_prompt %}<|turn>model\n<|channel>thought\n<channel|>{% endif %}"

// gemma4Pattern marks n layers local except every period-th (the last of
// each period is global).
func gemma4Pattern(n, period int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = i%period != period-1
	}
	return out
}

func repeatInt(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

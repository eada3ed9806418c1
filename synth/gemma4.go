package synth

import (
	"fmt"

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

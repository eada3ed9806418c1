package synth

import "github.com/woolly-llm/woolly/loader"

// gpt-oss (llama.cpp's "gpt-oss", OpenAI's open-weight MoE): attention with
// q/k/v/output biases and a learned sink logit per head, post_attention_norm
// before the experts, a router with a bias and experts whose gate/up/down
// each carry a bias per expert; untied output.

// gptOssTensors are the tensors of layer b of a gpt-oss preset after
// attn_norm, as llama.cpp's loader names and shapes them. Biases are drawn
// as N(0, 1/len), the sinks as norm weights (1 + 0.1·N(0,1)) so that some
// exceed a row's largest score and some do not.
func (p Preset) gptOssTensors(b string) []Tensor {
	hd := int64(p.HeadSize())
	d, q, kv := int64(p.Dim), hd*int64(p.Heads), hd*int64(p.KVHeads)
	ne, fe := int64(p.Experts), int64(p.ExpertFF)
	return []Tensor{
		{b + "attn_q.weight", []int64{d, q}, false},
		{b + "attn_q.bias", []int64{q}, false},
		{b + "attn_k.weight", []int64{d, kv}, false},
		{b + "attn_k.bias", []int64{kv}, false},
		{b + "attn_v.weight", []int64{d, kv}, false},
		{b + "attn_v.bias", []int64{kv}, false},
		{b + "attn_output.weight", []int64{q, d}, false},
		{b + "attn_output.bias", []int64{d}, false},
		{b + "attn_sinks.weight", []int64{int64(p.Heads)}, true},
		{b + "post_attention_norm.weight", []int64{d}, true},
		{b + "ffn_gate_inp.weight", []int64{d, ne}, false},
		{b + "ffn_gate_inp.bias", []int64{ne}, false},
		{b + "ffn_gate_exps.weight", []int64{d, fe, ne}, false},
		{b + "ffn_gate_exps.bias", []int64{fe, ne}, false},
		{b + "ffn_up_exps.weight", []int64{d, fe, ne}, false},
		{b + "ffn_up_exps.bias", []int64{fe, ne}, false},
		{b + "ffn_down_exps.weight", []int64{fe, d, ne}, false},
		{b + "ffn_down_exps.bias", []int64{d, ne}, false},
	}
}

// gptOssMetadata writes the keys of gpt-oss's YaRN RoPE scaling (the
// sliding window goes with Window like every preset's).
func gptOssMetadata(w *loader.Writer, p Preset) {
	a := p.Arch
	w.SetString(a+".rope.scaling.type", "yarn")
	w.SetFloat32(a+".rope.scaling.factor", p.Yarn)
	w.SetUint32(a+".rope.scaling.original_context_length", uint32(p.YarnOrigCtx))
}

package runtime

// gpt-oss (llama.cpp's "gpt-oss" architecture, OpenAI's open-weight MoE),
// as llama.cpp's openai-moe graph computes it:
//
//	x = embed(tokens)
//	for each layer (even layers: sliding window of attention.sliding_window):
//	    h = rmsnorm(x) * attn_norm
//	    q, k, v = Wq h + bq, Wk h + bk, Wv h + bv
//	    rope(q), rope(k)                        NeoX, YaRN-scaled (readYarn)
//	    a = Wo attention(q, k, v; sinks) + bo   a learned sink logit per head
//	                                            joins each softmax's denominator
//	    x += a
//	    h = rmsnorm(x) * post_attention_norm
//	    l = Wr h + br                           router logits [n_expert]
//	    sel = top-k of l; w = softmax(l[sel])   (softmax over the chosen only)
//	    x += sum_k w_k * (Wd_k swiglu_oai(Wg_k h + bg_k, Wu_k h + bu_k) + bd_k)
//	logits = Wout (rmsnorm(x) * output_norm)
//
// swiglu_oai(g, u) = min(g, 7) * sigmoid(1.702 * min(g, 7)) * (clamp(u, ±7) + 1).
// The expert matrices are MXFP4 in OpenAI's files (any type loads).

import (
	"fmt"
	"math"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// gpt-oss's activation constants (fixed in llama.cpp's graph, not in the file).
const (
	oaiAlpha = 1.702
	oaiLimit = 7.0
)

// YarnParams are the YaRN RoPE scaling parameters the reference derives
// (llama.cpp's context defaults: ext_factor 1 for a "yarn" file, beta_fast
// 32, beta_slow 1; none of these is read from the file).
type YarnParams struct {
	ExtFactor  float32
	AttnFactor float32 // the attention factor handed to the rope op (see readYarn)
	BetaFast   float32
	BetaSlow   float32
}

// readYarn sets c.Yarn for a file whose rope.scaling.type is "yarn", with
// llama.cpp's context rules: factor = 1/freq_scale; the rope op's attention
// factor is get_mscale(factor) / (1 + 0.1 ln factor) * rope.scaling.attn_factor,
// with get_mscale(s) = 0.1 ln s + 1 (1 for s <= 1); the op multiplies it by
// 1 + 0.1 ln(1/freq_scale) again (ropeTables). Every step in f32, as there.
func (c *Config) readYarn() {
	y := &YarnParams{ExtFactor: 1, BetaFast: 32, BetaSlow: 1}
	factor := 1 / c.RopeFreqScale
	mscale := float32(1)
	if factor > 1 {
		mscale = float32(float32(0.1)*kernels.Logf(factor)) + 1
	}
	mscale *= 1 / (1 + float32(float32(0.1)*kernels.Logf(factor)))
	y.AttnFactor = mscale * c.RopeAttnFactor
	c.Yarn = y
	c.RopeAttnFactor = 1 // folded into Yarn.AttnFactor
}

// readGptOss reads gpt-oss's keys, with llama.cpp's defaults: the sliding
// window (required), its layer pattern (period 2: even layers local), the
// sliding layers' RoPE base (default rope.freq_base); the experts' width is
// required, their weights are not renormalized and not scaled.
func (c *Config) readGptOss(f *loader.File, opt func(string, int) (int, error), optFloat func(string, float32) (float32, error)) error {
	a := c.Arch
	if _, ok := f.Get(a + ".attention.sliding_window"); !ok {
		return fmt.Errorf("key %s.attention.sliding_window is missing (required for %s)", a, a)
	}
	var err error
	if c.SlidingWindow, err = opt("attention.sliding_window", 0); err != nil {
		return err
	}
	if c.SWALayers, err = c.swaPattern(f, 2); err != nil {
		return err
	}
	c.RopeFreqScaleSWA = c.RopeFreqScale
	if c.RopeBaseSWA, err = optFloat("rope.freq_base_swa", c.RopeBase); err != nil {
		return err
	}
	if !(c.RopeBaseSWA > 0) {
		return fmt.Errorf("key %s.rope.freq_base_swa %v is invalid", a, c.RopeBaseSWA)
	}
	if _, ok := f.Get(a + ".expert_feed_forward_length"); !ok {
		return fmt.Errorf("key %s.expert_feed_forward_length is missing (required for %s)", a, a)
	}
	if c.NRot != c.HeadDim {
		return fmt.Errorf("key %s.rope.dimension_count %d differs from the head size %d (%s rotates whole heads)", a, c.NRot, c.HeadDim, a)
	}
	c.AttnSinks, c.SwiGLUOAI, c.MoESoftmaxWeight = true, true, true
	c.ExpertWeightsNorm = false
	return nil
}

// gptOssSteps are the loading steps of layer il's tensors after attn_norm.
func (c *Config) gptOssSteps(l *Layer, il int, b binder) []func() error {
	mat, vec, floats, experts := b.mat, b.vec, b.floats, b.experts
	p := fmt.Sprintf("blk.%d.", il)
	d, qd, kvd, ne, fe := c.NEmbd, c.QDim(), c.KVDim(), c.NExpert, c.NFFExp
	return []func() error{
		func() (e error) { l.Wq, e = mat(p+"attn_q.weight", d, qd); return },
		func() (e error) { l.Bq, e = vec(p+"attn_q.bias", qd); return },
		func() (e error) { l.Wk, e = mat(p+"attn_k.weight", d, kvd); return },
		func() (e error) { l.Bk, e = vec(p+"attn_k.bias", kvd); return },
		func() (e error) { l.Wv, e = mat(p+"attn_v.weight", d, kvd); return },
		func() (e error) { l.Bv, e = vec(p+"attn_v.bias", kvd); return },
		func() (e error) { l.Wo, e = mat(p+"attn_output.weight", qd, d); return },
		func() (e error) { l.Bo, e = vec(p+"attn_output.bias", d); return },
		func() (e error) {
			if l.Sinks, e = vec(p+"attn_sinks.weight", c.NHead); e != nil {
				return e
			}
			for h, s := range l.Sinks {
				if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
					return fmt.Errorf("tensor %sattn_sinks.weight: head %d is %v", p, h, s)
				}
			}
			return nil
		},
		func() (e error) { l.FFNNorm, e = vec(p+"post_attention_norm.weight", d); return },
		func() (e error) { l.GateInp, e = mat(p+"ffn_gate_inp.weight", d, ne); return },
		func() (e error) { l.GateInpB, e = vec(p+"ffn_gate_inp.bias", ne); return },
		func() (e error) { l.ExpGate, e = experts(p+"ffn_gate_exps.weight", d, fe, ne); return },
		func() (e error) { l.ExpGateB, e = floats(p+"ffn_gate_exps.bias", fe, ne); return },
		func() (e error) { l.ExpUp, e = experts(p+"ffn_up_exps.weight", d, fe, ne); return },
		func() (e error) { l.ExpUpB, e = floats(p+"ffn_up_exps.bias", fe, ne); return },
		func() (e error) { l.ExpDown, e = experts(p+"ffn_down_exps.weight", fe, d, ne); return },
		func() (e error) { l.ExpDownB, e = floats(p+"ffn_down_exps.bias", d, ne); return },
	}
}

// yarnCorrDims is ggml's correction range: the pair indices (floor, ceil)
// whose wavelength turns beta times over the original context, clamped to
// [0, nDims-1].
func yarnCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32) (float32, float32) {
	dim := func(beta float32) float32 {
		r := float32(nCtxOrig) / (beta * 2 * float32(math.Pi))
		return float32(float32(nDims)*kernels.Logf(r)) / (2 * kernels.Logf(base))
	}
	start := float32(math.Floor(float64(dim(betaFast))))
	end := float32(math.Ceil(float64(dim(betaSlow))))
	return max(0, start), min(float32(nDims-1), end)
}

// yarnRamp is 1 below low, 0 above high, linear between (i0 an even index).
func yarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

// fmaf is the single-precision fused multiply-add: the product of two
// float32 is exact in float64, so one float64 FMA rounded to float32 gives
// fmaf's result except in double-rounding ties (a 2^-29 chance).
func fmaf(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// addRowBias adds b ([n]) to each of ntok rows of x ([ntok][n]).
func addRowBias(x, b []float32, ntok, n int) {
	for t := 0; t < ntok; t++ {
		kernels.Add(x[t*n:(t+1)*n], x[t*n:(t+1)*n], b)
	}
}

// routeSoftmaxWeight fills sel and w for ntok rows of router logits the way
// gpt-oss routes: the K largest logits (larger first, the lower id on ties),
// then a softmax over those K logits alone; no renormalization after it.
func (ms *moeState) routeSoftmaxWeight(c *Config, ntok int) {
	ne, k := c.NExpert, c.NExpertUsed
	for t := 0; t < ntok; t++ {
		lg := ms.logits[t*ne : (t+1)*ne]
		sel, w := ms.sel[t*k:(t+1)*k], ms.w[t*k:(t+1)*k]
		topK(lg, sel)
		for j, e := range sel {
			w[j] = lg[e]
		}
		kernels.SoftmaxExact(w)
		if sc := c.ExpertWeightsScale; sc != 0 && sc != 1 {
			for j := range w {
				w[j] *= sc
			}
		}
	}
}

// topK writes to sel the indices of the len(sel) largest values of p,
// largest first, the lower index on ties.
func topK(p []float32, sel []int32) {
	for j := range sel {
		best := -1
		for e := range p {
			taken := false
			for _, s := range sel[:j] {
				if int(s) == e {
					taken = true
					break
				}
			}
			if !taken && (best < 0 || p[e] > p[best]) {
				best = e
			}
		}
		sel[j] = int32(best)
	}
}

// expertBiasGLU adds expert e's gate and up biases to elements [r0, r1) of
// n rows of gate and up ([n][NFFExp]) and replaces those gate elements by
// swiglu_oai(gate, up).
func expertBiasGLU(c *Config, l *Layer, e int, gate, up []float32, n, r0, r1 int) {
	ffe := c.NFFExp
	bg, bu := l.ExpGateB[e*ffe+r0:e*ffe+r1], l.ExpUpB[e*ffe+r0:e*ffe+r1]
	for j := 0; j < n; j++ {
		g, u := gate[j*ffe+r0:j*ffe+r1], up[j*ffe+r0:j*ffe+r1]
		for i := range g {
			g[i] += bg[i]
			u[i] += bu[i]
		}
		kernels.SwiGLUOAI(g, g, u, oaiAlpha, oaiLimit)
	}
}

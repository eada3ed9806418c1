package runtime

// The Gated DeltaNet linear-attention layer of the Qwen3.5 hybrids
// (qwen35), computed as llama.cpp's CPU build does (its fused
// gated_delta_net op, a token-by-token recurrence for prompts and decode
// alike). For one sequence, token t, with d = NEmbd, S = SSMState, nK key
// heads, nV value heads, cc = 2*nK*S + nV*S channels, K = SSMConv taps:
//
//	h                 = rmsnorm(x) * attn_norm                  [d]
//	mix = Wqkv h      [cc]    z = Wz h [nV*S]
//	beta = sigmoid(Wbeta h)                                      [nV]
//	g    = softplus(Walpha h + dt_bias) * A   (A = -exp(A_log))  [nV]
//	conv[ch] = silu(sum_{i<K} window[ch][i] * ConvW[ch][i])      [cc]
//	           window: the last K-1 inputs of the channel (the rolling
//	           conv state), then mix[ch]
//	q, k, v  = conv[0:nK*S], conv[nK*S:2*nK*S], conv[2*nK*S:]
//	q, k     = l2norm(each head)
//	for each value head hv (key head hk = hv % nK):
//	    M = exp(g[hv]) * M                 M: the state, [S rows j][S cols i]
//	    delta[j] = (v[j] - M[j]·k) * beta[hv]
//	    M[j][i] += k[i] * delta[j]
//	    o[j] = (M[j]·q) / sqrt(S)
//	    o = rmsnorm(o) * ssm_norm * silu(z[hv])
//	out = SSMOut o                                               [d]
//
// The state M of each value head and the conv window are kept per session
// (Session.conv, Session.ssm) and carried from one pass to the next.
//
// Every step rounds as the reference's AVX-512 build does (conv taps and
// state updates as FMAs, the state dots in vec_dot_f32's lane order, SiLU
// with ggml's vector exp, glibc's expf/logf): a last-bit difference here
// grows through the next Q8_K activation to 0.3 in the logits at real
// shapes (tools/tensordump/README.md).

import (
	"fmt"
	"math"

	"github.com/woolly-llm/woolly/kernels"
)

// dnState is the scratch of the Gated DeltaNet layers, sized for nBatch rows.
type dnState struct {
	mix   []float32 // q|k|v stream before the convolution [nBatch][cc]
	conv  []float32 // after convolution and SiLU [nBatch][cc]
	z     []float32 // output gate [nBatch][nV*S]
	beta  []float32 // [nBatch][nV]
	alpha []float32 // [nBatch][nV], then the decay g
	ba    []float32 // qwen3next: beta and alpha interleaved per key head [nBatch][2*nV]
	core  []float32 // recurrence output [nBatch][nV*S]
	qg    []float32 // gated attention: q and gate per head [nBatch][2*QDim]
	gate  []float32 // [nBatch][QDim]
	ones  []float32 // 1s, the up rows of SwiGLU used as SiLU [nBatch][max(cc, nV*S)]
	// qwen35moe's shared expert: its output [nBatch][NEmbd] and gate [nBatch].
	shOut, shGate []float32
}

func newDNState(c *Config, nBatch, _ int) *dnState {
	cc, vd := c.convChannels(), c.SSMInner
	s := &dnState{
		mix:   make([]float32, nBatch*cc),
		conv:  make([]float32, nBatch*cc),
		z:     make([]float32, nBatch*vd),
		beta:  make([]float32, nBatch*c.SSMVHeads),
		alpha: make([]float32, nBatch*c.SSMVHeads),
		ba:    make([]float32, nBatch*2*c.SSMVHeads),
		core:  make([]float32, nBatch*vd),
		qg:    make([]float32, nBatch*2*c.QDim()),
		gate:  make([]float32, nBatch*c.QDim()),
		ones:  make([]float32, nBatch*max(cc, vd)),
	}
	for i := range s.ones {
		s.ones[i] = 1
	}
	if c.NFFShexp > 0 {
		s.shOut = make([]float32, nBatch*c.NEmbd)
		s.shGate = make([]float32, nBatch)
	}
	return s
}

// recurrentState is a session's per-layer state of the linear layers (nil
// entries for the full-attention layers).
type recurrentState struct {
	conv [][]float32 // the last SSMConv-1 inputs per channel [cc][SSMConv-1]
	ssm  [][]float32 // per value head the state M [nV][S rows][S]
}

func newRecurrentState(c *Config) *recurrentState {
	r := &recurrentState{conv: make([][]float32, c.NLayer), ssm: make([][]float32, c.NLayer)}
	for il := range r.conv {
		if c.isRecurrent(il) {
			r.conv[il] = make([]float32, c.convChannels()*(c.SSMConv-1))
			r.ssm[il] = make([]float32, c.SSMVHeads*c.SSMState*c.SSMState)
		}
	}
	return r
}

// clear zeroes the state (an empty sequence).
func (r *recurrentState) clear() {
	for il := range r.conv {
		clear(r.conv[il])
		clear(r.ssm[il])
	}
}

// copyFrom makes r a copy of o (same model).
func (r *recurrentState) copyFrom(o *recurrentState) {
	for il := range r.conv {
		copy(r.conv[il], o.conv[il])
		copy(r.ssm[il], o.ssm[il])
	}
}

// clone returns a copy of r.
func (r *recurrentState) clone() *recurrentState {
	o := &recurrentState{conv: make([][]float32, len(r.conv)), ssm: make([][]float32, len(r.ssm))}
	for il := range r.conv {
		o.conv[il] = append([]float32(nil), r.conv[il]...)
		o.ssm[il] = append([]float32(nil), r.ssm[il]...)
	}
	return o
}

// bytes is the memory the state holds.
func (r *recurrentState) bytes() int64 {
	var n int64
	for il := range r.conv {
		n += 4 * int64(len(r.conv[il])+len(r.ssm[il]))
	}
	return n
}

// sigmoidf is the reference's scalar sigmoid, 1/(1 + expf(-x)) with
// glibc's expf.
func sigmoidf(x float32) float32 { return 1 / (1 + expf(-x)) }

// softplusf is log(1 + exp(x)), x itself above 20, as the reference's
// scalar op computes it (glibc's logf and expf).
func softplusf(x float32) float32 {
	if x > 20 {
		return x
	}
	return logf(1 + expf(x))
}

// l2Normalize scales x to unit length: x / max(|x|, eps), the sum of
// squares in double as ggml's l2_norm.
func l2Normalize(x []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	scale := 1 / max(float32(math.Sqrt(float64(float32(sum)))), eps)
	for i := range x {
		x[i] *= scale
	}
}

// dotRef is a float32 dot product in the order of the reference build's
// vec_dot_f32 (AVX-512): 64-element steps into 4 accumulators of 16 lanes,
// each a fused multiply-add; the accumulators added pairwise (0+2, 1+3,
// then 0+1), the 16 lanes reduced as lane i + lane i+8, then i + i+4, then
// i + i+2, then lane 0 + lane 1; the tail (n mod 64) added one product at
// a time. At real state sizes (128) a plain sum parts from
// it in the last bits, which activation quantization then amplifies.
func dotRef(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	np := n &^ 63
	var sum float32
	if np > 0 {
		var acc [64]float32 // accumulator j lane l at 16j+l
		for i := 0; i < np; i += 64 {
			x, y := (*[64]float32)(a[i:i+64]), (*[64]float32)(b[i:i+64])
			for l := range acc {
				acc[l] = fma32f(x[l], y[l], acc[l])
			}
		}
		var v [16]float32
		for l := range v {
			v[l] = (acc[l] + acc[32+l]) + (acc[16+l] + acc[48+l])
		}
		for s := 8; s >= 1; s /= 2 {
			for l := 0; l < s; l++ {
				v[l] += v[l+s]
			}
		}
		sum = v[0]
	}
	for i := np; i < n; i++ {
		sum += float32(a[i] * b[i]) // the product rounded (no fusion in the reference here)
	}
	return sum
}

// fma32f is fmaf by float64 arithmetic: the product of two float32 is
// exact in float64, so the sum is rounded once to float64, then to
// float32 (as fmaf but for double-rounding ties, odds ~2^-29); cheaper
// than math.FMA's conversions here.
func fma32f(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
}

// madRef sets y[i] += x[i]*v as the reference build's vec_mad_f32: one
// fused multiply-add each (its vector steps and, inlined where the
// compiler contracts, its tail).
func madRef(y, x []float32, v float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] = fma32f(x[i], v, y[i])
	}
}

// deltaNet runs linear-attention layer li over the pass's rows: xb holds
// the attention-normed input rows, out ([ntok][NEmbd]) receives the layer's
// output projection. Each sequence advances its own conv and SSM state.
func (p *pass) deltaNet(li int, l *Layer, xb, out []float32) {
	c, st, ntok := p.m.cfg, p.st, p.ntok
	dn := st.dn
	S, nK, nV, K := c.SSMState, c.SSMGroups, c.SSMVHeads, c.SSMConv
	cc, kd, vd := c.convChannels(), nK*c.SSMState, c.SSMInner
	mix, conv, z := dn.mix[:ntok*cc], dn.conv[:ntok*cc], dn.z[:ntok*vd]
	beta, alpha, core := dn.beta[:ntok*nV], dn.alpha[:ntok*nV], dn.core[:ntok*vd]

	// Input projections of every row (all read xb).
	if l.Wba.Data != nil { // qwen3next: per key head g, [beta of its r value heads, alpha of them]
		ba := dn.ba[:ntok*2*nV]
		p.matmul(xb, ntok, matOp{&l.Wqkv, mix}, matOp{&l.Wz, z}, matOp{&l.Wba, ba})
		r := nV / nK
		for t := 0; t < ntok; t++ {
			for g := 0; g < nK; g++ {
				src := ba[t*2*nV+g*2*r:]
				copy(beta[t*nV+g*r:t*nV+(g+1)*r], src[:r])
				copy(alpha[t*nV+g*r:t*nV+(g+1)*r], src[r:2*r])
			}
		}
	} else {
		p.matmul(xb, ntok, matOp{&l.Wqkv, mix}, matOp{&l.Wz, z}, matOp{&l.Wbeta, beta}, matOp{&l.Walpha, alpha})
	}
	trace("linear_attn_qkv_mixed", li, mix)
	trace("z", li, z)
	trace("beta", li, beta)
	trace("alpha", li, alpha)
	// Per-row gates: beta = sigmoid(beta); g = softplus(alpha + dt_bias) * A.
	for t := 0; t < ntok; t++ {
		for h := 0; h < nV; h++ {
			beta[t*nV+h] = sigmoidf(beta[t*nV+h])
			alpha[t*nV+h] = softplusf(alpha[t*nV+h]+l.DtBias[h]) * l.A[h]
		}
	}

	for _, sg := range p.segs {
		n, r0 := len(sg.tokens), sg.r0
		rs := sg.s.rec
		if rs == nil || rs.conv[li] == nil { // made with every session of such a model
			panic(fmt.Sprintf("layer %d: session has no recurrent state", li))
		}
		cs := rs.conv[li] // [cc][K-1]
		// Causal convolution, token by token, rolling the window.
		for t := 0; t < n; t++ {
			in, o := mix[(r0+t)*cc:(r0+t+1)*cc], conv[(r0+t)*cc:(r0+t+1)*cc]
			for ch := 0; ch < cc; ch++ {
				win, w := cs[ch*(K-1):(ch+1)*(K-1)], l.ConvW[ch*K:(ch+1)*K]
				// Each tap one fused multiply-add, as the reference's
				// compiler contracts its loop (the double FMA of float32
				// operands rounds as fmaf but for ties of ~2^-29 odds).
				var sum float32
				for i := 0; i < K-1; i++ {
					sum = fmaf(win[i], w[i], sum)
				}
				o[ch] = fmaf(in[ch], w[K-1], sum)
				if K > 1 {
					copy(win, win[1:])
					win[K-2] = in[ch]
				}
			}
		}
		// SiLU as the reference's vectorised op (ggml's vector exp on whole
		// 16-lane blocks of each row): SwiGLU with an up row of ones
		// (x*1 is exact).
		kernels.SwiGLU(conv[r0*cc:(r0+n)*cc], conv[r0*cc:(r0+n)*cc], dn.ones[:n*cc], n, cc, 0, cc)
		trace("conv_output_silu", li, conv[r0*cc:(r0+n)*cc])
		for t := 0; t < n; t++ {
			o := conv[(r0+t)*cc : (r0+t+1)*cc]
			// l2-normalize each key head of q and k.
			for h := 0; h < nK; h++ {
				l2Normalize(o[h*S:(h+1)*S], c.Eps)
				l2Normalize(o[kd+h*S:kd+(h+1)*S], c.Eps)
			}
		}

		// The recurrence: value heads are independent, split across workers.
		ssm := rs.ssm[li]
		scale := 1 / float32(math.Sqrt(float64(S)))
		p.m.pool.run(func(wk int) {
			h0, h1 := split(nV, wk, p.m.pool.n, 1)
			for hv := h0; hv < h1; hv++ {
				hk := hv % nK // qwen35: key heads repeat across value heads
				if c.DNGroupedHeads {
					hk = hv / (nV / nK) // qwen3next: each key head serves consecutive value heads
				}
				M := ssm[hv*S*S : (hv+1)*S*S] // [S rows j][S]
				for t := 0; t < n; t++ {
					r := r0 + t
					row := conv[r*cc : (r+1)*cc]
					q, k := row[hk*S:(hk+1)*S], row[kd+hk*S:kd+(hk+1)*S]
					v := row[2*kd+hv*S : 2*kd+(hv+1)*S]
					decay := expf(alpha[r*nV+hv])
					b := beta[r*nV+hv]
					// Each row j of M only meets itself: decay, its delta,
					// its update and its output in one pass (the same
					// operations as the reference's four passes over M).
					o := core[r*vd+hv*S : r*vd+(hv+1)*S]
					for j := 0; j < S; j++ {
						mj := M[j*S : (j+1)*S]
						for i := range mj {
							mj[i] *= decay
						}
						dj := (v[j] - dotRef(mj, k)) * b
						madRef(mj, k, dj)
						o[j] = dotRef(mj, q) * scale
					}
				}
			}
		})
	}

	trace("beta_sigmoid", li, beta)
	trace("gate", li, alpha)
	trace("conv_l2", li, conv)
	trace("attn_output", li, core)
	// Gated RMSNorm of each head's output: rmsnorm(o) * ssm_norm * silu(z).
	kernels.RMSNormRows(core, core, l.SSMNorm, ntok*nV, S, c.Eps)
	// silu(z) per head row of S, as the reference's vectorised SiLU op.
	kernels.SwiGLU(z, z, dn.ones[:ntok*vd], ntok*nV, S, 0, S)
	for i := range core {
		core[i] *= z[i]
	}
	trace("final_output", li, core)
	p.matmul(core, ntok, matOp{&l.SSMOut, out})
}

// splitGatedQ separates the gated attention's q projection, which holds per
// head q then its gate ([ntok][nHead][2][HeadDim]), into q and gate
// ([ntok][nHead*HeadDim] each).
func splitGatedQ(c *Config, qg, q, gate []float32, ntok int) {
	hd := c.HeadDim
	for t := 0; t < ntok; t++ {
		for h := 0; h < c.NHead; h++ {
			src := qg[(t*c.NHead+h)*2*hd:]
			dst := (t*c.NHead + h) * hd
			copy(q[dst:dst+hd], src[:hd])
			copy(gate[dst:dst+hd], src[hd:2*hd])
		}
	}
}

// imropeTables turns the RoPE tables of ntok rows into those of llama.cpp's
// interleaved multi-section RoPE for text: pair i belongs to section
// (i mod sum(sections)) in the t,h,w,t,h,w,... interleave; the t, h and w
// positions of a text token all equal its position, so their pairs keep
// the ordinary rotation, while pairs that fall to the fourth ("e") section
// have position 0: cos = attn_factor, sin = 0.
func imropeTables(c *Config, ntok int, cos, sin []float32) {
	half := c.NRot / 2
	sec := c.RopeSections
	total := sec[0] + sec[1] + sec[2] + sec[3]
	for i := 0; i < half; i++ {
		s := i % total
		var e bool
		switch {
		case s%3 == 1 && s < 3*sec[1]:
		case s%3 == 2 && s < 3*sec[2]:
		case s%3 == 0 && s < 3*sec[0]:
		default:
			e = true
		}
		if !e {
			continue
		}
		for t := 0; t < ntok; t++ {
			cos[t*half+i] = c.RopeAttnFactor
			sin[t*half+i] = 0
		}
	}
}

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
// shapes (tools/tensordump/README.md). The convolution and the recurrence
// run in C (kernels.DeltaNetConv, kernels.DeltaNetRecur: csrc/gdn.h, the
// same bits on every kernel set); the gates' expf/logf stay the Go ports
// of glibc's below (numerics.go), so no C library's exp enters.

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
	decay []float32 // exp(g) [nBatch][nV]
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
		decay: make([]float32, nBatch*c.SSMVHeads),
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

// parallel splits [0, n) into chunks (multiples of align) over the
// workers, calls f on each range and joins the errors.
func (p *pass) parallel(n, align int, f func(i0, i1 int)) {
	nw := p.m.pool.n
	nc := min(n, 4*nw) // a few chunks per worker, for balance on a busy machine
	if nc <= 1 {
		f(0, n)
		return
	}
	p.m.pool.runChunks(nc, func(_, c int) {
		i0, i1 := split(n, c, nc, align)
		f(i0, i1)
	})
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
	decay := dn.decay[:ntok*nV]

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
			decay[t*nV+h] = expf(alpha[t*nV+h]) // the state's decay, glibc's expf
		}
	}

	for _, sg := range p.segs {
		n, r0 := len(sg.tokens), sg.r0
		rs := sg.s.rec
		if rs == nil || rs.conv[li] == nil { // made with every session of such a model
			panic(fmt.Sprintf("layer %d: session has no recurrent state", li))
		}
		cs := rs.conv[li] // [cc][K-1]
		// Causal convolution, token by token, rolling the window; channels
		// are independent, split across workers (kernels.DeltaNetConv).
		p.parallel(cc, 16, func(c0, c1 int) {
			kernels.DeltaNetConv(conv[r0*cc:(r0+n)*cc], mix[r0*cc:(r0+n)*cc], cc, n, cs, l.ConvW, K, c0, c1)
		})
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

		// The recurrence: value heads are independent, split across workers
		// (kernels.DeltaNetRecur, one call per head range).
		ssm := rs.ssm[li]
		scale := 1 / float32(math.Sqrt(float64(S)))
		sh := kernels.DeltaNetShape{S: S, NK: nK, NV: nV, Grouped: c.DNGroupedHeads}
		p.parallel(nV, 1, func(h0, h1 int) {
			kernels.DeltaNetRecur(ssm, conv[r0*cc:(r0+n)*cc], cc, decay[r0*nV:(r0+n)*nV], beta[r0*nV:(r0+n)*nV], nV,
				core[r0*vd:(r0+n)*vd], vd, n, sh, h0, h1, scale)
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

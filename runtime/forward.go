package runtime

// The forward pass of a llama-family transformer (llama, qwen2, qwen3,
// qwen3moe, granite, gemma2, gemma3, phi3), in the spirit of llama2.c's
// run.c: one function, top to bottom, with every heavy op handed to the
// kernels package and split across the worker pool. Architecture features
// are switches of Config; a bracketed step runs only where it is on.
// The Gated DeltaNet hybrids (qwen35, qwen35moe, qwen3next) replace
// attention by deltanet.go's linear layer in most blocks; their attention
// blocks add a sigmoid output gate (q's second half per head) and their
// FFN norm is post_attention_norm.
//
// For a batch of ntok tokens at positions pos0 .. pos0+ntok-1:
//
//	x = embed(tokens) * embedding_scale            (gemma: sqrt(n_embd))
//	for each layer:
//	    h = rmsnorm(x) * attn_norm
//	    q, k, v = Wq h + bq, Wk h + bk, Wv h + bv   (phi3: one fused Wqkv)
//	    [q, k = rmsnorm(each head) * q_norm / k_norm]
//	    rope(q), rope(k)                            (per-layer base for sliding-window layers)
//	    [q *= q_scale]; append k, v to the cache (rounded to f16)
//	    a = Wo attention(q, kcache, vcache)         (window, logit soft-cap)
//	    [a = rmsnorm(a) * post_attention_norm]
//	    x += residual_scale * a
//	    h = rmsnorm(x) * ffn_norm
//	    f = Wdown (act(Wgate h) * Wup h)            (act: silu, or gemma's gelu;
//	                                                 MoE: sum of the routed experts' outputs)
//	    [f = rmsnorm(f) * post_ffw_norm]
//	    x += residual_scale * f
//	logits = Wout (rmsnorm(x) * output_norm) / logit_scale
//	[logits = cap * tanh(logits / cap)]
//
// Activations feeding a matrix product are converted once per op to the
// weight's activation type (Q8_K, Q8_0, F16 or F32) exactly as the
// reference build does it, then every worker multiplies its share of rows.

import (
	"fmt"
	"math"
	"time"

	"github.com/woolly-llm/woolly/kernels"
)

// fwdState holds the scratch buffers of one session, sized for nBatch tokens.
type fwdState struct {
	nBatch int
	x      []float32 // residual stream [nBatch][NEmbd]
	xb     []float32 // normed input of a block [nBatch][NEmbd]
	xb2    []float32 // output of attention/FFN projections [nBatch][NEmbd]
	q      []float32 // [nBatch][QDim]
	k, v   []float32 // [nBatch][KVDim]
	att    []float32 // attention output [nBatch][QDim]
	hb     []float32 // [nBatch][NFF] (empty for MoE models)
	hb2    []float32 // [nBatch][NFF]
	cos    []float32 // rope tables [nBatch][NRot/2]
	sin    []float32
	cosW   []float32 // rope tables of the sliding-window layers when they differ [nBatch][NRot/2]
	sinW   []float32
	moe    *moeState               // mixture-of-experts scratch (nil for dense models)
	dn     *dnState                // Gated DeltaNet scratch (nil without linear-attention layers)
	g4     *gemma4Scratch          // gemma4 scratch (made on first use)
	f16    []uint16                // f16 rounding of q [nBatch][QDim]
	logits []float32               // output rows of a pass of several sequences [rows][NVocab] (lazy)
	act    map[kernels.Type][]byte // quantized activations by activation type
	scr    [][]float32             // attention scratch per worker [attnScratch]
}

func newFwdState(c *Config, nBatch, nCtx, nWorkers int) *fwdState {
	s := &fwdState{
		nBatch: nBatch,
		x:      make([]float32, nBatch*c.NEmbd),
		xb:     make([]float32, nBatch*c.NEmbd),
		xb2:    make([]float32, nBatch*c.NEmbd),
		q:      make([]float32, nBatch*c.QDim()),
		k:      make([]float32, nBatch*c.KVDim()),
		v:      make([]float32, nBatch*c.KVDim()),
		att:    make([]float32, nBatch*c.QDim()),
		hb:     make([]float32, nBatch*c.denseFF()),
		hb2:    make([]float32, nBatch*c.denseFF()),
		cos:    make([]float32, nBatch*c.NRot/2),
		sin:    make([]float32, nBatch*c.NRot/2),
		f16:    make([]uint16, nBatch*c.QDim()),
		act:    map[kernels.Type][]byte{},
		scr:    make([][]float32, nWorkers),
	}
	for i := range s.scr {
		s.scr[i] = make([]float32, attnScratch(c))
	}
	if c.SWALayers != nil && (c.RopeBaseSWA != c.RopeBase || c.RopeFreqScaleSWA != c.RopeFreqScale) {
		s.cosW = make([]float32, nBatch*c.NRot/2)
		s.sinW = make([]float32, nBatch*c.NRot/2)
	}
	if c.NExpert > 0 {
		s.moe = newMoEState(c, nBatch)
	}
	if c.hasRecurrent() {
		s.dn = newDNState(c, nBatch, nWorkers)
	}
	return s
}

// ropeTables fills cos and sin ([ntok][NRot/2]) for positions pos0.. the way
// ggml does it: theta starts at the position and is multiplied by
// base^(-2/n_rot) per pair, divided by the pair's frequency factor, times
// freqScale; the table holds cosf / sinf (glibc's, bit for bit) times mscale.
// With YaRN (c.Yarn, gpt-oss; gptoss.go) the extrapolated angle (before
// freqScale) and the interpolated one are blended by a ramp over the pair
// index between the correction dims, and the magnitude is AttnFactor *
// (1 + 0.1 ln(1/freqScale)); the reference's build contracts the blend and
// the magnitude into FMAs.
func ropeTables(c *Config, base, freqScale float32, factors []float32, pos0, ntok int, cos, sin []float32) {
	half := c.NRot / 2
	thetaScale := float32(math.Pow(float64(base), float64(float32(-2)/float32(c.NRot))))
	mscale := c.RopeAttnFactor
	var low, high, ext float32 // YaRN's correction dims and extrapolation factor
	if y := c.Yarn; y != nil {
		low, high = yarnCorrDims(c.NRot, c.NCtxOrig, base, y.BetaFast, y.BetaSlow)
		ext, mscale = y.ExtFactor, y.AttnFactor
		if ext != 0 {
			mscale *= fmaf(0.1, kernels.Logf(1/freqScale), 1)
		}
	}
	for t := 0; t < ntok; t++ {
		theta := float32(pos0 + t)
		for i := 0; i < half; i++ {
			extrap := theta
			if factors != nil {
				extrap /= factors[i]
			}
			th := freqScale * extrap
			if ext != 0 {
				mix := yarnRamp(low, high, 2*i) * ext
				th = fmaf(th, 1-mix, extrap*mix)
			}
			sn, cs := sincosf(th) // glibc's sinf/cosf, bit for bit
			if mscale != 1 {
				sn, cs = sn*mscale, cs*mscale
			}
			sin[t*half+i], cos[t*half+i] = sn, cs
			theta *= thetaScale
		}
	}
}

// ropeFactors are the frequency factors of the global layers: rope_freqs, or
// Phi-3's long factors when the context exceeds the original one, else its
// short ones (nil: none).
func (s *Session) ropeFactors() []float32 {
	w, c := s.model.w, s.model.cfg
	switch {
	case w.RopeFreqs != nil:
		return w.RopeFreqs
	case w.RopeLong != nil && s.nCtx > c.NCtxOrig:
		return w.RopeLong
	}
	return w.RopeShort
}

// seg is one sequence's share of a forward pass: its tokens occupy rows
// r0 .. r0+len(tokens)-1 of the pass and continue session s at s.pos.
// Logits for its rows [from, len(tokens)) go to out ([len-from][NVocab]).
type seg struct {
	s      *Session
	tokens []int32
	from   int
	out    []float32
	r0     int
}

// pass is one forward pass over the rows of one or more sequences (a
// session's prompt chunk, or a batch step of several sessions). Every op is
// row-wise except attention, which each sequence runs over its own cache.
type pass struct {
	m    *Model
	st   *fwdState // scratch sized for at least ntok rows
	segs []seg
	ntok int       // rows in all
	rows []int     // rows per sequence, for the kernels whose order depends on the batch
	prof *profiler // nil unless profiling
	// kept is set once the last layer has kept only the output rows
	// (keepOutputRows): x then holds them in order from row 0, row i
	// coming from the pass's row keptSrc[i].
	kept    bool
	keptSrc []int
}

// srcRow is the pass row that row i of x holds.
func (p *pass) srcRow(i int) int {
	if p.kept {
		return p.keptSrc[i]
	}
	return i
}

// forward runs tokens (len ≤ nBatch) at positions s.pos .. s.pos+ntok-1
// through the model, appending their K and V to the cache. Logits for rows
// [from, ntok) are written to out ([ntok-from][NVocab]); from == ntok skips
// the output layer.
func (s *Session) forward(tokens []int32, from int, out []float32) {
	s.model.forward(s.st, []seg{{s: s, tokens: tokens, from: from, out: out}})
}

// forward runs one pass over segs (rows in order; each seg's r0 is set
// here) with scratch st. Every sequence's results are the ones it gets in a
// pass of its own: the row-wise kernels keep each row's summation order
// whatever the other rows are (see pass.product for the exception).
func (m *Model) forward(st *fwdState, segs []seg) {
	p := &pass{m: m, st: st, segs: segs, rows: make([]int, len(segs))}
	for i := range segs {
		segs[i].r0 = p.ntok
		p.rows[i] = len(segs[i].tokens)
		p.ntok += len(segs[i].tokens)
	}
	if p.ntok > st.nBatch { // the callers cut their tokens into batches
		panic(fmt.Sprintf("forward: %d rows, more than the batch of %d", p.ntok, st.nBatch))
	}
	if p.prof = m.prof.Load(); p.prof != nil {
		t0 := time.Now()
		defer func() { p.prof.addPass(p.ntok, time.Since(t0)) }()
	}
	p.forward()
}

func (p *pass) forward() {
	c, w, st, ntok := p.m.cfg, p.m.w, p.st, p.ntok
	if c.G4 != nil {
		p.forwardGemma4()
		return
	}
	d, ff := c.NEmbd, c.denseFF()

	// Token embeddings: dequantize just the rows we need.
	x := st.x[:ntok*d]
	p.embedTokens(x, d)
	if c.EmbeddingScale != 1 {
		kernels.Scale(x, c.EmbeddingScale)
	}

	// RoPE tables for each sequence's positions (and for the sliding-window
	// layers when they rotate with another base).
	half := c.NRot / 2
	for _, sg := range p.segs {
		n, pos0, o := len(sg.tokens), sg.s.pos, sg.r0*half
		ropeTables(c, c.RopeBase, c.RopeFreqScale, sg.s.ropeFactors(), pos0, n, st.cos[o:], st.sin[o:])
		if c.RopeSections != [4]int{} { // qwen35: interleaved multi-section RoPE
			imropeTables(c, n, st.cos[o:], st.sin[o:])
		}
		if st.cosW != nil {
			ropeTables(c, c.RopeBaseSWA, c.RopeFreqScaleSWA, nil, pos0, n, st.cosW[o:], st.sinW[o:])
		}
	}

	xb, xb2 := st.xb[:ntok*d], st.xb2[:ntok*d]
	hb, hb2 := st.hb[:ntok*ff], st.hb2[:ntok*ff]

	for li := range w.Layers {
		l := &w.Layers[li]

		// Attention (or the recurrence) over the layer's norm, and the residual.
		for t := 0; t < ntok; t++ {
			kernels.RMSNorm(xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.AttnNorm, c.Eps)
		}
		trace("attn_norm", li, xb)
		if c.isRecurrent(li) { // Gated DeltaNet instead of attention (deltanet.go)
			p.deltaNet(li, l, xb, xb2)
			trace("linear_attn_out", li, xb2)
			addResidual(c, x, xb2, nil, ntok)
		} else {
			p.selfAttention(li, l, xb, xb2)
			addResidual(c, x, xb2, l.PostAttn, ntok)
		}

		// The last layer's attention has read every row; from here on
		// only the rows whose outputs are asked for matter.
		if li == len(w.Layers)-1 {
			ntok = p.keepOutputRows(d)
			x, xb, xb2, hb, hb2 = x[:ntok*d], xb[:ntok*d], xb2[:ntok*d], hb[:ntok*ff], hb2[:ntok*ff]
		}
		if ntok > 0 {
			p.ffn(l, xb, xb2, hb, hb2, ntok)
		}
		trace("l_out", li, x)
	}

	p.output()
}

// selfAttention is layer li's attention over the normed rows xb ([ntok][d]):
// q/k/v projections (+ biases, per-head norms, the qwen35 output gate),
// RoPE, the KV cache store and each sequence's attention, and the output
// projection into xb2 ([ntok][d]).
func (p *pass) selfAttention(li int, l *Layer, xb, xb2 []float32) {
	c, st, ntok := p.m.cfg, p.st, p.ntok
	d, qd, kvd, half := c.NEmbd, c.QDim(), c.KVDim(), c.NRot/2
	q, k, v, att := st.q[:ntok*qd], st.k[:ntok*kvd], st.v[:ntok*kvd], st.att[:ntok*qd]

	var gate []float32 // qwen35: sigmoid output gate per head [ntok][QDim]
	if c.AttnGate {
		qg := st.dn.qg[:ntok*2*qd]
		p.matmul(xb, ntok, matOp{&l.Wq, qg}, matOp{&l.Wk, k}, matOp{&l.Wv, v})
		gate = st.dn.gate[:ntok*qd]
		splitGatedQ(c, qg, q, gate, ntok)
	} else {
		p.matmul(xb, ntok, matOp{&l.Wq, q}, matOp{&l.Wk, k}, matOp{&l.Wv, v})
	}
	if l.Bq != nil {
		for t := 0; t < ntok; t++ {
			kernels.Add(q[t*qd:(t+1)*qd], q[t*qd:(t+1)*qd], l.Bq)
			kernels.Add(k[t*kvd:(t+1)*kvd], k[t*kvd:(t+1)*kvd], l.Bk)
			kernels.Add(v[t*kvd:(t+1)*kvd], v[t*kvd:(t+1)*kvd], l.Bv)
		}
	}

	if l.QNorm != nil { // per-head norms of q and k (qwen3, gemma3)
		kernels.RMSNormRows(q, q, l.QNorm, ntok*c.NHead, c.HeadDim, c.Eps)
		kernels.RMSNormRows(k, k, l.KNorm, ntok*c.NHeadKV, c.HeadDim, c.Eps)
	}

	// Rotary position embedding of q and k (row t with position pos0+t's tables).
	swa := c.SWALayers != nil && c.SWALayers[li]
	cs, sn := st.cos[:ntok*half], st.sin[:ntok*half]
	if swa && st.cosW != nil {
		cs, sn = st.cosW[:ntok*half], st.sinW[:ntok*half]
	}
	kernels.RoPERows(q, ntok, c.NHead, c.HeadDim, c.NRot, cs, sn, c.RopeNeox)
	kernels.RoPERows(k, ntok, c.NHeadKV, c.HeadDim, c.NRot, cs, sn, c.RopeNeox)
	if c.QScale != 0 { // gemma, phi3: q is scaled here and attention uses scale 1
		kernels.Scale(q, c.QScale)
	}

	// The reference keeps K and V in f16. Its attention has two paths: a
	// tiled one in f32 for 64 or more query rows when the head size is a
	// multiple of 16 (kernels.AttentionTiled), and otherwise one that
	// rounds Q to f16 and accumulates V in f16 (kernels.AttentionF16Acc).
	// Round the same values here, each sequence by its own row count;
	// see attention.go.
	var tAttn time.Time
	if p.prof != nil {
		tAttn = time.Now()
	}
	// A quantized cache (LoadOptions.CacheTypeK/V) stores its rows in
	// their type and has one path (kernels.AttentionKVQ), which converts
	// Q itself.
	kvK, kvV := p.m.kvK, p.m.kvV
	kb, vb := p.m.kvRows()
	for _, sg := range p.segs {
		n, pos0, r0 := len(sg.tokens), sg.s.pos, sg.r0
		f16path := (n < 64 || c.HeadDim%16 != 0) && !p.m.kvQuant()
		kc := sg.s.kcache[li][pos0*kb : (pos0+n)*kb]
		vc := sg.s.vcache[li][pos0*vb : (pos0+n)*vb]
		kernels.StoreKV(kvK, k[r0*kvd:(r0+n)*kvd], kc)
		kernels.StoreKV(kvV, v[r0*kvd:(r0+n)*kvd], vc)
		qs, hs := q[r0*qd:(r0+n)*qd], st.f16[r0*qd:(r0+n)*qd]
		if f16path { // q = f16(q), through the f16 scratch
			kernels.QuantizeAct(kernels.F16, qs, halfBytes(hs))
			kernels.Dequant(kernels.F16, halfBytes(hs), qs)
		}
		sg.s.attention(p, li, n, pos0, f16path, qs, att[r0*qd:(r0+n)*qd])
	}
	if p.prof != nil {
		p.prof.add("attention", time.Since(tAttn))
	}

	// Output projection.
	if gate != nil {
		for i := range att {
			att[i] *= sigmoidf(gate[i])
		}
	}
	trace("attn_gated", li, att)
	p.matmul(att, ntok, matOp{&l.Wo, xb2})
	trace("attn_output", li, xb2)
	if l.Bo != nil { // gpt-oss: output bias
		addRowBias(xb2, l.Bo, ntok, d)
	}
}

// keepOutputRows moves the residual rows whose outputs the pass returns
// (each sequence's rows from its from) to the front of st.x, in order, and
// returns how many there are. It is called in the last layer once
// attention (or the recurrence) has consumed every row: the rest of the
// layer, the final norm and the output matrix are row-wise, so each kept
// row gets the same bits as in a pass that carries all of them, and the
// other rows' work (a prompt's FFN for all but its last token) is skipped.
// p.rows becomes the kept rows per sequence, so the types whose products
// depend on the batch (pass.product) see each sequence's kept rows alone,
// as in a pass of its own. The reference build selects the same rows at
// the same point of its last layer.
func (p *pass) keepOutputRows(d int) int {
	x := p.st.x
	n := 0
	for i, sg := range p.segs {
		k := len(sg.tokens) - sg.from
		if k <= 0 {
			p.rows[i] = 0
			continue
		}
		r := sg.r0 + sg.from
		if r != n {
			copy(x[n*d:(n+k)*d], x[r*d:(r+k)*d])
		}
		for j := range k {
			p.keptSrc = append(p.keptSrc, r+j)
		}
		p.rows[i] = k
		n += k
	}
	p.kept = true
	return n
}

// output is the final norm and output layer, only for the rows asked for;
// with several sequences their rows go through one product, then to each.
func (p *pass) output() {
	c, w, st := p.m.cfg, p.m.w, p.st
	d, x, xb := c.NEmbd, st.x, st.xb
	nout, outRows := 0, make([]int, len(p.segs))
	for i, sg := range p.segs {
		outRows[i] = len(sg.tokens) - sg.from
		nout += outRows[i]
	}
	if nout <= 0 {
		return
	}
	xo := xb[:nout*d]
	o := 0
	for _, sg := range p.segs {
		for t := sg.from; t < len(sg.tokens); t++ {
			r := sg.r0 + t
			if p.kept { // keepOutputRows put them first
				r = o
			}
			kernels.RMSNorm(xo[o*d:(o+1)*d], x[r*d:(r+1)*d], w.OutNorm, c.Eps)
			o++
		}
	}
	if p.segs[0].s.hiddenOut { // Embed: the final-normed hidden rows [nout][NEmbd] instead of logits
		if len(p.segs) > 1 { // Embed's sessions have no batch
			panic("forward: hidden-state output in a pass of several sequences")
		}
		copy(p.segs[0].out[:nout*d], xo)
		return
	}
	nv := c.NVocab
	out := p.segs[0].out
	if len(p.segs) > 1 {
		if len(st.logits) < nout*nv {
			st.logits = make([]float32, nout*nv)
		}
		out = st.logits
	}
	out = out[:nout*nv]
	p.rows = outRows
	p.matmul(xo, nout, matOp{&w.Output, out})
	if c.LogitScale != 1 {
		kernels.Scale(out, 1/c.LogitScale)
	}
	if c.FinalSoftCap != 0 {
		kernels.SoftCap(out, c.FinalSoftCap)
	}
	if len(p.segs) > 1 {
		o = 0
		for i, sg := range p.segs {
			copy(sg.out[:outRows[i]*nv], out[o*nv:])
			o += outRows[i]
		}
	}
}

// ffn is the feed-forward block of layer l over the pass's rows: norm,
// SwiGLU/GeGLU or the experts, down projection, (post-norm) and residual.
// xb, xb2, hb and hb2 are scratch rows.
func (p *pass) ffn(l *Layer, xb, xb2, hb, hb2 []float32, ntok int) {
	m, c, st := p.m, p.m.cfg, p.st
	d, ff := c.NEmbd, c.denseFF()
	x := st.x[:ntok*d]
	// Feed-forward: norm, SwiGLU, down projection, residual.
	trace("attn_residual", -1, x)
	for t := 0; t < ntok; t++ {
		kernels.RMSNorm(xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.FFNNorm, c.Eps)
	}
	trace("attn_post_norm", -1, xb)
	if l.ExpGate != nil {
		p.moe(l, xb, ntok, xb2)
		trace("ffn_moe_out", -1, xb2)
		if l.ShexpGate.Data != nil {
			p.sharedExpert(l, xb, xb2, hb, hb2, ntok)
		}
	} else {
		// Gate and up in one op; each chunk applies act(gate)*up to its
		// rows as soon as it has both (element-wise, so the same bits as
		// over whole rows), saving a pool op per layer.
		act := gluSiLU
		if c.GELU {
			act = gluGELU
		}
		fused := p.matmulOps(xb, ntok, act, matOp{&l.Wgate, hb}, matOp{&l.Wup, hb2})
		if !fused {
			m.pool.run(func(wk int) { // the activation, rows split across workers
				t0, t1 := split(ntok, wk, m.pool.n, 1)
				act.apply(hb[t0*ff:t1*ff], hb2[t0*ff:t1*ff], t1-t0, ff, 0, ff)
			})
		}
		trace("ffn_swiglu", -1, hb[:ntok*ff])
		p.matmul(hb, ntok, matOp{&l.Wdown, xb2})
		trace("ffn_out", -1, xb2)
	}
	addResidual(c, x, xb2, l.PostFFN, ntok)
}

// sharedExpert adds qwen35moe's shared expert to the routed experts' output
// moe ([ntok][NEmbd]): moe += sigmoid(ShexpGate h) * Wdown(silu(Wgate h) * Wup h).
func (p *pass) sharedExpert(l *Layer, h, moe, hb, hb2 []float32, ntok int) {
	c, dn := p.m.cfg, p.st.dn
	d := c.NEmbd
	out, g := dn.shOut[:ntok*d], dn.shGate[:ntok]
	fused := p.matmulOps(h, ntok, gluSiLU, matOp{&l.Wgate, hb}, matOp{&l.Wup, hb2})
	if !fused {
		gluSiLU.apply(hb, hb2, ntok, c.NFFShexp, 0, c.NFFShexp)
	}
	p.matmul(hb, ntok, matOp{&l.Wdown, out})
	trace("ffn_shexp", -1, out)
	p.matmul(h, ntok, matOp{&l.ShexpGate, g})
	trace("shared_expert_gate", -1, g)
	for t := 0; t < ntok; t++ {
		s := sigmoidf(g[t])
		for i := t * d; i < (t+1)*d; i++ {
			moe[i] += float32(out[i] * s) // the product rounded, then the sum (two ops in the reference)
		}
	}
	trace("ffn_out", -1, moe)
}

// addResidual adds a sublayer's output y (ntok rows) to the residual stream
// x: y is first normed by the sublayer's post-norm when the model has one
// (Gemma 2 and 3; nil otherwise) and scaled by the residual scale (Granite).
func addResidual(c *Config, x, y, postNorm []float32, ntok int) {
	if postNorm != nil {
		kernels.RMSNormRows(y, y, postNorm, ntok, c.NEmbd, c.Eps)
	}
	if c.ResidualScale != 1 {
		kernels.Scale(y, c.ResidualScale)
	}
	kernels.Add(x, x, y)
}

// gluKind is the gated activation fused into a gate/up product.
type gluKind int

const (
	gluNone gluKind = iota
	gluSiLU         // SwiGLU: silu(gate) * up
	gluGELU         // GeGLU: gelu(gate) * up (gemma)
)

// apply replaces gate by act(gate) * up on elements [i0, i1) of ntok rows of n.
func (g gluKind) apply(gate, up []float32, ntok, n, i0, i1 int) {
	if g == gluGELU {
		kernels.GeGLU(gate, gate, up, ntok, n, i0, i1)
		return
	}
	kernels.SwiGLU(gate, gate, up, ntok, n, i0, i1)
}

// matOp is one matrix product: out[t][r] = dot(row r of m, input row t).
type matOp struct {
	m   *Mat
	out []float32
}

// matmul multiplies ntok input rows by every matrix of ops (all with the
// same row length). The input is converted to each activation type once and
// shared; each worker makes one kernel call per matrix on its rows.
func (p *pass) matmul(in []float32, ntok int, ops ...matOp) {
	p.matmulOps(in, ntok, gluNone, ops...)
}

// matmulOps is matmul; with glu set and ops = gate, up of the same shape on
// the quantized kernels, each chunk computes the same rows of both and then
// replaces its gate rows by act(gate)*up (fused reports that it did).
func (p *pass) matmulOps(in []float32, ntok int, act gluKind, ops ...matOp) (fused bool) {
	pl, st := p.m.pool, p.st
	cols := ops[0].m.Cols
	type actBuf struct {
		typ      kernels.Type
		buf      []byte
		rowBytes int
	}
	glu := act != gluNone && len(ops) == 2 && ops[0].m.Rows == ops[1].m.Rows && ops[0].m.Cols == ops[1].m.Cols
	var done []actBuf // activation types converted so far (at most 2-3)
	acts := make([]actBuf, len(ops))
	for i, op := range ops {
		at := op.m.Type.ActType()
		found := false
		for _, a := range done {
			if a.typ == at {
				acts[i], found = a, true
				break
			}
		}
		if found {
			continue
		}
		rb := mustRowBytes(at, cols)
		buf := st.act[at]
		if len(buf) < ntok*int(rb) {
			buf = make([]byte, st.nBatch*int(rb))
			st.act[at] = buf
		}
		a := actBuf{at, buf[:ntok*int(rb)], int(rb)}
		p.quantizeRows(at, in, cols, ntok, a.buf, a.rowBytes)
		acts[i] = a
		done = append(done, a)
	}
	// Rows are cut into chunks (multiples of 16 rows, see chunkRows) that the
	// workers claim one at a time: a late or preempted worker leaves its
	// share to the others instead of stalling the op.
	var first, rowsPer [8]int // op i: its first chunk, rows per chunk
	if len(ops) > len(first) {
		panic(fmt.Sprintf("matmul: %d matrices in one op (at most %d)", len(ops), len(first)))
	}
	if p.prof != nil {
		t0 := time.Now()
		defer func() { p.prof.addMatmul(ops, time.Since(t0)) }()
	}
	if glu {
		rows := ops[0].m.Rows
		rp := chunkRows(rows, 2*rows*ops[0].m.RowBytes, pl.n)
		pl.runChunksWait((rows+rp-1)/rp, opWait(2*rows*ops[0].m.RowBytes), func(_, c int) {
			r0 := c * rp
			r1 := min(r0+rp, rows)
			for i, op := range ops {
				p.product(op.m, acts[i].buf, acts[i].rowBytes, ntok, op.out, r0, r1)
			}
			act.apply(ops[0].out, ops[1].out, ntok, rows, r0, r1)
		})
		return true
	}
	nch, bytes := 0, 0
	for i, op := range ops {
		bytes += op.m.Rows * op.m.RowBytes
		rp := chunkRows(op.m.Rows, op.m.Rows*op.m.RowBytes, pl.n)
		first[i], rowsPer[i] = nch, rp
		nch += (op.m.Rows + rp - 1) / rp
	}
	pl.runChunksWait(nch, opWait(bytes), func(_, c int) {
		i := len(ops) - 1
		for i > 0 && first[i] > c {
			i--
		}
		op := ops[i]
		mt := op.m
		r0 := (c - first[i]) * rowsPer[i]
		r1 := min(r0+rowsPer[i], mt.Rows)
		p.product(mt, acts[i].buf, acts[i].rowBytes, ntok, op.out, r0, r1)
	})
	return false
}

// Chunk sizing. An op ends when its last chunk does, so a worker that
// finishes first idles for about half a chunk: at 8 chunks per worker a
// granite-8b feed-forward op (59 MB of gate and up rows) left ~3.7 MB
// chunks, ~0.3 ms of one thread's stream, per op. Every chunk also costs a
// fixed amount (a cgo call, a claim, a cold start of its row streams). With
// idle ~ op/(2N) and a cost c per chunk, N = sqrt(op/(2c)) chunks is the
// least loss; chunkCost is 2c in bytes of stream (c ~0.5 us at ~20 GB/s).
// Measured, tg32 -t 2 on a 2-core Xeon (AVX-512), interleaved: granite-8b
// 4.46/4.38 tokens/s against 3.67/3.74 with 8 per worker; TinyLlama tg64
// 30.7/30.2 vs 30.8/30.8 (its ops are 2-13 MB and keep ~8-12 per worker);
// a cost of 10 KB (more chunks) gave TinyLlama 29.6/28.8, 40 KB granite 4.1.
const (
	chunkCost       = 20 << 10
	chunksPerWorker = 8  // at least: balance on a busy machine
	chunksMax       = 32 // per worker, at most
	chunkMinRows    = 64 // a prompt tile's rows stay whole and few per chunk
)

// chunkRows is the rows per chunk of an op over rows rows (bytes of
// weights in all, for every matrix the chunk covers) on workers workers: a
// multiple of 16 (packChunkAlign), at least chunkMinRows.
func chunkRows(rows, bytes, workers int) int {
	n := int(math.Sqrt(float64(bytes) / chunkCost))
	n = min(chunksMax*workers, max(chunksPerWorker*workers, n))
	rp := (rows + n - 1) / n
	return max(chunkMinRows, (rp+15)/16*16)
}

// opWait is how long the caller of an op over bytes of weights polls for
// the other workers' last chunks once its own share is done, before it
// blocks (pool.runChunksWait). Short ops keep the pool's spin: a blocked
// caller's wake-up costs more than their last chunk. On long ones the
// caller blocks almost at once: on the 2-core Xeon VM a polling caller
// slowed the worker still streaming (granite-8b tg32 -t 2, interleaved,
// 2 us vs 20 us at ops of 4 MB and more: 4.73/4.61/4.74/4.59 vs
// 4.46/4.45/4.34/4.32 tokens/s; TinyLlama tg64 31.8/30.8 vs 31.3/30.9;
// 2 us on every op cost TinyLlama 4 %, 100 us cost granite 10 %; a PAUSE
// between polls did not help).
func opWait(bytes int) time.Duration {
	if bytes >= longOpBytes {
		return longOpWait
	}
	return spinFor
}

const (
	longOpBytes = 4 << 20
	longOpWait  = 2 * time.Microsecond
)

// mustRowBytes is the bytes of n activations of type at. The weights' rows
// are whole blocks of their type (checked at load), and an activation type's
// block is its weight type's, so this does not fail for a row length of a
// matrix of the model.
func mustRowBytes(at kernels.Type, n int) int {
	rb, err := at.RowBytes(int64(n))
	if err != nil {
		panic(err)
	}
	return int(rb)
}

// quantizeRows converts ntok rows of cols activations to type at.
func (p *pass) quantizeRows(at kernels.Type, in []float32, cols, ntok int, dst []byte, rb int) {
	if p.prof != nil {
		t0 := time.Now()
		defer func() { p.prof.add("act quant", time.Since(t0)) }()
	}
	if ntok < 8 {
		for t := 0; t < ntok; t++ {
			kernels.QuantizeAct(at, in[t*cols:(t+1)*cols], dst[t*rb:(t+1)*rb])
		}
		return
	}
	pl := p.m.pool
	pl.run(func(wk int) {
		t0, t1 := split(ntok, wk, pl.n, 1)
		for t := t0; t < t1; t++ {
			kernels.QuantizeAct(at, in[t*cols:(t+1)*cols], dst[t*rb:(t+1)*rb])
		}
	})
}

// product computes rows [r0, r1) of mt times the ntok activation rows a (rb
// bytes each) into y ([ntok][mt.Rows]). One row is a MatVec, more a MatMulQ,
// equal bit for bit — except for the types whose reference sums a batch in
// another order than one token (IQ4_NL, see csrc/kernels.h): in a pass of
// several sequences their rows go sequence by sequence (p.rows), so each
// gets the numbers of a pass of its own.
func (p *pass) product(mt *Mat, a []byte, rb, ntok int, y []float32, r0, r1 int) {
	if len(p.rows) > 1 && batchOrder(mt.Type) {
		t0 := 0
		for _, n := range p.rows {
			if n > 0 {
				matProduct(mt, a[t0*rb:], rb, n, y[t0*mt.Rows:], r0, r1)
			}
			t0 += n
		}
		return
	}
	matProduct(mt, a, rb, ntok, y, r0, r1)
}

// matProduct is one kernel call: MatVec for one row, MatMulQ for more.
func matProduct(mt *Mat, a []byte, rb, ntok int, y []float32, r0, r1 int) {
	switch {
	case mt.Pack.Rows() > 0 && ntok == 1:
		kernels.MatVecPacked(mt.Pack, mt.Type, mt.Cols, mt.Data, mt.RowBytes, mt.Rows, a, y, r0, r1)
	case mt.Pack.Rows() > 0:
		kernels.MatMulQPacked(mt.Pack, mt.Type, mt.Cols, mt.Data, mt.RowBytes, mt.Rows, r0, r1, a, rb, ntok, y, mt.Rows)
	case ntok == 1:
		kernels.MatVec(mt.Type, mt.Cols, mt.Data, mt.RowBytes, a, y, r0, r1)
	default:
		kernels.MatMulQ(mt.Type, mt.Cols, mt.Data, mt.RowBytes, r0, r1, a, rb, ntok, y, mt.Rows)
	}
}

// batchOrder reports the weight types whose reference build sums a product
// of two or more tokens in another order than its one-token dot.
func batchOrder(t kernels.Type) bool { return t == kernels.IQ4_NL }

// embedTokens writes the token embeddings of every segment's tokens into
// their rows of x ([rows][d]), dequantizing just those rows.
func (p *pass) embedTokens(x []float32, d int) {
	for _, sg := range p.segs {
		for t, tok := range sg.tokens {
			r := sg.r0 + t
			p.m.w.TokEmbd.embedRow(int(tok), x[r*d:(r+1)*d])
		}
	}
}

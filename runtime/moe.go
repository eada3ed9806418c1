package runtime

// The mixture-of-experts feed-forward (qwen3moe, Mixtral-style llama), as
// llama.cpp's build_moe_ffn computes it with softmax gating:
//
//	p = softmax(GateInp h)                        over all NExpert experts
//	sel = the NExpertUsed experts of largest p, in descending order
//	w_k = p[sel_k] / max(sum_k p[sel_k], 2^-14)   (renormalized; then * scale)
//	out = sum_k w_k * Down_k(silu(Gate_k h) * Up_k h)   added in the order of sel
//
// Only the chosen experts' rows are read. The (token, expert) pairs of a
// batch are sorted by expert, so each expert's matrices are multiplied once
// by all the tokens routed to it (one weight pass per expert per batch, as
// ggml's mul_mat_id does); every row product is the same dot product as for
// one token alone, so a token's result does not depend on its batch.

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/woolly-llm/woolly/kernels"
)

// moeState is the scratch of the expert FFN for up to nBatch tokens; with
// K = NExpertUsed, rows are (token, slot) pairs in expert order.
type moeState struct {
	logits []float32 // router output, then probabilities [nBatch][NExpert]
	sel    []int32   // chosen experts [nBatch][K], descending probability
	w      []float32 // their weights [nBatch][K]
	order  []int32   // sorted row j -> t*K + slot
	pos    []int32   // t*K + slot -> sorted row j
	first  []int     // expert e's rows are [first[e], first[e+1]) [NExpert+1]
	next   []int     // per expert, rows placed so far (sortRows) [NExpert]
	tasks  []expertChunk
	gate   []float32 // [nBatch*K][NFFExp]: gate rows, then act(gate)*up
	up     []float32 // [nBatch*K][NFFExp]
	down   []float32 // [nBatch*K][NEmbd]
	act    []byte    // activations of h gathered in row order
	act2   []byte    // activations of act(gate)*up
}

func newMoEState(c *Config, nBatch int) *moeState {
	rows := nBatch * c.NExpertUsed
	return &moeState{
		logits: make([]float32, nBatch*c.NExpert),
		sel:    make([]int32, rows),
		w:      make([]float32, rows),
		order:  make([]int32, rows),
		pos:    make([]int32, rows),
		first:  make([]int, c.NExpert+1),
		next:   make([]int, c.NExpert),
		gate:   make([]float32, rows*c.NFFExp),
		up:     make([]float32, rows*c.NFFExp),
		down:   make([]float32, rows*c.NEmbd),
	}
}

// route fills sel and w for ntok rows of router logits (softmax over all
// experts, top-K, renormalization), the reference's numerics.
func (ms *moeState) route(c *Config, ntok int) {
	ne, k := c.NExpert, c.NExpertUsed
	for t := 0; t < ntok; t++ {
		p := ms.logits[t*ne : (t+1)*ne]
		kernels.SoftmaxExact(p)
		sel, w := ms.sel[t*k:(t+1)*k], ms.w[t*k:(t+1)*k]
		topK(p, sel) // largest first, the lower id on ties
		for j, e := range sel {
			w[j] = p[e]
		}
		if c.ExpertWeightsNorm {
			sum := 0.0 // ggml_sum_rows: in double, rounded to f32
			for _, v := range w {
				sum += float64(v)
			}
			s := max(float32(sum), 6.103515625e-5)
			for j := range w {
				w[j] /= s
			}
		}
		if sc := c.ExpertWeightsScale; sc != 0 && sc != 1 {
			for j := range w {
				w[j] *= sc
			}
		}
	}
}

// sortRows groups the ntok*K (token, slot) rows by expert, tokens in order.
func (ms *moeState) sortRows(c *Config, ntok int) {
	k := c.NExpertUsed
	clear(ms.first)
	for _, e := range ms.sel[:ntok*k] {
		ms.first[e+1]++
	}
	for e := 0; e < c.NExpert; e++ {
		ms.first[e+1] += ms.first[e]
	}
	next := ms.next
	clear(next)
	for i, e := range ms.sel[:ntok*k] {
		j := ms.first[e] + next[e]
		next[e]++
		ms.order[j] = int32(i)
		ms.pos[i] = int32(j)
	}
}

// expertChunk is one worker task: rows [r0, r1) of expert e's matrix.
type expertChunk struct{ e, r0, r1 int }

// chunks cuts the matrices of the experts that have rows into tasks of about
// equal size, ~8 per worker in all.
func (ms *moeState) chunks(c *Config, rows, nw int) []expertChunk {
	active := 0
	for e := 0; e < c.NExpert; e++ {
		if ms.first[e+1] > ms.first[e] {
			active++
		}
	}
	per := max(16, (rows*active+8*nw-1)/(8*nw))
	per = (per + 15) / 16 * 16
	out := ms.tasks[:0]
	for e := 0; e < c.NExpert; e++ {
		if ms.first[e+1] == ms.first[e] {
			continue
		}
		for r0 := 0; r0 < rows; r0 += per {
			out = append(out, expertChunk{e, r0, min(r0+per, rows)})
		}
	}
	ms.tasks = out
	return out
}

// moe computes the expert FFN of layer l for ntok rows of h ([ntok][NEmbd])
// into out ([ntok][NEmbd]).
func (p *pass) moe(l *Layer, h []float32, ntok int, out []float32) {
	c, ms := p.m.cfg, p.st.moe

	// Router: logits [ntok][NExpert], then the choice of experts.
	if g := &l.GateInp; g.Type == kernels.F32 && g.Pack == (kernels.Packing{}) && ntok >= 2 && g.Rows%4 == 0 && g.Cols%16 == 0 {
		routerTiled(p.m.pool, g, h, ntok, ms.logits[:ntok*c.NExpert])
	} else {
		p.matmul(h, ntok, matOp{&l.GateInp, ms.logits[:ntok*c.NExpert]})
	}
	if l.GateInpB != nil { // gpt-oss: router bias, softmax over the chosen logits
		addRowBias(ms.logits, l.GateInpB, ntok, c.NExpert)
	}
	trace("ffn_moe_logits", -1, ms.logits[:ntok*c.NExpert])
	if c.MoESoftmaxWeight {
		ms.routeSoftmaxWeight(c, ntok)
	} else {
		ms.route(c, ntok)
	}
	trace("ffn_moe_probs", -1, ms.logits[:ntok*c.NExpert])
	trace("ffn_moe_weights_norm", -1, ms.w[:ntok*c.NExpertUsed])
	ms.sortRows(c, ntok)
	p.routedExperts(l, h, ntok, out, gluSiLU)
}

// routedExperts runs the experts chosen in st.moe (routed and sorted) over
// ntok rows of h into out ([ntok][NEmbd]), act being the experts' gated
// activation (gpt-oss: its clamped SwiGLU with biases, whatever act is).
func (p *pass) routedExperts(l *Layer, h []float32, ntok int, out []float32, act gluKind) {
	m, c, st := p.m, p.m.cfg, p.st
	ms := st.moe
	d, ffe, k := c.NEmbd, c.NFFExp, c.NExpertUsed
	nrows := ntok * k

	// Activations of h in expert-sorted row order (each token's row once per slot).
	at := l.ExpGate[0].Type.ActType()
	if l.ExpUp[0].Type.ActType() != at { // refused at load (Weights.checkExperts)
		panic(fmt.Sprintf("%s and %s need different activation types (%v, %v)", l.ExpGate[0].Name, l.ExpUp[0].Name, at, l.ExpUp[0].Type.ActType()))
	}
	rb := mustRowBytes(at, d)
	tokAct := st.act[at]
	if len(tokAct) < ntok*int(rb) {
		tokAct = make([]byte, st.nBatch*int(rb))
		st.act[at] = tokAct
	}
	p.quantizeRows(at, h, d, ntok, tokAct, int(rb))
	if len(ms.act) < nrows*int(rb) {
		ms.act = make([]byte, st.nBatch*k*int(rb))
	}
	for j, i := range ms.order[:nrows] {
		t := int(i) / k
		copy(ms.act[j*int(rb):(j+1)*int(rb)], tokAct[t*int(rb):(t+1)*int(rb)])
	}

	// Gate and up of every chosen expert over its rows, then act(gate)*up.
	var t0 time.Time
	if p.prof != nil {
		t0 = time.Now()
	}
	pl := m.pool
	chunks := ms.chunks(c, ffe, pl.n)
	pl.runChunks(len(chunks), func(wk, ci int) {
		ch := chunks[ci]
		j0, j1 := ms.first[ch.e], ms.first[ch.e+1]
		a := ms.act[j0*int(rb) : j1*int(rb)]
		for _, op := range []struct {
			m   *Mat
			out []float32
		}{{&l.ExpGate[ch.e], ms.gate[j0*ffe : j1*ffe]}, {&l.ExpUp[ch.e], ms.up[j0*ffe : j1*ffe]}} {
			expertProduct(op.m, a, int(rb), j1-j0, op.out, ch.r0, ch.r1)
		}
		if c.SwiGLUOAI { // gpt-oss: per-expert biases and the clamped SwiGLU
			expertBiasGLU(c, l, ch.e, ms.gate[j0*ffe:j1*ffe], ms.up[j0*ffe:j1*ffe], j1-j0, ch.r0, ch.r1)
			return
		}
		act.apply(ms.gate[j0*ffe:j1*ffe], ms.up[j0*ffe:j1*ffe], j1-j0, ffe, ch.r0, ch.r1)
	})

	if p.prof != nil {
		p.prof.addMatmul([]matOp{{m: &l.ExpGate[0]}, {m: &l.ExpUp[0]}}, time.Since(t0))
	}

	// Down projections: the activations of act(gate)*up per row, then each
	// expert's down matrix over its rows.
	at2 := l.ExpDown[0].Type.ActType()
	rb2 := mustRowBytes(at2, ffe)
	if len(ms.act2) < nrows*int(rb2) {
		ms.act2 = make([]byte, st.nBatch*k*int(rb2))
	}
	p.quantizeRows(at2, ms.gate[:nrows*ffe], ffe, nrows, ms.act2, int(rb2))
	if p.prof != nil {
		t0 = time.Now()
	}
	chunks = ms.chunks(c, d, pl.n)
	pl.runChunks(len(chunks), func(wk, ci int) {
		ch := chunks[ci]
		j0, j1 := ms.first[ch.e], ms.first[ch.e+1]
		expertProduct(&l.ExpDown[ch.e], ms.act2[j0*int(rb2):j1*int(rb2)], int(rb2), j1-j0, ms.down[j0*d:j1*d], ch.r0, ch.r1)
		if l.ExpDownB != nil { // gpt-oss: the down projection's bias
			b := l.ExpDownB[ch.e*d : (ch.e+1)*d]
			for j := j0; j < j1; j++ {
				row := ms.down[j*d : (j+1)*d]
				for r := ch.r0; r < ch.r1; r++ {
					row[r] += b[r]
				}
			}
		}
	})
	if p.prof != nil {
		p.prof.addMatmul([]matOp{{m: &l.ExpDown[0]}}, time.Since(t0))
	}

	// out[t] = sum over slots, in order, of w * down row (each product
	// rounded, then added: the reference's mul and adds).
	for t := 0; t < ntok; t++ {
		o := out[t*d : (t+1)*d]
		for slot := 0; slot < k; slot++ {
			w := ms.w[t*k+slot]
			j := int(ms.pos[t*k+slot])
			row := ms.down[j*d : (j+1)*d]
			if slot == 0 {
				for i, v := range row {
					o[i] = v * w
				}
				continue
			}
			for i, v := range row {
				o[i] += float32(v * w) // explicit rounding: never fused into an FMA
			}
		}
	}
}

// expertProduct computes rows [r0, r1) of mt times ntok activation rows a
// (rb bytes each) into y ([ntok][mt.Rows]).
func expertProduct(mt *Mat, a []byte, rb, ntok int, y []float32, r0, r1 int) {
	matProduct(mt, a, rb, ntok, y, r0, r1)
}

// routerTiled sets out[t][r] = dot(row r of the F32 matrix g, h[t]) in the
// order of the reference build's product of two F32 matrices whose rows
// are a multiple of 4 and columns of 16, for two or more rows of h
// (llamafile's tiled sgemm, AVX-512; one row goes through vec_dot_f32):
// per output one 16-lane accumulator, a fused multiply-add per lane over
// the row's 16-element chunks in order, then the lanes summed l+8, l+4,
// l+2, l+1. Other F32 products use vec_dot_f32's order (the kernels).
// The tokens are spread over the pool's workers (each output is computed
// whole by one worker, so the bits do not depend on the split).
func routerTiled(pl *pool, g *Mat, h []float32, ntok int, out []float32) {
	n := g.Cols
	w := unsafe.Slice((*float32)(unsafe.Pointer(&g.Data[0])), g.Rows*n)
	pl.runChunks(ntok, func(_, t int) {
		x := h[t*n : (t+1)*n]
		for r := 0; r < g.Rows; r++ {
			wr := w[r*n : (r+1)*n]
			var acc [16]float32
			for i := 0; i < n; i += 16 {
				for l := range 16 {
					acc[l] = fmaf(wr[i+l], x[i+l], acc[l])
				}
			}
			for s := 8; s >= 1; s /= 2 {
				for l := 0; l < s; l++ {
					acc[l] += acc[l+s]
				}
			}
			out[t*g.Rows+r] = acc[0]
		}
	})
}

package runtime

import (
	"unsafe"

	"github.com/woolly-llm/woolly/kernels"
)

// Attention over the f16 KV cache of a layer, reproducing the reference's CPU
// flash attention: below 64 query rows (or with a head size that is not a
// multiple of 16) Q is rounded to f16 and V is accumulated in f16 with an
// online softmax (kernels.AttentionF16Acc); otherwise positions go in tiles
// of 64 in f32 (kernels.AttentionTiled). Both read the cache in place. The
// Go transcriptions they were checked against are in attention_test.go.

// attnScratch is the per-worker attention scratch (floats): the largest
// need of the kernels a layer may call.
func attnScratch(c *Config) int {
	return max(kernels.AttentionF16AccScratch(c.HeadDim), kernels.AttentionTiledScratch(c.HeadDim),
		kernels.AttentionKVQScratch(c.HeadDim))
}

// attention computes att = causal attention of the ntok query rows q
// (positions pos0..) over layer li's cache, whose rows pos0..pos0+ntok-1
// are already written; f16path tells which of the reference's paths applies
// (the caller has rounded q to f16 for it). Query heads are split across
// the workers, one kernel call per chunk of heads.
func (s *Session) attention(ps *pass, li, ntok, pos0 int, f16path bool, q, att []float32) {
	m, c, st := s.model, s.model.cfg, ps.st
	qd, kvd := c.QDim(), c.KVDim()
	p := kernels.AttnF16Params{
		NTok: ntok, Pos0: pos0, NHead: c.NHead, NHeadKV: c.NHeadKV, HeadDim: c.HeadDim,
		Q: q, QStride: qd, K: halfs(s.kcache[li]), V: halfs(s.vcache[li]), KVStride: kvd,
		Scale: c.KQScale, Out: att, OutStride: qd, SoftCap: c.AttnSoftCap,
	}
	if c.AttnSinks { // gpt-oss: a learned logit per head in every softmax
		p.Sinks = m.w.Layers[li].Sinks
	}
	if c.SWALayers != nil && c.SWALayers[li] {
		p.Window = c.SlidingWindow // the cache keeps every position; the window masks
	}
	if m.kvQuant() {
		s.attentionKVQ(ps, li, &p)
		return
	}
	// Heads go in chunks, about four per worker, claimed dynamically like
	// the rows of a matrix product: a worker that starts late leaves its
	// heads to the others.
	hp := max(1, (c.NHead+4*m.pool.n-1)/(4*m.pool.n))
	m.pool.runChunks((c.NHead+hp-1)/hp, func(wk, ch int) {
		h0, h1 := ch*hp, min((ch+1)*hp, c.NHead)
		switch {
		case f16path:
			kernels.AttentionF16Acc(&p, h0, h1, st.scr[wk])
		default:
			kernels.AttentionTiled(&p, h0, h1, st.scr[wk])
		}
	})
}

// attentionKVQ is attention over a quantized cache (kernels.AttentionKVQ),
// heads split across the workers as in attention.
func (s *Session) attentionKVQ(ps *pass, li int, a *kernels.AttnF16Params) {
	m, st := s.model, ps.st
	kb, vb := m.kvRows()
	p := kernels.AttnKVQParams{
		NTok: a.NTok, Pos0: a.Pos0, NHead: a.NHead, NHeadKV: a.NHeadKV, HeadDim: a.HeadDim,
		Q: a.Q, QStride: a.QStride, KType: m.kvK, VType: m.kvV, K: s.kcache[li], V: s.vcache[li],
		KStride: kb, VStride: vb, Scale: a.Scale, Out: a.Out, OutStride: a.OutStride, Window: a.Window, SoftCap: a.SoftCap,
	}
	nh := a.NHead // gemma4: this layer's head count
	hp := max(1, (nh+4*m.pool.n-1)/(4*m.pool.n))
	m.pool.runChunks((nh+hp-1)/hp, func(wk, ch int) {
		h0, h1 := ch*hp, min((ch+1)*hp, nh)
		kernels.AttentionKVQ(&p, h0, h1, st.scr[wk])
	})
}

// halfs views the bytes of an f16 cache as its f16 values (a cache's
// buffers are allocated by make, aligned for them).
func halfs(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// halfBytes views f16 values as their little-endian bytes.
func halfBytes(h []uint16) []byte {
	if len(h) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(h))
}

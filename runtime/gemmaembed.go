package runtime

// EmbeddingGemma (general.architecture "gemma-embedding"), as llama.cpp's
// gemma-embedding graph computes it: Gemma 3's blocks (RMSNorm, q/k norms,
// NeoX RoPE with a second base on the sliding-window layers, q scaled by
// 1/sqrt(head_dim), GeGLU, post-norms) with bidirectional attention; the
// sliding-window layers see the positions within window/2 on either side.
// After the final norm and pooling, the optional sentence-transformers
// projections: dense_2 (+ bias) then dense_3.

import (
	"errors"
	"fmt"
	"math"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// gemmaLayer is one EmbeddingGemma block.
type gemmaLayer struct {
	attnNorm, qNorm, kNorm, postAttn, ffnNorm, postFFN []float32
	wq, wk, wv, wo, wgate, wup, wdown                  Mat
}

// gemmaEnc holds an EmbeddingGemma model's weights and attention layout.
type gemmaEnc struct {
	layers  []gemmaLayer
	outNorm []float32
	swa     []bool // sliding-window layers
	window  int    // attention.sliding_window: the window's full width
	qScale  float32
	baseSWA float32
	dense2  Mat // dense_2 (Rows 0: none)
	dense2B []float32
	dense3  Mat // dense_3 (Rows 0: none)
}

// gemmaEmbedConfig reads EmbeddingGemma's hyperparameters with llama.cpp's
// defaults; the model is never causal.
func gemmaEmbedConfig(f *loader.File) (*Config, *gemmaEnc, error) {
	const arch = "gemma-embedding"
	c := &Config{Arch: arch, RopeNeox: true, RopeFreqScale: 1, RopeAttnFactor: 1,
		EmbeddingScale: 1, ResidualScale: 1, LogitScale: 1, KQScale: 1}
	get := func(key string, def int) (int, error) {
		if _, present := f.Get(arch + "." + key); !present {
			if def < 0 {
				return 0, fmt.Errorf("key %s.%s is missing", arch, key)
			}
			return def, nil
		}
		v, ok := f.Uint(arch + "." + key)
		if !ok || v == 0 || v > 1<<24 {
			return 0, fmt.Errorf("key %s.%s is not a positive integer", arch, key)
		}
		return int(v), nil
	}
	required := func(key string) (int, error) { return get(key, -1) }
	err := readInts(required, intKey{"embedding_length", &c.NEmbd}, intKey{"block_count", &c.NLayer},
		intKey{"attention.head_count", &c.NHead}, intKey{"feed_forward_length", &c.NFF},
		intKey{"context_length", &c.NCtxTrain})
	if err != nil {
		return nil, nil, err
	}
	if c.NHeadKV, err = get("attention.head_count_kv", c.NHead); err != nil {
		return nil, nil, err
	}
	if c.NHead%c.NHeadKV != 0 {
		return nil, nil, fmt.Errorf("key %s.attention.head_count %d is not a multiple of head_count_kv %d", arch, c.NHead, c.NHeadKV)
	}
	if c.NEmbd%c.NHead != 0 {
		if _, ok := f.Get(arch + ".attention.key_length"); !ok {
			return nil, nil, fmt.Errorf("key %s.attention.key_length is missing and embedding_length %d is not a multiple of head_count %d", arch, c.NEmbd, c.NHead)
		}
	}
	if c.HeadDim, err = get("attention.key_length", c.NEmbd/c.NHead); err != nil {
		return nil, nil, err
	}
	vlen, err := get("attention.value_length", c.HeadDim)
	if err != nil {
		return nil, nil, err
	}
	if vlen != c.HeadDim {
		return nil, nil, fmt.Errorf("key %s.attention.value_length %d differs from key_length %d (unsupported)", arch, vlen, c.HeadDim)
	}
	if c.NRot, err = get("rope.dimension_count", c.HeadDim); err != nil {
		return nil, nil, err
	}
	if c.NRot > c.HeadDim || c.NRot%2 != 0 {
		return nil, nil, fmt.Errorf("key %s.rope.dimension_count %d is invalid for head size %d", arch, c.NRot, c.HeadDim)
	}
	float := func(key string, def float64) (float32, error) {
		v, ok := f.Float(arch + "." + key)
		if !ok {
			if _, present := f.Get(arch + "." + key); present || def < 0 {
				return 0, fmt.Errorf("key %s.%s is missing or not a number", arch, key)
			}
			v = def
		}
		if !(v >= 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("key %s.%s %v is invalid", arch, key, v)
		}
		return float32(v), nil
	}
	if err := noRopeScaling(f, arch); err != nil {
		return nil, nil, err
	}
	if c.RopeBase, err = float("rope.freq_base", 10000); err != nil {
		return nil, nil, err
	}
	g := &gemmaEnc{}
	if g.baseSWA, err = float("rope.freq_base_swa", float64(c.RopeBase)); err != nil {
		return nil, nil, err
	}
	if c.RopeBase == 0 || g.baseSWA == 0 {
		return nil, nil, fmt.Errorf("key %s.rope.freq_base %v / rope.freq_base_swa %v must be positive", arch, c.RopeBase, g.baseSWA)
	}
	if c.Eps, err = float("attention.layer_norm_rms_epsilon", -1); err != nil {
		return nil, nil, err
	}
	if g.window, err = get("attention.sliding_window", -1); err != nil {
		return nil, nil, err
	}
	if g.swa, err = c.swaPattern(f, 6); err != nil {
		return nil, nil, err
	}
	c.SWALayers, c.SlidingWindow, c.RopeBaseSWA, c.RopeFreqScaleSWA = g.swa, g.window, g.baseSWA, 1
	g.qScale = 1 / float32(math.Sqrt(float64(float32(c.HeadDim))))
	c.QScale = g.qScale
	c.EmbeddingScale = float32(math.Sqrt(float64(c.NEmbd)))
	if c.Pooling, err = poolingFromGGUF(f, arch); err != nil {
		return nil, nil, err
	}
	return c, g, nil
}

// gemmaEmbedWeights binds EmbeddingGemma's tensors.
func gemmaEmbedWeights(f *loader.File, c *Config, g *gemmaEnc) (Mat, error) {
	d, qd, kvd, ff, hd := c.NEmbd, c.QDim(), c.KVDim(), c.NFF, c.HeadDim
	w, err := WeightsFromGGUFShapes(f, c)
	if err != nil {
		return Mat{}, err
	}
	has := w.has
	g.layers = make([]gemmaLayer, c.NLayer)
	for il := range g.layers {
		l := &g.layers[il]
		p := fmt.Sprintf("blk.%d.", il)
		steps := []func() error{
			func() (e error) { l.attnNorm, e = w.vec(p+"attn_norm.weight", d); return },
			func() (e error) { l.wq, e = w.mat(p+"attn_q.weight", d, qd); return },
			func() (e error) { l.wk, e = w.mat(p+"attn_k.weight", d, kvd); return },
			func() (e error) { l.wv, e = w.mat(p+"attn_v.weight", d, kvd); return },
			func() (e error) { l.wo, e = w.mat(p+"attn_output.weight", qd, d); return },
			func() (e error) { l.postAttn, e = w.vec(p+"post_attention_norm.weight", d); return },
			func() (e error) { l.qNorm, e = w.vec(p+"attn_q_norm.weight", hd); return },
			func() (e error) { l.kNorm, e = w.vec(p+"attn_k_norm.weight", hd); return },
			func() (e error) { l.ffnNorm, e = w.vec(p+"ffn_norm.weight", d); return },
			func() (e error) { l.wgate, e = w.mat(p+"ffn_gate.weight", d, ff); return },
			func() (e error) { l.wup, e = w.mat(p+"ffn_up.weight", d, ff); return },
			func() (e error) { l.wdown, e = w.mat(p+"ffn_down.weight", ff, d); return },
			func() (e error) { l.postFFN, e = w.vec(p+"post_ffw_norm.weight", d); return },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return Mat{}, err
			}
		}
	}
	if g.outNorm, err = w.vec("output_norm.weight", d); err != nil {
		return Mat{}, err
	}
	// dense_2: [n_embd -> dense_2_feat_out], dense_3: [dense_3_feat_in -> n_embd].
	if has("dense_2.weight") {
		ti, _ := f.Tensor("dense_2.weight")
		if len(ti.Shape) != 2 || ti.Shape[0] != int64(d) || ti.Shape[1] < 1 || ti.Shape[1] > 1<<20 {
			return Mat{}, fmt.Errorf("tensor dense_2.weight has shape %v, want [%d n_out]", ti.Shape, d)
		}
		if g.dense2, err = w.mat("dense_2.weight", d, int(ti.Shape[1])); err != nil {
			return Mat{}, err
		}
		if has("dense_2.bias") {
			if g.dense2B, err = w.vec("dense_2.bias", g.dense2.Rows); err != nil {
				return Mat{}, err
			}
		}
	}
	if has("dense_3.weight") {
		in := d
		if g.dense2.Rows > 0 {
			in = g.dense2.Rows
		}
		if g.dense3, err = w.mat("dense_3.weight", in, d); err != nil {
			return Mat{}, err
		}
	}
	return w.mat("token_embd.weight", d, c.NVocab)
}

// WeightsFromGGUFShapes reads the vocabulary size from token_embd.weight
// into c and returns a binder for the other tensors.
func WeightsFromGGUFShapes(f *loader.File, c *Config) (binder, error) {
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return binder{}, errors.New("tensor token_embd.weight is missing")
	}
	if len(ti.Shape) != 2 || ti.Shape[0] != int64(c.NEmbd) || ti.Shape[1] <= 0 || ti.Shape[1] > 1<<31 {
		return binder{}, fmt.Errorf("tensor token_embd.weight has shape %v, want [%d n_vocab]", ti.Shape, c.NEmbd)
	}
	c.NVocab = int(ti.Shape[1])
	return binder{f, c.dims}, nil
}

// encodeGemma evaluates one input through EmbeddingGemma and returns the
// final-normed hidden states [n][NEmbd].
func (m *Model) encodeGemma(p *pass, tokens []int32) []float32 {
	c, e, g := m.cfg, m.enc, m.enc.gemma
	n := len(tokens)
	d, qd, kvd, ff, half := c.NEmbd, c.QDim(), c.KVDim(), c.NFF, c.NRot/2
	x := make([]float32, n*d)
	for t, tok := range tokens {
		e.tok.embedRow(int(tok), x[t*d:(t+1)*d])
	}
	kernels.Scale(x, c.EmbeddingScale)
	cos, sin := make([]float32, n*half), make([]float32, n*half)
	cosW, sinW := make([]float32, n*half), make([]float32, n*half)
	ropeTables(c, c.RopeBase, 1, nil, 0, n, cos, sin)
	ropeTables(c, g.baseSWA, 1, nil, 0, n, cosW, sinW)
	xb, h := make([]float32, n*d), make([]float32, n*d)
	q, k, v, att := make([]float32, n*qd), make([]float32, n*kvd), make([]float32, n*kvd), make([]float32, n*qd)
	qh, kh, vh := make([]uint16, n*qd), make([]uint16, n*kvd), make([]uint16, n*kvd)
	gate, up := make([]float32, n*ff), make([]float32, n*ff)
	f16path := n < 64 || c.HeadDim%16 != 0
	for il := range g.layers {
		l := &g.layers[il]
		kernels.RMSNormRows(xb, x, l.attnNorm, n, d, c.Eps)
		p.matmul(xb, n, matOp{&l.wq, q}, matOp{&l.wk, k}, matOp{&l.wv, v})
		cs, sn := cos, sin
		win := 0
		if g.swa[il] {
			cs, sn, win = cosW, sinW, g.window
		}
		kernels.RMSNormRows(q, q, l.qNorm, n*c.NHead, c.HeadDim, c.Eps)
		kernels.RMSNormRows(k, k, l.kNorm, n*c.NHeadKV, c.HeadDim, c.Eps)
		kernels.RoPERows(q, n, c.NHead, c.HeadDim, c.NRot, cs, sn, true)
		kernels.RoPERows(k, n, c.NHeadKV, c.HeadDim, c.NRot, cs, sn, true)
		kernels.Scale(q, g.qScale)
		m.encAttentionWindow(p, n, f16path, win, q, k, v, qh, kh, vh, att)
		p.matmul(att, n, matOp{&l.wo, h})
		kernels.RMSNormRows(h, h, l.postAttn, n, d, c.Eps)
		kernels.Add(x, x, h)
		kernels.RMSNormRows(xb, x, l.ffnNorm, n, d, c.Eps)
		fused := p.matmulOps(xb, n, gluGELU, matOp{&l.wgate, gate}, matOp{&l.wup, up})
		if !fused {
			gluGELU.apply(gate, up, n, ff, 0, ff)
		}
		p.matmul(gate, n, matOp{&l.wdown, h})
		kernels.RMSNormRows(h, h, l.postFFN, n, d, c.Eps)
		kernels.Add(x, h, x)
	}
	kernels.RMSNormRows(x, x, g.outNorm, n, d, c.Eps)
	return x
}

// denseOut applies EmbeddingGemma's projections to a pooled (or per-token)
// embedding: dense_2 (+ bias), then dense_3.
func (m *Model) denseOut(v []float32) []float32 {
	g := m.enc.gemma
	if g == nil || (g.dense2.Rows == 0 && g.dense3.Rows == 0) {
		return v
	}
	p := m.rowPass()
	return p.denseRow(p.denseRow(v, &g.dense2, g.dense2B), &g.dense3, nil)
}

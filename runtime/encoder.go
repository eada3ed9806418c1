package runtime

// Encoder embedding models: BERT (general.architecture "bert") and
// nomic-embed ("nomic-bert"), as llama.cpp's bert graph computes them. An
// input is evaluated whole, every token attending to every other (no causal
// mask unless {arch}.attention.causal says so), with no KV cache:
//
//	x = tok_embd[t] + token_types[0] + position_embd[pos]   (nomic-bert: no position_embd)
//	x = LayerNorm(x) * token_embd_norm + bias
//	for each layer:
//	    q, k, v = Wq x + bq, Wk x + bk, Wv x + bv          (or one fused attn_qkv)
//	    [rope(q), rope(k)]                                 (nomic-bert: NeoX RoPE)
//	    a = Wo attention(q, k, v) + bo                     (K, V rounded to f16 as the reference)
//	    x = LayerNorm(a + x) * attn_output_norm + bias
//	    f = Wdown gelu(Wup x + bup) + bdown                (nomic-bert: Wdown (silu(Wgate x) * Wup x))
//	    x = LayerNorm(f + x) * layer_output_norm + bias
//	embedding = pool(x)                                    (mean, cls, last, none; rank: the classifier head)
//
// The model is embedding-only: sessions (generation, logits, perplexity)
// are refused with ErrEmbeddingOnly.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// ErrEmbeddingOnly is the error of NewSession (and so of generation,
// logits and perplexity) on an encoder embedding model.
var ErrEmbeddingOnly = errors.New("this is an embedding model (encoder): it computes embeddings (Embed, /api/embed, /v1/embeddings), not text")

// isEncoderArch reports whether arch is an encoder Woolly runs through encoder.go.
func isEncoderArch(arch string) bool {
	return arch == "bert" || arch == "nomic-bert" || arch == "gemma-embedding"
}

// IsEncoderArchitecture reports whether general.architecture arch is an
// encoder embedding model (bert, nomic-bert, gemma-embedding): loadable,
// embedding-only.
func IsEncoderArchitecture(arch string) bool { return isEncoderArch(arch) }

// IsEmbeddingOnly reports whether the model computes embeddings only
// (an encoder such as BERT); its NewSession fails with ErrEmbeddingOnly.
func (m *Model) IsEmbeddingOnly() bool { return m.enc != nil }

// encLayer is one encoder block.
type encLayer struct {
	wq, wk, wv, wqkv    Mat       // wqkv: fused (Rows 3*NEmbd), else wq/wk/wv
	bq, bk, bv          []float32 // nil: none
	wo                  Mat
	bo                  []float32
	attnNorm, attnNormB []float32
	wup, wgate, wdown   Mat // wgate: nomic-bert's SwiGLU (Rows 0: GELU)
	bup, bdown          []float32
	outNorm, outNormB   []float32
}

// encoder holds an encoder model's weights and features.
type encoder struct {
	nomic  bool // RoPE, SwiGLU
	causal bool // {arch}.attention.causal
	tok    Mat
	pos    Mat       // position_embd (bert; Rows = context_length)
	type0  []float32 // row 0 of token_types (nil: none)
	embN   []float32
	embNB  []float32
	layers []encLayer
	// the classification head (rank pooling): cls/cls.bias then tanh, then
	// cls.output/cls.output.bias; either may be absent.
	cls, clsOut   Mat
	clsB, clsOutB []float32
	nCls          int // classifier.output_labels (0: none)
	// EmbeddingGemma's blocks (gemmaembed.go; nil for the BERTs).
	gemma *gemmaEnc
}

// encoderConfig reads the hyperparameters of an encoder as llama.cpp does.
func encoderConfig(f *loader.File, arch string) (*Config, bool, error) {
	c := &Config{Arch: arch, RopeNeox: true, RopeFreqScale: 1, RopeAttnFactor: 1,
		EmbeddingScale: 1, ResidualScale: 1, LogitScale: 1}
	req := requiredInt(f, arch, 1<<24)
	if err := readInts(req, intKey{"embedding_length", &c.NEmbd}, intKey{"block_count", &c.NLayer},
		intKey{"attention.head_count", &c.NHead}, intKey{"feed_forward_length", &c.NFF},
		intKey{"context_length", &c.NCtxTrain}); err != nil {
		return nil, false, err
	}
	c.NHeadKV = c.NHead
	if _, ok := f.Get(arch + ".attention.head_count_kv"); ok {
		if err := readInts(req, intKey{"attention.head_count_kv", &c.NHeadKV}); err != nil {
			return nil, false, err
		}
	}
	if c.NEmbd%c.NHead != 0 || c.NHead%c.NHeadKV != 0 {
		return nil, false, fmt.Errorf("%s.embedding_length %d, attention.head_count %d and head_count_kv %d do not divide", arch, c.NEmbd, c.NHead, c.NHeadKV)
	}
	c.HeadDim = c.NEmbd / c.NHead
	c.NRot = c.HeadDim
	if _, ok := f.Get(arch + ".rope.dimension_count"); ok {
		if err := readInts(req, intKey{"rope.dimension_count", &c.NRot}); err != nil {
			return nil, false, err
		}
		if c.NRot > c.HeadDim || c.NRot%2 != 0 {
			return nil, false, fmt.Errorf("key %s.rope.dimension_count %d is invalid for head size %d", arch, c.NRot, c.HeadDim)
		}
	}
	c.RopeBase = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeBase = float32(v)
	}
	if !(c.RopeBase > 0) || math.IsInf(float64(c.RopeBase), 0) {
		return nil, false, fmt.Errorf("key %s.rope.freq_base %v is invalid", arch, c.RopeBase)
	}
	if err := noRopeScaling(f, arch); err != nil {
		return nil, false, err
	}
	eps, ok := f.Float(arch + ".attention.layer_norm_epsilon")
	if !ok {
		return nil, false, fmt.Errorf("key %s.attention.layer_norm_epsilon is missing (required for %s)", arch, arch)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, false, fmt.Errorf("key %s.attention.layer_norm_epsilon %v is invalid", arch, eps)
	}
	c.Eps = float32(eps)
	c.KQScale = 1 / float32(math.Sqrt(float64(c.HeadDim)))
	causal := true // llama.cpp's default when the key is absent
	if _, present := f.Get(arch + ".attention.causal"); present {
		b, ok := f.Bool(arch + ".attention.causal")
		if !ok {
			return nil, false, fmt.Errorf("key %s.attention.causal is not a boolean", arch)
		}
		causal = b
	}
	if n, ok := f.Uint(arch + ".moe_every_n_layers"); ok && n > 0 {
		return nil, false, fmt.Errorf("key %s.moe_every_n_layers is %d: mixture-of-experts encoders (nomic-bert-moe) are not supported", arch, n)
	}
	var err error
	if c.Pooling, err = poolingFromGGUF(f, arch); err != nil {
		return nil, false, err
	}
	return c, causal, nil
}

// newEncoderModel loads an encoder embedding model (isEncoderArch).
func newEncoderModel(f *loader.File, o LoadOptions, arch string) (*Model, error) {
	var cfg *Config
	var enc *encoder
	var err error
	if arch == "gemma-embedding" {
		var g *gemmaEnc
		if cfg, g, err = gemmaEmbedConfig(f); err != nil {
			return nil, err
		}
		enc = &encoder{gemma: g}
		if enc.tok, err = gemmaEmbedWeights(f, cfg, g); err != nil {
			return nil, err
		}
	} else {
		var causal bool
		if cfg, causal, err = encoderConfig(f, arch); err != nil {
			return nil, err
		}
		if ttc, ok := f.Uint("tokenizer.ggml.token_type_count"); !ok || ttc == 0 {
			return nil, fmt.Errorf("key tokenizer.ggml.token_type_count is missing or 0 (%s needs its token type count)", arch)
		}
		if enc, err = encoderWeights(f, cfg); err != nil {
			return nil, err
		}
		enc.causal = causal
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if tok.NumTokens() > cfg.NVocab {
		return nil, fmt.Errorf("vocabulary has %d tokens but token_embd.weight has %d rows", tok.NumTokens(), cfg.NVocab)
	}
	if cfg.Pooling == PoolingRank && enc.cls.Rows == 0 && enc.clsOut.Rows == 0 {
		return nil, fmt.Errorf("key %s.pooling_type is rank, but the file has no classification head (cls.weight, cls.output.weight)", arch)
	}
	threads := o.Threads
	if threads == 0 {
		threads = PhysicalCores()
	}
	m := &Model{file: f, cfg: cfg, w: &Weights{}, tok: tok, enc: enc}
	m.nCtx = o.ContextLength
	if m.nCtx == 0 {
		m.nCtx = min(cfg.NCtxTrain, DefaultMaxContext)
	}
	m.info = ModelInfo{
		Path: f.Path, Architecture: arch, ContextLength: cfg.NCtxTrain,
		NEmbd: cfg.NEmbd, NLayer: cfg.NLayer, NHead: cfg.NHead, NHeadKV: cfg.NHeadKV,
		NVocab: cfg.NVocab, Threads: threads, DefaultCtx: m.nCtx, SizeBytes: f.Size,
	}
	m.info.Name, _ = f.String("general.name")
	m.info.NParams, m.info.FileType = fileParams(f)
	m.pool = newPool(threads)
	return m, nil
}

// encoderWeights binds an encoder's tensors, checking each shape.
func encoderWeights(f *loader.File, c *Config) (*encoder, error) {
	d, ff := c.NEmbd, c.NFF
	kvd := c.KVDim()
	b := binder{f, func() string {
		return fmt.Sprintf("%s.embedding_length %d, feed_forward_length %d", c.Arch, c.NEmbd, c.NFF)
	}}
	mat, vec, has := b.mat, b.vec, b.has
	optVec := func(name string, n int) ([]float32, error) {
		if !has(name) {
			return nil, nil
		}
		return vec(name, n)
	}
	e := &encoder{nomic: c.Arch == "nomic-bert"}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, errors.New("tensor token_embd.weight is missing")
	}
	if len(ti.Shape) != 2 || ti.Shape[0] != int64(d) || ti.Shape[1] <= 0 || ti.Shape[1] > 1<<31 {
		return nil, fmt.Errorf("tensor token_embd.weight has shape %v, want [%d n_vocab]", ti.Shape, d)
	}
	c.NVocab = int(ti.Shape[1])
	var err error
	if e.tok, err = mat("token_embd.weight", d, c.NVocab); err != nil {
		return nil, err
	}
	if !e.nomic {
		if e.pos, err = mat("position_embd.weight", d, c.NCtxTrain); err != nil {
			return nil, err
		}
	}
	if has("token_types.weight") {
		tt, ok := f.Tensor("token_types.weight")
		if !ok || len(tt.Shape) != 2 || tt.Shape[0] != int64(d) || tt.Shape[1] < 1 {
			return nil, fmt.Errorf("tensor token_types.weight has shape %v, want [%d n_token_types]", tt.Shape, d)
		}
		m, err := mat("token_types.weight", d, int(tt.Shape[1]))
		if err != nil {
			return nil, err
		}
		e.type0 = make([]float32, d)
		m.embedRow(0, e.type0)
	}
	if e.embN, err = vec("token_embd_norm.weight", d); err != nil {
		return nil, err
	}
	if e.embNB, err = vec("token_embd_norm.bias", d); err != nil {
		return nil, err
	}
	e.layers = make([]encLayer, c.NLayer)
	for il := range e.layers {
		l := &e.layers[il]
		p := fmt.Sprintf("blk.%d.", il)
		steps := []func() error{}
		if has(p + "attn_qkv.weight") {
			steps = append(steps, func() (err error) { l.wqkv, err = mat(p+"attn_qkv.weight", d, d+2*kvd); return })
			if has(p + "attn_qkv.bias") {
				return nil, fmt.Errorf("tensor %sattn_qkv.bias: biases of a fused attn_qkv are not supported", p)
			}
		} else {
			steps = append(steps,
				func() (err error) { l.wq, err = mat(p+"attn_q.weight", d, d); return },
				func() (err error) { l.wk, err = mat(p+"attn_k.weight", d, kvd); return },
				func() (err error) { l.wv, err = mat(p+"attn_v.weight", d, kvd); return },
				func() (err error) { l.bq, err = optVec(p+"attn_q.bias", d); return },
				func() (err error) { l.bk, err = optVec(p+"attn_k.bias", kvd); return },
				func() (err error) { l.bv, err = optVec(p+"attn_v.bias", kvd); return })
		}
		steps = append(steps,
			func() (err error) { l.wo, err = mat(p+"attn_output.weight", d, d); return },
			func() (err error) { l.bo, err = optVec(p+"attn_output.bias", d); return },
			func() (err error) { l.attnNorm, err = vec(p+"attn_output_norm.weight", d); return },
			func() (err error) { l.attnNormB, err = vec(p+"attn_output_norm.bias", d); return },
			func() (err error) { l.wup, err = mat(p+"ffn_up.weight", d, ff); return },
			func() (err error) { l.bup, err = optVec(p+"ffn_up.bias", ff); return },
			func() (err error) { l.wdown, err = mat(p+"ffn_down.weight", ff, d); return },
			func() (err error) { l.bdown, err = optVec(p+"ffn_down.bias", d); return },
			func() (err error) { l.outNorm, err = vec(p+"layer_output_norm.weight", d); return },
			func() (err error) { l.outNormB, err = vec(p+"layer_output_norm.bias", d); return })
		if e.nomic {
			steps = append(steps, func() (err error) { l.wgate, err = mat(p+"ffn_gate.weight", d, ff); return })
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
	}
	// The classification head of rerankers (bert only, as llama.cpp).
	if !e.nomic {
		if labels, ok := f.Strings(c.Arch + ".classifier.output_labels"); ok {
			e.nCls = len(labels)
		}
		if has("cls.weight") {
			if e.cls, err = mat("cls.weight", d, d); err != nil {
				return nil, err
			}
			if e.clsB, err = optVec("cls.bias", d); err != nil {
				return nil, err
			}
		}
		if has("cls.output.weight") {
			if e.nCls == 0 {
				return nil, fmt.Errorf("tensor cls.output.weight is present but key %s.classifier.output_labels is missing", c.Arch)
			}
			if e.clsOut, err = mat("cls.output.weight", d, e.nCls); err != nil {
				return nil, err
			}
			if e.clsOutB, err = optVec("cls.output.bias", e.nCls); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// layerNorm sets out = (x - mean) / sqrt(var + eps) * w + b, with sums in
// float64 (ggml_norm, then the weight and bias ops).
func layerNorm(out, x, w, b []float32, eps float32) {
	n := len(x)
	sum := 0.0
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum) / float32(n)
	sq := 0.0
	for i, v := range x {
		dv := v - mean
		out[i] = dv
		sq += float64(dv * dv)
	}
	scale := 1 / float32(math.Sqrt(float64(float32(sq/float64(n))+eps)))
	for i := range out {
		out[i] = out[i]*scale*w[i] + b[i]
	}
}

// addNorm is the post-norm residual step of n tokens of d values: x =
// layerNorm(h + x), h left holding the sum.
func addNorm(x, h []float32, n, d int, w, b []float32, eps float32) {
	for t := 0; t < n; t++ {
		hr, xr := h[t*d:(t+1)*d], x[t*d:(t+1)*d]
		kernels.Add(hr, hr, xr)
		layerNorm(xr, hr, w, b, eps)
	}
}

// addBias adds b to each of the ntok rows of x.
func addBias(x, b []float32, ntok int) {
	if b == nil {
		return
	}
	n := len(b)
	for t := 0; t < ntok; t++ {
		row := x[t*n : (t+1)*n]
		for i := range row {
			row[i] += b[i]
		}
	}
}

// encode evaluates tokens (one input) and returns the last layer's hidden
// states [len(tokens)][NEmbd].
func (m *Model) encode(tokens []int32) ([]float32, error) {
	c, e := m.cfg, m.enc
	n := len(tokens)
	d, kvd, ff := c.NEmbd, c.KVDim(), c.NFF
	if n == 0 {
		return nil, errors.New("no tokens to evaluate")
	}
	if !e.nomic && e.gemma == nil && n > c.NCtxTrain {
		return nil, fmt.Errorf("input of %d tokens is longer than the %d positions of position_embd.weight", n, c.NCtxTrain)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= c.NVocab {
			return nil, fmt.Errorf("token id %d out of range [0, %d)", t, c.NVocab)
		}
	}
	if err := m.CheckFile(); err != nil {
		return nil, err
	}
	st := &fwdState{nBatch: n, act: map[kernels.Type][]byte{}, scr: make([][]float32, m.pool.n)}
	for i := range st.scr {
		st.scr[i] = make([]float32, attnScratch(c))
	}
	p := &pass{m: m, st: st, ntok: n, rows: []int{n}}
	if e.gemma != nil {
		return m.encodeGemma(p, tokens), nil
	}
	x := make([]float32, n*d)
	h := make([]float32, n*d)
	tmp := make([]float32, d)
	for t, tok := range tokens {
		row := x[t*d : (t+1)*d]
		e.tok.embedRow(int(tok), row)
		if e.type0 != nil {
			kernels.Add(row, row, e.type0)
		}
		if !e.nomic {
			e.pos.embedRow(t, tmp)
			kernels.Add(row, tmp, row)
		}
		copy(tmp, row)
		layerNorm(row, tmp, e.embN, e.embNB, c.Eps)
	}
	var cos, sin []float32
	if e.nomic {
		half := c.NRot / 2
		cos, sin = make([]float32, n*half), make([]float32, n*half)
		ropeTables(c, c.RopeBase, c.RopeFreqScale, nil, 0, n, cos, sin)
	}
	q, k, v := make([]float32, n*d), make([]float32, n*kvd), make([]float32, n*kvd)
	att := make([]float32, n*d)
	kh, vh, qh := make([]uint16, n*kvd), make([]uint16, n*kvd), make([]uint16, n*d)
	up, gate := make([]float32, n*ff), make([]float32, n*ff)
	var qkv, ones []float32
	f16path := n < 64 || c.HeadDim%16 != 0
	for il := range e.layers {
		l := &e.layers[il]
		if l.wqkv.Rows > 0 {
			if qkv == nil {
				qkv = make([]float32, n*(d+2*kvd))
			}
			p.matmul(x, n, matOp{&l.wqkv, qkv})
			w := d + 2*kvd
			for t := 0; t < n; t++ {
				copy(q[t*d:(t+1)*d], qkv[t*w:])
				copy(k[t*kvd:(t+1)*kvd], qkv[t*w+d:])
				copy(v[t*kvd:(t+1)*kvd], qkv[t*w+d+kvd:])
			}
		} else {
			p.matmul(x, n, matOp{&l.wq, q}, matOp{&l.wk, k}, matOp{&l.wv, v})
		}
		addBias(q, l.bq, n)
		addBias(k, l.bk, n)
		addBias(v, l.bv, n)
		if e.nomic {
			kernels.RoPERows(q, n, c.NHead, c.HeadDim, c.NRot, cos, sin, true)
			kernels.RoPERows(k, n, c.NHeadKV, c.HeadDim, c.NRot, cos, sin, true)
		}
		m.encAttention(p, n, f16path, q, k, v, qh, kh, vh, att)
		p.matmul(att, n, matOp{&l.wo, h})
		addBias(h, l.bo, n)
		addNorm(x, h, n, d, l.attnNorm, l.attnNormB, c.Eps)
		// Feed-forward.
		if l.wgate.Rows > 0 {
			p.matmulOps(x, n, gluNone, matOp{&l.wgate, gate}, matOp{&l.wup, up})
			gluSiLU.apply(gate, up, n, ff, 0, ff)
		} else {
			p.matmul(x, n, matOp{&l.wup, up})
			addBias(up, l.bup, n)
			if ones == nil {
				ones = make([]float32, n*ff)
				for i := range ones {
					ones[i] = 1
				}
			}
			// GELU as llama.cpp's CPU build computes it (the f16 table):
			// GeGLU against a row of ones.
			kernels.GeGLU(up, up, ones, n, ff, 0, ff)
			gate, up = up, gate
		}
		p.matmul(gate, n, matOp{&l.wdown, h})
		addBias(h, l.bdown, n)
		addNorm(x, h, n, d, l.outNorm, l.outNormB, c.Eps)
	}
	return x, nil
}

// encAttention is bidirectional (or, with attention.causal, causal)
// attention of the n rows of q over k and v, with the reference's flash
// attention numerics: K and V (and on the f16 path Q) rounded to f16, then
// the same kernels as the decoder's. Each query row is one kernel call
// whose "position" is the last key it may see, so the causal kernels
// attend to all n keys.
func (m *Model) encAttention(p *pass, n int, f16path bool, q, k, v []float32, qh, kh, vh []uint16, att []float32) {
	m.encAttentionWindow(p, n, f16path, 0, q, k, v, qh, kh, vh, att)
}

// encAttentionWindow is encAttention where window > 0 limits each query
// at position t to the keys within window/2 positions on either side
// (EmbeddingGemma's symmetric sliding window): the kernel is given just
// those keys.
func (m *Model) encAttentionWindow(p *pass, n int, f16path bool, window int, q, k, v []float32, qh, kh, vh []uint16, att []float32) {
	c, st := m.cfg, p.st
	qd, kvd := c.QDim(), c.KVDim()
	kernels.QuantizeAct(kernels.F16, k, halfBytes(kh))
	kernels.QuantizeAct(kernels.F16, v, halfBytes(vh))
	if f16path {
		kernels.QuantizeAct(kernels.F16, q, halfBytes(qh))
		kernels.Dequant(kernels.F16, halfBytes(qh), q)
	}
	causal := m.enc.causal
	// Work items: (query row, chunk of heads).
	hp := max(1, (c.NHead+3)/4)
	nh := (c.NHead + hp - 1) / hp
	m.pool.runChunks(n*nh, func(wk, ch int) {
		t, h0 := ch/nh, (ch%nh)*hp
		h1 := min(h0+hp, c.NHead)
		first, last := 0, n-1
		if causal {
			last = t
		}
		if window > 0 {
			first, last = max(0, t-window/2), min(last, t+window/2)
		}
		a := kernels.AttnF16Params{
			NTok: 1, Pos0: last - first, NHead: c.NHead, NHeadKV: c.NHeadKV, HeadDim: c.HeadDim,
			Q: q[t*qd : (t+1)*qd], QStride: qd, K: kh[first*kvd : (last+1)*kvd], V: vh[first*kvd : (last+1)*kvd], KVStride: kvd,
			Scale: c.KQScale, Out: att[t*qd : (t+1)*qd], OutStride: qd,
		}
		if f16path {
			kernels.AttentionF16Acc(&a, h0, h1, st.scr[wk])
		} else {
			kernels.AttentionTiled(&a, h0, h1, st.scr[wk])
		}
	})
}

// classify runs the classification head on a pooled row (rank pooling):
// tanh(cls · x + b), then cls.output · that + b.
func (m *Model) classify(x []float32) []float32 {
	e := m.enc
	p := m.rowPass()
	cur := append([]float32(nil), x...)
	if e.cls.Rows > 0 {
		cur = p.denseRow(cur, &e.cls, e.clsB)
		for i := range cur {
			cur[i] = kernels.Tanhf(cur[i])
		}
	}
	return p.denseRow(cur, &e.clsOut, e.clsOutB)
}

// rowPass is a pass over a single row (the heads after pooling).
func (m *Model) rowPass() *pass {
	st := &fwdState{nBatch: 1, act: map[kernels.Type][]byte{}}
	return &pass{m: m, st: st, ntok: 1, rows: []int{1}}
}

// denseRow is w · x + b (b nil: no bias) for one row x; x itself when w has
// no rows (the layer is absent).
func (p *pass) denseRow(x []float32, w *Mat, b []float32) []float32 {
	if w.Rows == 0 {
		return x
	}
	out := make([]float32, w.Rows)
	p.matmul(x, 1, matOp{w, out})
	addBias(out, b, 1)
	return out
}

// encoderEmbed is Embed for an encoder model: each input evaluated whole
// (inputs longer than the context are an error or truncated, as for the
// decoders), pooled as asked; rank pooling gives the classifier's scores.
func (m *Model) encoderEmbed(ctx context.Context, o EmbedOptions) (*EmbedResult, error) {
	start := time.Now()
	pool := o.Pooling
	if pool == PoolingDefault {
		pool = m.EmbeddingPooling()
	}
	if pool < PoolingNone || pool > PoolingRank {
		return nil, fmt.Errorf("unknown pooling %d", int(pool))
	}
	if pool == PoolingRank && m.enc.cls.Rows == 0 && m.enc.clsOut.Rows == 0 {
		return nil, errors.New("pooling rank needs a classification head (cls.weight / cls.output.weight), which this model does not have")
	}
	nctx := o.NCtx
	if nctx < 0 {
		return nil, fmt.Errorf("context length %d is negative", nctx)
	}
	if nctx == 0 {
		nctx = m.nCtx
	}
	if !m.enc.nomic && m.enc.gemma == nil && nctx > m.cfg.NCtxTrain {
		nctx = m.cfg.NCtxTrain // learned positions end there
	}
	inputs, err := m.embedInputs(o, nctx)
	if err != nil {
		return nil, err
	}
	res := &EmbedResult{Embeddings: make([]Embedding, len(inputs)), Pooling: pool}
	d := m.cfg.NEmbd
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := len(in.Tokens)
		h, err := m.encode(in.Tokens)
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		e := in
		e.pool(pool, h, n, d)
		if pool == PoolingRank {
			e.Vector = m.classify(h[:d])
		}
		if e.Vector != nil {
			e.Vector = m.denseOut(e.Vector)
		}
		for t, v := range e.TokenVectors {
			e.TokenVectors[t] = m.denseOut(v)
		}
		if o.Normalize && pool != PoolingRank {
			e.normalize()
		}
		res.Embeddings[i] = e
		res.Tokens += n
	}
	res.Duration = time.Since(start)
	return res, nil
}

// noRopeScaling refuses a file that asks for RoPE scaling, which the
// encoders do not implement (rather than ignoring it).
func noRopeScaling(f *loader.File, arch string) error {
	if v, ok := f.String(arch + ".rope.scaling.type"); ok && v != "" && v != "none" {
		return fmt.Errorf("key %s.rope.scaling.type %q: RoPE scaling is not supported for %s", arch, v, arch)
	}
	if v, ok := f.Float(arch + ".rope.scaling.factor"); ok && v != 0 && v != 1 {
		return fmt.Errorf("key %s.rope.scaling.factor %v: RoPE scaling is not supported for %s", arch, v, arch)
	}
	return nil
}

package runtime

import (
	"fmt"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// Mat is a weight matrix that stays in the file mapping: Rows rows of Cols
// elements of Type, RowBytes bytes each, stored one after another in Data.
type Mat struct {
	Name     string
	Type     kernels.Type
	Rows     int
	Cols     int
	RowBytes int
	Data     []byte
	// Pack is how Data is packed (packWeights; zero: rows as in the file).
	Pack kernels.Packing
}

// Layer holds the weights of one transformer block.
type Layer struct {
	AttnNorm   []float32
	Wq, Wk, Wv Mat
	Bq, Bk, Bv []float32 // nil when the architecture has no q/k/v biases
	QNorm      []float32 // per-head RMSNorm weights of q and k [HeadDim] (nil: none)
	KNorm      []float32
	Wo         Mat
	PostAttn   []float32 // post_attention_norm [NEmbd] (nil: none)
	FFNNorm    []float32
	Wgate, Wup Mat
	Wdown      Mat
	PostFFN    []float32 // post_ffw_norm [NEmbd] (nil: none)

	// Mixture of experts (nil Experts: the dense FFN above). Router:
	// GateInp [NExpert rows][NEmbd]; expert e: ExpGate[e], ExpUp[e]
	// [NFFExp rows][NEmbd] and ExpDown[e] [NEmbd rows][NFFExp], views into
	// the 3-D ffn_{gate,up,down}_exps tensors.
	GateInp                 Mat
	ExpGate, ExpUp, ExpDown []Mat

	// Gated DeltaNet layer (qwen35, Config.Recurrent): the q|k|v stream
	// Wqkv [convChannels rows][NEmbd] and its causal convolution ConvW
	// [convChannels][SSMConv]; the output gate Wz [SSMInner rows][NEmbd];
	// per value head the update strength Wbeta and decay input Walpha
	// [SSMVHeads rows][NEmbd], DtBias and A [SSMVHeads] (A = -exp(A_log));
	// SSMNorm [SSMState] the gated RMSNorm of the output; SSMOut
	// [NEmbd rows][SSMInner]. Wq etc. are unused in such a layer.
	// qwen3next has one matrix Wba (ssm_ba) instead of Wbeta and Walpha: per
	// key head g, its value heads' beta rows, then their alpha rows.
	Wqkv, Wz, Wbeta, Walpha, Wba, SSMOut Mat
	ConvW, DtBias, A, SSMNorm            []float32

	// qwen35moe's shared expert: Wgate, Wup, Wdown hold it beside the
	// routed experts, its output scaled by sigmoid(ShexpGate h) (one row).
	ShexpGate Mat

	// gpt-oss (gptoss.go): attention output bias, per-head sink logits, the
	// router's bias and the experts' biases ([NExpert][NFFExp] for gate
	// and up, [NExpert][NEmbd] for down). nil elsewhere.
	Bo, Sinks, GateInpB        []float32
	ExpGateB, ExpUpB, ExpDownB []float32
	G4                         *gemma4Layer // gemma4's own tensors (nil for other archs)
}

// rows returns rows [r0, r1) of m as a matrix of its own (a view).
func (m Mat) rows(name string, r0, r1 int) Mat {
	return Mat{Name: name, Type: m.Type, Rows: r1 - r0, Cols: m.Cols, RowBytes: m.RowBytes,
		Data: m.Data[r0*m.RowBytes : r1*m.RowBytes]}
}

// Weights are all tensors of a model. Matrices point into the mapping; only
// norm weights, biases and rope frequency factors are copied to f32.
type Weights struct {
	TokEmbd   Mat
	Layers    []Layer
	OutNorm   []float32
	Output    Mat       // output.weight, or token_embd.weight when tied
	RopeFreqs []float32 // rope_freqs.weight (nil when absent)
	// Phi-3 LongRoPE frequency factors [NRot/2] (nil when absent): long for
	// contexts above Config.NCtxOrig, short otherwise.
	RopeLong, RopeShort []float32
	G4                  *gemma4Weights // gemma4's per-layer-input tensors (nil for other archs)
}

// WeightsFromGGUF binds the tensors of f to the shapes c expects.
func WeightsFromGGUF(f *loader.File, c *Config) (*Weights, error) {
	if c.G4 != nil {
		return gemma4WeightsFromGGUF(f, c)
	}
	b := binder{f, c.dims}
	mat, vec, experts := b.mat, b.vec, b.experts

	w := &Weights{}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("tensor token_embd.weight is missing")
	}
	if len(ti.Shape) != 2 || ti.Shape[1] <= 0 || ti.Shape[1] > 1<<31 {
		return nil, fmt.Errorf("tensor token_embd.weight has shape %v, want [%d n_vocab] (%s)", ti.Shape, c.NEmbd, c.dims())
	}
	c.NVocab = int(ti.Shape[1])
	var err error
	if w.TokEmbd, err = mat("token_embd.weight", c.NEmbd, c.NVocab); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("output.weight"); ok && c.Arch != "gemma2" { // gemma2 always ties
		if w.Output, err = mat("output.weight", c.NEmbd, c.NVocab); err != nil {
			return nil, err
		}
	} else {
		w.Output = w.TokEmbd
	}
	if w.OutNorm, err = vec("output_norm.weight", c.NEmbd); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		if w.RopeFreqs, err = vec("rope_freqs.weight", c.NRot/2); err != nil {
			return nil, err
		}
	}
	_, hasLong := f.Tensor("rope_factors_long.weight")
	_, hasShort := f.Tensor("rope_factors_short.weight")
	if hasLong || hasShort {
		if w.RopeLong, err = vec("rope_factors_long.weight", c.NRot/2); err != nil {
			return nil, err
		}
		if w.RopeShort, err = vec("rope_factors_short.weight", c.NRot/2); err != nil {
			return nil, err
		}
	}
	qd, kvd := c.QDim(), c.KVDim()
	w.Layers = make([]Layer, c.NLayer)
	for i := range w.Layers {
		l := &w.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		steps := []func() error{
			func() (e error) { l.AttnNorm, e = vec(p+"attn_norm.weight", c.NEmbd); return },
		}
		if c.hasRecurrent() || c.Arch == "gpt-oss" {
			if c.hasRecurrent() {
				steps = append(steps, c.deltaNetSteps(l, i, b)...)
			} else {
				steps = append(steps, c.gptOssSteps(l, i, b)...)
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return nil, err
				}
			}
			continue
		}
		if _, fused := f.Tensor(p + "attn_qkv.weight"); fused {
			// One matrix holds q, k and v one after another (phi3): bind
			// its row ranges, so each product is the same row dot products.
			steps = append(steps, func() error {
				qkv, e := mat(p+"attn_qkv.weight", c.NEmbd, qd+2*kvd)
				if e == nil {
					l.Wq = qkv.rows(p+"attn_qkv.weight[q]", 0, qd)
					l.Wk = qkv.rows(p+"attn_qkv.weight[k]", qd, qd+kvd)
					l.Wv = qkv.rows(p+"attn_qkv.weight[v]", qd+kvd, qd+2*kvd)
				}
				return e
			})
		} else {
			steps = append(steps,
				func() (e error) { l.Wq, e = mat(p+"attn_q.weight", c.NEmbd, qd); return },
				func() (e error) { l.Wk, e = mat(p+"attn_k.weight", c.NEmbd, kvd); return },
				func() (e error) { l.Wv, e = mat(p+"attn_v.weight", c.NEmbd, kvd); return },
			)
		}
		if c.QKNorm {
			steps = append(steps,
				func() (e error) { l.QNorm, e = vec(p+"attn_q_norm.weight", c.HeadDim); return },
				func() (e error) { l.KNorm, e = vec(p+"attn_k_norm.weight", c.HeadDim); return },
			)
		}
		steps = append(steps,
			func() (e error) { l.Wo, e = mat(p+"attn_output.weight", qd, c.NEmbd); return },
			func() (e error) { l.FFNNorm, e = vec(p+"ffn_norm.weight", c.NEmbd); return },
		)
		switch {
		case c.NExpert > 0:
			steps = append(steps,
				func() (e error) { l.GateInp, e = mat(p+"ffn_gate_inp.weight", c.NEmbd, c.NExpert); return },
				func() (e error) {
					l.ExpGate, e = experts(p+"ffn_gate_exps.weight", c.NEmbd, c.NFFExp, c.NExpert)
					return
				},
				func() (e error) { l.ExpUp, e = experts(p+"ffn_up_exps.weight", c.NEmbd, c.NFFExp, c.NExpert); return },
				func() (e error) {
					l.ExpDown, e = experts(p+"ffn_down_exps.weight", c.NFFExp, c.NEmbd, c.NExpert)
					return
				},
			)
		case c.Arch == "phi3":
			// ffn_up holds the gate rows, then the up rows.
			steps = append(steps, func() error {
				up, e := mat(p+"ffn_up.weight", c.NEmbd, 2*c.NFF)
				if e == nil {
					l.Wgate = up.rows(p+"ffn_up.weight[gate]", 0, c.NFF)
					l.Wup = up.rows(p+"ffn_up.weight[up]", c.NFF, 2*c.NFF)
				}
				return e
			})
		default:
			steps = append(steps,
				func() (e error) { l.Wgate, e = mat(p+"ffn_gate.weight", c.NEmbd, c.NFF); return },
				func() (e error) { l.Wup, e = mat(p+"ffn_up.weight", c.NEmbd, c.NFF); return },
			)
		}
		if c.NExpert == 0 {
			steps = append(steps, func() (e error) { l.Wdown, e = mat(p+"ffn_down.weight", c.NFF, c.NEmbd); return })
		}
		if c.PostNorms {
			steps = append(steps,
				func() (e error) { l.PostAttn, e = vec(p+"post_attention_norm.weight", c.NEmbd); return },
				func() (e error) { l.PostFFN, e = vec(p+"post_ffw_norm.weight", c.NEmbd); return },
			)
		}
		if c.Arch == "qwen2" {
			steps = append(steps,
				func() (e error) { l.Bq, e = vec(p+"attn_q.bias", qd); return },
				func() (e error) { l.Bk, e = vec(p+"attn_k.bias", kvd); return },
				func() (e error) { l.Bv, e = vec(p+"attn_v.bias", kvd); return },
			)
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// embedRow dequantizes row tok of m into dst (len m.Cols). Token ids (and
// positions) are checked against the model's when a request is evaluated,
// so one out of range here is a bug, and panics.
func (m *Mat) embedRow(tok int, dst []float32) {
	if tok < 0 || tok >= m.Rows {
		panic(fmt.Sprintf("%s: row %d out of range [0, %d)", m.Name, tok, m.Rows))
	}
	kernels.Dequant(m.Type, m.Data[tok*m.RowBytes:(tok+1)*m.RowBytes], dst)
}

// hasExperts reports whether a layer has a mixture of experts.
// mats lists a layer's dense weight matrices in the order the forward pass
// uses them (a mixture-of-experts layer has no gate/up/down among them).
func (l *Layer) mats() []*Mat {
	var out []*Mat
	for _, m := range []*Mat{&l.Wq, &l.Wk, &l.Wv, &l.Wo, &l.Wqkv, &l.Wz, &l.Wbeta, &l.Walpha, &l.Wba, &l.SSMOut, &l.Wgate, &l.Wup, &l.Wdown} {
		if m.Data != nil {
			out = append(out, m)
		}
	}
	return out
}

// allMats is mats plus the router and every expert's matrices.
func (l *Layer) allMats() []*Mat {
	out := l.mats()
	if l.GateInp.Data != nil {
		out = append(out, &l.GateInp)
	}
	for _, ex := range [][]Mat{l.ExpGate, l.ExpUp, l.ExpDown} {
		for i := range ex {
			out = append(out, &ex[i])
		}
	}
	return out
}

// allLayerMats lists every matrix of every layer (allMats).
func (w *Weights) allLayerMats() []*Mat {
	var out []*Mat
	for i := range w.Layers {
		out = append(out, w.Layers[i].allMats()...)
	}
	return out
}

// checkExperts requires each mixture-of-experts layer's gate and up
// experts to take one activation type: the input rows are quantized once
// for both products.
func (w *Weights) checkExperts() error {
	for i := range w.Layers {
		l := &w.Layers[i]
		if len(l.ExpGate) == 0 || len(l.ExpUp) == 0 {
			continue
		}
		g, u := l.ExpGate[0].Type, l.ExpUp[0].Type
		if g.ActType() != u.ActType() {
			return fmt.Errorf("layer %d: expert gate (%v) and up (%v) matrices take different activation types (%v, %v); Woolly needs one for both",
				i, g, u, g.ActType(), u.ActType())
		}
	}
	return nil
}

// deltaNetSteps bind the tensors of layer il of a Gated DeltaNet hybrid
// (qwen35): a linear-attention or a gated full-attention block, then the
// SwiGLU FFN normed by post_attention_norm (these files have no ffn_norm).
func (c *Config) deltaNetSteps(l *Layer, il int, b binder) []func() error {
	mat, vec, floats, experts := b.mat, b.vec, b.floats, b.experts
	p := fmt.Sprintf("blk.%d.", il)
	d := c.NEmbd
	var steps []func() error
	if c.isRecurrent(il) {
		cc, vh := c.convChannels(), c.SSMVHeads
		steps = append(steps,
			func() (e error) { l.Wqkv, e = mat(p+"attn_qkv.weight", d, cc); return },
			func() (e error) { l.Wz, e = mat(p+"attn_gate.weight", d, c.SSMInner); return },
			func() (e error) { l.ConvW, e = floats(p+"ssm_conv1d.weight", c.SSMConv, cc); return },
			func() (e error) { l.DtBias, e = vec(p+"ssm_dt.bias", vh); return },
			func() (e error) { l.A, e = vec(p+"ssm_a", vh); return },
		)
		if c.DNGroupedHeads {
			steps = append(steps, func() (e error) { l.Wba, e = mat(p+"ssm_ba.weight", d, 2*vh); return })
		} else {
			steps = append(steps,
				func() (e error) { l.Wbeta, e = mat(p+"ssm_beta.weight", d, vh); return },
				func() (e error) { l.Walpha, e = mat(p+"ssm_alpha.weight", d, vh); return })
		}
		steps = append(steps,
			func() (e error) { l.SSMNorm, e = vec(p+"ssm_norm.weight", c.SSMState); return },
			func() (e error) { l.SSMOut, e = mat(p+"ssm_out.weight", c.SSMInner, d); return },
		)
	} else {
		qd, kvd := c.QDim(), c.KVDim()
		steps = append(steps,
			func() (e error) { l.Wq, e = mat(p+"attn_q.weight", d, 2*qd); return }, // q and gate, per head
			func() (e error) { l.Wk, e = mat(p+"attn_k.weight", d, kvd); return },
			func() (e error) { l.Wv, e = mat(p+"attn_v.weight", d, kvd); return },
			func() (e error) { l.QNorm, e = vec(p+"attn_q_norm.weight", c.HeadDim); return },
			func() (e error) { l.KNorm, e = vec(p+"attn_k_norm.weight", c.HeadDim); return },
			func() (e error) { l.Wo, e = mat(p+"attn_output.weight", qd, d); return },
		)
	}
	steps = append(steps, func() (e error) { l.FFNNorm, e = vec(p+"post_attention_norm.weight", d); return })
	if c.NExpert > 0 { // qwen35moe: routed experts and a gated shared expert
		ne, fe, fs := c.NExpert, c.NFFExp, c.NFFShexp
		return append(steps,
			func() (e error) { l.GateInp, e = mat(p+"ffn_gate_inp.weight", d, ne); return },
			func() (e error) { l.ExpGate, e = experts(p+"ffn_gate_exps.weight", d, fe, ne); return },
			func() (e error) { l.ExpUp, e = experts(p+"ffn_up_exps.weight", d, fe, ne); return },
			func() (e error) { l.ExpDown, e = experts(p+"ffn_down_exps.weight", fe, d, ne); return },
			func() (e error) { l.ShexpGate, e = mat(p+"ffn_gate_inp_shexp.weight", d, 1); return },
			func() (e error) { l.Wgate, e = mat(p+"ffn_gate_shexp.weight", d, fs); return },
			func() (e error) { l.Wup, e = mat(p+"ffn_up_shexp.weight", d, fs); return },
			func() (e error) { l.Wdown, e = mat(p+"ffn_down_shexp.weight", fs, d); return },
		)
	}
	return append(steps,
		func() (e error) { l.Wgate, e = mat(p+"ffn_gate.weight", d, c.NFF); return },
		func() (e error) { l.Wup, e = mat(p+"ffn_up.weight", d, c.NFF); return },
		func() (e error) { l.Wdown, e = mat(p+"ffn_down.weight", c.NFF, d); return },
	)
}

// binder binds tensors of f by name to the shapes the hyperparameters give
// them (bindTensor); dims describes those in the errors.
type binder struct {
	f    *loader.File
	dims func() string
}

func (b binder) bind(name string, want ...int) (Mat, error) {
	return bindTensor(b.f, b.dims, name, want...)
}

func (b binder) mat(name string, cols, rows int) (Mat, error) {
	return bindTensor(b.f, b.dims, name, cols, rows)
}

func (b binder) vec(name string, n int) ([]float32, error) { return bindVec(b.f, b.dims, name, n) }

func (b binder) has(name string) bool { _, ok := b.f.Tensor(name); return ok }

// experts binds a 3-D [cols, rows, n] stack of expert matrices as n views.
func (b binder) experts(name string, cols, rows, n int) ([]Mat, error) {
	all, err := b.bind(name, cols, rows, n)
	if err != nil {
		return nil, err
	}
	out := make([]Mat, n)
	for e := range out {
		out[e] = all.rows(fmt.Sprintf("%s[%d]", name, e), e*rows, (e+1)*rows)
	}
	return out, nil
}

// floats reads a [cols, rows] tensor as f32 (row-major, rows of cols).
func (b binder) floats(name string, cols, rows int) ([]float32, error) {
	m, err := b.mat(name, cols, rows)
	if err != nil {
		return nil, err
	}
	out := make([]float32, cols*rows)
	kernels.Dequant(m.Type, m.Data, out)
	return out, nil
}

// bindTensor checks tensor name of f against the shape the hyperparameters
// give it (want: cols first, as GGUF lists dimensions; dims describes them
// in the error) and returns it as one matrix of cols-wide rows. A 2-D want
// also accepts a 1-D tensor when it has a single row (norm vectors).
func bindTensor(f *loader.File, dims func() string, name string, want ...int) (Mat, error) {
	ti, ok := f.Tensor(name)
	if !ok {
		return Mat{}, fmt.Errorf("tensor %s is missing", name)
	}
	if !ti.Type.Known() || ti.Type == kernels.Q8_K {
		return Mat{}, fmt.Errorf("tensor %s has unsupported type %v", name, ti.Type)
	}
	shape := ti.Shape
	if len(want) == 2 && want[1] == 1 && len(shape) == 1 {
		shape = []int64{shape[0], 1}
	}
	same := len(shape) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = shape[i] == int64(want[i])
	}
	if !same {
		return Mat{}, fmt.Errorf("tensor %s has shape %v, but the model's hyperparameters give %v (%s)", name, ti.Shape, want, dims())
	}
	cols, rows := want[0], 1
	for _, d := range want[1:] {
		rows *= d
	}
	rb, err := ti.Type.RowBytes(int64(cols))
	if err != nil {
		return Mat{}, fmt.Errorf("tensor %s: %v", name, err)
	}
	data := f.Data(ti)
	if int64(len(data)) < rb*int64(rows) {
		return Mat{}, fmt.Errorf("tensor %s: %d bytes of data, want %d", name, len(data), rb*int64(rows))
	}
	return Mat{Name: name, Type: ti.Type, Rows: rows, Cols: cols, RowBytes: int(rb), Data: data[:rb*int64(rows)]}, nil
}

// bindVec binds tensor name of f as a vector of n values (bindTensor) and
// dequantizes it to f32.
func bindVec(f *loader.File, dims func() string, name string, n int) ([]float32, error) {
	m, err := bindTensor(f, dims, name, n, 1)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	kernels.Dequant(m.Type, m.Data, out)
	return out, nil
}

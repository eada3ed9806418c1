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
}

// Layer holds the weights of one transformer block.
type Layer struct {
	AttnNorm   []float32
	Wq, Wk, Wv Mat
	Bq, Bk, Bv []float32 // nil when the architecture has no q/k/v biases
	Wo         Mat
	FFNNorm    []float32
	Wgate, Wup Mat
	Wdown      Mat
}

// Weights are all tensors of a model. Matrices point into the mapping; only
// norm weights, biases and rope frequency factors are copied to f32.
type Weights struct {
	TokEmbd   Mat
	Layers    []Layer
	OutNorm   []float32
	Output    Mat       // output.weight, or token_embd.weight when tied
	RopeFreqs []float32 // rope_freqs.weight (nil when absent)
}

// WeightsFromGGUF binds the tensors of f to the shapes c expects.
func WeightsFromGGUF(f *loader.File, c *Config) (*Weights, error) {
	mat := func(name string, cols, rows int) (Mat, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return Mat{}, fmt.Errorf("tensor %s is missing", name)
		}
		if !ti.Type.Known() || ti.Type == kernels.Q8_K {
			return Mat{}, fmt.Errorf("tensor %s has unsupported type %v", name, ti.Type)
		}
		if len(ti.Shape) < 1 || len(ti.Shape) > 2 || ti.Shape[0] != int64(cols) ||
			(len(ti.Shape) == 2 && ti.Shape[1] != int64(rows)) || (len(ti.Shape) == 1 && rows != 1) {
			return Mat{}, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, ti.Shape, cols, rows)
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
	vec := func(name string, n int) ([]float32, error) {
		m, err := mat(name, n, 1)
		if err != nil {
			return nil, err
		}
		out := make([]float32, n)
		if err := kernels.Dequant(m.Type, m.Data, out); err != nil {
			return nil, fmt.Errorf("tensor %s: %v", name, err)
		}
		return out, nil
	}

	w := &Weights{}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("tensor token_embd.weight is missing")
	}
	if len(ti.Shape) != 2 || ti.Shape[1] <= 0 || ti.Shape[1] > 1<<31 {
		return nil, fmt.Errorf("tensor token_embd.weight has shape %v, want [%d n_vocab]", ti.Shape, c.NEmbd)
	}
	c.NVocab = int(ti.Shape[1])
	var err error
	if w.TokEmbd, err = mat("token_embd.weight", c.NEmbd, c.NVocab); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("output.weight"); ok {
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
	qd, kvd := c.QDim(), c.KVDim()
	w.Layers = make([]Layer, c.NLayer)
	for i := range w.Layers {
		l := &w.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		steps := []func() error{
			func() (e error) { l.AttnNorm, e = vec(p+"attn_norm.weight", c.NEmbd); return },
			func() (e error) { l.Wq, e = mat(p+"attn_q.weight", c.NEmbd, qd); return },
			func() (e error) { l.Wk, e = mat(p+"attn_k.weight", c.NEmbd, kvd); return },
			func() (e error) { l.Wv, e = mat(p+"attn_v.weight", c.NEmbd, kvd); return },
			func() (e error) { l.Wo, e = mat(p+"attn_output.weight", qd, c.NEmbd); return },
			func() (e error) { l.FFNNorm, e = vec(p+"ffn_norm.weight", c.NEmbd); return },
			func() (e error) { l.Wgate, e = mat(p+"ffn_gate.weight", c.NEmbd, c.NFF); return },
			func() (e error) { l.Wup, e = mat(p+"ffn_up.weight", c.NEmbd, c.NFF); return },
			func() (e error) { l.Wdown, e = mat(p+"ffn_down.weight", c.NFF, c.NEmbd); return },
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

// embedRow dequantizes row tok of m into dst (len m.Cols).
func (m *Mat) embedRow(tok int, dst []float32) error {
	if tok < 0 || tok >= m.Rows {
		return fmt.Errorf("token id %d out of range [0, %d)", tok, m.Rows)
	}
	return kernels.Dequant(m.Type, m.Data[tok*m.RowBytes:(tok+1)*m.RowBytes], dst)
}

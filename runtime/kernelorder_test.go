package runtime

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

// Diagnostics for the kernels owner: the reference's Q8_0-family dot product
// sums in a fixed order (AVX2 ggml_vec_dot_q8_0_q8_0 and friends): 8 lanes,
// lane l holding the int sum of elements 4l..4l+3 of a block; per block
// acc[l] = fma(d_w*d_a, float(lane l), acc[l]); then hsum_float_8:
// (l + l+4), then (0+2), (1+3), then the two. Following that order makes the
// stories260K Q8_0/Q4_0/Q6_K logits bit-identical to the reference; any other
// order flips int8 roundings downstream (|Δlogit| ≈ 0.13).

func h2f(b []byte, i int) float32 { return kernels.F16ToF32(uint16(b[2*i]) | uint16(b[2*i+1])<<8) }

func dotQ0Ref(wt kernels.Type, n int, w, a []byte) float32 {
	var acc [8]float32
	bw := wt.BlockBytes()
	var q [32]int32
	for b := 0; b < n/32; b++ {
		wb, ab := w[b*bw:], a[b*34:]
		switch wt {
		case kernels.Q8_0:
			for i := range q {
				q[i] = int32(int8(wb[2+i]))
			}
		case kernels.Q4_0:
			for i := 0; i < 16; i++ {
				q[i], q[i+16] = int32(wb[2+i]&15)-8, int32(wb[2+i]>>4)-8
			}
		case kernels.Q5_0:
			qh := uint32(wb[2]) | uint32(wb[3])<<8 | uint32(wb[4])<<16 | uint32(wb[5])<<24
			for i := 0; i < 16; i++ {
				q[i] = int32(wb[6+i]&15|byte(qh>>i&1)<<4) - 16
				q[i+16] = int32(wb[6+i]>>4|byte(qh>>(i+16)&1)<<4) - 16
			}
		}
		d := h2f(wb, 0) * h2f(ab, 0)
		for l := 0; l < 8; l++ {
			s := int32(0)
			for k := 4 * l; k < 4*l+4; k++ {
				s += q[k] * int32(int8(ab[2+k]))
			}
			acc[l] = fmaf(d, float32(s), acc[l])
		}
	}
	r0, r1, r2, r3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (r0 + r2) + (r1 + r3)
}

func TestKernelDotOrderQ0(t *testing.T) {
	shared := sharedDir(t)
	for _, name := range []string{"stories260K-Q8_0", "stories260K-Q4_0", "stories260K-Q4_K_M"} {
		m, err := Load(filepath.Join(shared, "models", name+".gguf"), LoadOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, mt := range []*Mat{&m.w.Layers[0].Wq, &m.w.Layers[0].Wgate, &m.w.Output} {
			x := make([]float32, mt.Cols)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)*1.7)) * 3
			}
			a := make([]byte, 34*mt.Cols/32)
			kernels.QuantizeAct(kernels.Q8_0, x, a)
			y := make([]float32, mt.Rows)
			kernels.MatVec(mt.Type, mt.Cols, mt.Data, mt.RowBytes, a, y, 0, mt.Rows)
			y2 := make([]float32, mt.Rows)
			kernels.MatMulQ(mt.Type, mt.Cols, mt.Data, mt.RowBytes, 0, mt.Rows, a, len(a), 1, y2, mt.Rows)
			nv, nm := 0, 0
			for r := 0; r < mt.Rows; r++ {
				want := dotQ0Ref(mt.Type, mt.Cols, mt.Data[r*mt.RowBytes:], a)
				if y[r] != want {
					nv++
				}
				if y2[r] != want {
					nm++
				}
			}
			t.Logf("%s %s (%v): %s MatVec differs from the reference order in %d/%d rows, MatMulQ in %d",
				name, mt.Name, mt.Type, kernels.Impl(), nv, mt.Rows, nm)
		}
		m.Close()
	}
}

// TestKernelVecVsTiled reports where MatVec (one token) and MatMulQ (8
// tokens) give different bits for the same row and activation: the
// reference computes both with the same per-row dot product.
func TestKernelVecVsTiled(t *testing.T) {
	shared := sharedDir(t)
	for _, name := range []string{"synth-llama-mini-Q4_K_M", "synth-llama-mini-Q5_K_M", "stories260K-Q8_0", "synth-llama-mini-F16"} {
		m, err := Load(filepath.Join(shared, "models", name+".gguf"), LoadOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		l := &m.w.Layers[len(m.w.Layers)-1]
		for _, mt := range []*Mat{&l.Wq, &l.Wv, &l.Wdown, &m.w.Output} {
			x := make([]float32, mt.Cols)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)*1.7)) * 3
			}
			at := mt.Type.ActType()
			rb, _ := at.RowBytes(int64(mt.Cols))
			a := make([]byte, 8*rb)
			for k := 0; k < 8; k++ {
				kernels.QuantizeAct(at, x, a[int64(k)*rb:int64(k+1)*rb])
			}
			y := make([]float32, mt.Rows)
			kernels.MatVec(mt.Type, mt.Cols, mt.Data, mt.RowBytes, a[:rb], y, 0, mt.Rows)
			y8 := make([]float32, 8*mt.Rows)
			kernels.MatMulQ(mt.Type, mt.Cols, mt.Data, mt.RowBytes, 0, mt.Rows, a, int(rb), 8, y8, mt.Rows)
			nd := 0
			for r := range y {
				if y[r] != y8[r] {
					nd++
				}
			}
			t.Logf("%s %s (%v, %s): MatVec vs MatMulQ(8 tokens) differ in %d/%d rows", name, mt.Name, mt.Type, kernels.Impl(), nd, mt.Rows)
		}
		m.Close()
	}
}

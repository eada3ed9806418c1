package runtime

import (
	"math"

	"github.com/woolly-llm/woolly/kernels"
)

// attendF16 is causal grouped-query attention for query heads [h0, h1) with
// the numerics of the reference's CPU flash attention for fewer than 64
// query rows: Q, K and V hold f16 values (the caller rounds them), K·Q is
// ggml_vec_dot_f16, and V is accumulated in f16 with an online softmax
// (running max M and sum S, expf from glibc). acc needs HeadDim floats.
//
// With 64 or more rows the reference accumulates in f32 instead, which is
// what kernels.Attention does; forward picks between the two.
func attendF16(p *kernels.AttnParams, h0, h1 int, acc []float32) {
	group := p.NHead / p.NHeadKV
	hd := p.HeadDim
	np := hd &^ 63 // elements the reference handles in 64-wide SIMD steps
	acc = acc[:hd]
	for t := 0; t < p.NTok; t++ {
		npos := p.Pos0 + t + 1
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[t*p.QStride+h*hd : t*p.QStride+(h+1)*hd]
			S, M := float32(0), float32(math.Inf(-1))
			clear(acc)
			for pos := 0; pos < npos; pos++ {
				k := p.K[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				v := p.V[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				s := dotF16(q, k, np) * p.Scale
				ms, vs := float32(1), float32(1)
				if s > M {
					old := M
					M = s
					ms = expf(old - M)
					for i := range acc {
						acc[i] = roundF16(acc[i] * ms)
					}
				} else {
					vs = expf(s - M)
				}
				for i := range acc { // y = f16(y + v*vs), fused (the product is exact in f64)
					acc[i] = roundF16(float32(float64(v[i])*float64(vs) + float64(acc[i])))
				}
				S = fma32(S, ms, vs)
			}
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			out := p.Out[t*p.OutStride+h*hd : t*p.OutStride+(h+1)*hd]
			for i := range out {
				out[i] = acc[i] * inv
			}
		}
	}
}

// dotF16 is ggml_vec_dot_f16 on AVX-512 for vectors of f16 values: the
// first np elements in 4 accumulators of 16 lanes (fused multiply-add),
// reduced pairwise, then the rest added in double.
func dotF16(x, y []float32, np int) float32 {
	sum := 0.0
	if np > 0 {
		var a [4][16]float32
		for i := 0; i < np; i += 64 {
			for j := 0; j < 4; j++ {
				xs, ys := x[i+16*j:i+16*j+16], y[i+16*j:i+16*j+16]
				for l := 0; l < 16; l++ {
					// The product of two f16 values is exact in f32, so
					// rounding the double sum once equals a fused add.
					a[j][l] = float32(float64(xs[l]*ys[l]) + float64(a[j][l]))
				}
			}
		}
		for l := 0; l < 16; l++ {
			a[0][l] += a[2][l]
			a[1][l] += a[3][l]
		}
		v := &a[0]
		for l := 0; l < 16; l++ {
			v[l] += a[1][l]
		}
		for w := 8; w >= 1; w /= 2 {
			for l := 0; l < w; l++ {
				v[l] += v[l+w]
			}
		}
		sum = float64(v[0])
	}
	for i := np; i < len(x); i++ {
		sum += float64(x[i] * y[i])
	}
	return float32(sum)
}

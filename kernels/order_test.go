package kernels

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// Summation orders of the reference build (llama.cpp x86, AVX-512), re-derived
// in Go from the descriptions in csrc/dot_float_avx2_amd64.c and
// csrc/kernels.h; the SIMD kernels must give exactly these bits.

func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// tree16 reduces 16 lanes: (l + l+8), (l + l+4), (l + l+2), (l + l+1).
func tree16(v [16]float32) float32 {
	for w := 8; w >= 1; w /= 2 {
		for l := 0; l < w; l++ {
			v[l] += v[l+w]
		}
	}
	return v[0]
}

// vecDotOrder is ggml_vec_dot_f32/_f16 on AVX-512 for f32 values x, y.
func vecDotOrder(x, y []float32) float32 {
	n := len(x)
	np := n &^ 63
	sum := 0.0
	if np > 0 {
		var a [4][16]float32
		for i := 0; i < np; i += 64 {
			for j := 0; j < 4; j++ {
				for l := 0; l < 16; l++ {
					a[j][l] = fma32(x[i+16*j+l], y[i+16*j+l], a[j][l])
				}
			}
		}
		var v [16]float32
		for l := 0; l < 16; l++ {
			v[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l])
		}
		sum = float64(tree16(v))
	}
	for i := np; i < n; i++ {
		sum += float64(float32(x[i] * y[i]))
	}
	return float32(sum)
}

func f16Row(rng *rand.Rand, n int) ([]byte, []float32) {
	b := make([]byte, 2*n)
	f := make([]float32, n)
	for i := range f {
		h := F32ToF16(float32(rng.NormFloat64()))
		binary.LittleEndian.PutUint16(b[2*i:], h)
		f[i] = F16ToF32(h)
	}
	return b, f
}

func f32Bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestFloatDotOrders(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for _, impl := range simdImpls(t) {
		withImpl(t, impl, func() {
			for _, n := range []int{16, 48, 64, 100, 256, 768, 1000} {
				const rows = 6
				// F16 x F16 and F32 x F32, MatVec and MatMulQ(1): vec_dot order
				var w16, w32 []byte
				var wf [][]float32
				for r := 0; r < rows; r++ {
					b, f := f16Row(rng, n)
					w16 = append(w16, b...)
					w32 = append(w32, f32Bytes(f)...)
					wf = append(wf, f)
				}
				a16, af := f16Row(rng, n)
				a32 := f32Bytes(af)
				y := make([]float32, rows)
				MatVec(F16, n, w16, 2*n, a16, y, 0, rows)
				for r := 0; r < rows; r++ {
					require.Equal(t, math.Float32bits(vecDotOrder(wf[r], af)), math.Float32bits(y[r]), "%s F16 n=%d row %d", impl, n, r)
				}
				MatVec(F32, n, w32, 4*n, a32, y, 0, rows)
				for r := 0; r < rows; r++ {
					require.Equal(t, math.Float32bits(vecDotOrder(wf[r], af)), math.Float32bits(y[r]), "%s F32 n=%d row %d", impl, n, r)
				}
				// batches: the same order for every token
				for _, ntok := range []int{2, 5} {
					xs := make([]float32, 0, ntok*n)
					for k := 0; k < ntok; k++ {
						xs = append(xs, randomF32(n, rng)...)
					}
					yb := make([]float32, ntok*rows)
					MatMulQ(F32, n, w32, 4*n, 0, rows, f32Bytes(xs), 4*n, ntok, yb, rows)
					for k := 0; k < ntok; k++ {
						for r := 0; r < rows; r++ {
							want := vecDotOrder(wf[r], xs[k*n:(k+1)*n])
							require.Equal(t, math.Float32bits(want), math.Float32bits(yb[k*rows+r]), "%s F32 batch n=%d t=%d r=%d", impl, n, k, r)
						}
					}
				}
			}
		})
	}
}

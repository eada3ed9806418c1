package runtime

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/woolly-llm/woolly/kernels"
)

// The forward pass hands SwiGLU, RoPE and the f16 roundings of q / the KV
// cache to the kernels; here each kernel set is held to the Go
// transcriptions of the reference's numerics in numerics.go, bit for bit.

func eachKernelSet(t *testing.T, f func(t *testing.T)) {
	def := kernels.Impl()
	defer kernels.Use(def)
	for _, name := range kernels.Available() {
		kernels.Use(name)
		t.Run(name, f)
	}
}

func swigluInputs(rng *rand.Rand, n int) (g, u []float32) {
	g, u = make([]float32, n), make([]float32, n)
	for i := range g {
		switch rng.Intn(8) {
		case 0: // the scalar lanes of the vector exp and the overflow ends
			g[i] = float32(rng.NormFloat64() * 150)
		case 1:
			g[i] = []float32{0, float32(math.Copysign(0, -1)), 88.5, -88.5, 104, -104, 1e-30, -1e-30}[rng.Intn(8)]
		default:
			g[i] = float32(rng.NormFloat64() * 4)
		}
		u[i] = float32(rng.NormFloat64())
	}
	return g, u
}

func TestSwiGLUMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	eachKernelSet(t, func(t *testing.T) {
		kernels.SwiGLU(nil, nil, nil, 3, 0, 0, 0) // empty rows
		for _, n := range []int{1, 7, 15, 16, 17, 31, 33, 256, 5632, 5632 + 13} {
			const ntok = 3
			g, u := swigluInputs(rng, ntok*n)
			want := make([]float32, ntok*n)
			siluMul(want, g, u, n)
			for _, r := range [][2]int{{0, n}, {min(1, n), max(n-1, min(1, n))}, {n / 3, n / 3}, {n / 2, n}} {
				got := make([]float32, ntok*n)
				kernels.SwiGLU(got, g, u, ntok, n, r[0], r[1])
				for tk := 0; tk < ntok; tk++ {
					for i := 0; i < n; i++ {
						w := float32(0)
						if i >= r[0] && i < r[1] {
							w = want[tk*n+i]
						}
						require.Equal(t, math.Float32bits(w), math.Float32bits(got[tk*n+i]),
							"n=%d range %v row %d [%d]: gate %g: %g, want %g", n, r, tk, i, g[tk*n+i], got[tk*n+i], w)
					}
				}
			}
			// in place (out = gate), as the forward pass calls it
			inplace := append([]float32(nil), g...)
			kernels.SwiGLU(inplace, inplace, u, ntok, n, 0, n)
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(inplace[i]), "in place n=%d [%d]", n, i)
			}
		}
	})
	require.Panics(t, func() { kernels.SwiGLU(make([]float32, 8), make([]float32, 8), make([]float32, 8), 1, 8, 2, 9) })
	require.Panics(t, func() { kernels.SwiGLU(make([]float32, 8), make([]float32, 8), make([]float32, 7), 1, 8, 0, 8) })
	require.Panics(t, func() { kernels.SwiGLU(make([]float32, 16), make([]float32, 16), make([]float32, 16), 2, 8, 3, 2) })
	// RoPERows: one table short, x one row short
	require.Panics(t, func() {
		kernels.RoPERows(make([]float32, 2*64), 2, 1, 64, 64, make([]float32, 63), make([]float32, 64), false)
	})
	require.Panics(t, func() {
		kernels.RoPERows(make([]float32, 2*64-1), 2, 1, 64, 64, make([]float32, 64), make([]float32, 64), false)
	})
}

func TestRoPEMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	eachKernelSet(t, func(t *testing.T) {
		for _, neox := range []bool{false, true} {
			for _, sh := range [][3]int{{32, 64, 64}, {4, 64, 64}, {2, 128, 128}, {3, 80, 40}, {2, 64, 6}} {
				nh, hd, nrot := sh[0], sh[1], sh[2]
				cs, sn := make([]float32, nrot/2), make([]float32, nrot/2)
				for i := range cs {
					sn[i], cs[i] = sincosf(float32(rng.Intn(4096)) * float32(math.Pow(10000, -2*float64(i)/float64(nrot))))
				}
				x := make([]float32, nh*hd)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 3)
				}
				want := append([]float32(nil), x...)
				rope(want, nh, hd, nrot, cs, sn, neox)
				kernels.RoPERows(x, 1, nh, hd, nrot, cs, sn, neox)
				for i := range x {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(x[i]), "neox=%v %v [%d]", neox, sh, i)
				}
				// several rows at once, each with its own tables
				const ntok = 3
				xs := make([]float32, ntok*nh*hd)
				cs3, sn3 := make([]float32, ntok*nrot/2), make([]float32, ntok*nrot/2)
				for i := range xs {
					xs[i] = float32(rng.NormFloat64() * 3)
				}
				for i := range cs3 {
					sn3[i], cs3[i] = sincosf(float32(rng.Intn(4096)) * 0.37)
				}
				wants := append([]float32(nil), xs...)
				for tk := 0; tk < ntok; tk++ {
					h := nrot / 2
					rope(wants[tk*nh*hd:(tk+1)*nh*hd], nh, hd, nrot, cs3[tk*h:(tk+1)*h], sn3[tk*h:(tk+1)*h], neox)
				}
				kernels.RoPERows(xs, ntok, nh, hd, nrot, cs3, sn3, neox)
				for i := range xs {
					require.Equal(t, math.Float32bits(wants[i]), math.Float32bits(xs[i]), "rows: neox=%v %v [%d]", neox, sh, i)
				}
			}
		}
	})
}

// The KV cache is written with kernels.QuantizeAct(F16) and q is rounded
// through f16 with it and kernels.Dequant: the same values as toHalf and
// roundF16, including ties, subnormals and overflow.
func TestF16RoundingMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	x := make([]float32, 4099)
	for i := range x {
		switch rng.Intn(6) {
		case 0:
			x[i] = float32(rng.NormFloat64() * 1e-6) // f16 subnormals
		case 1:
			x[i] = float32(rng.NormFloat64() * 7e4) // near and past the f16 maximum
		case 2: // exact ties between two f16 values
			h := uint16(rng.Intn(0x7bff))
			x[i] = math.Float32frombits(math.Float32bits(halfTab[h]) + 1<<12)
		default:
			x[i] = float32(rng.NormFloat64() * 10)
		}
	}
	eachKernelSet(t, func(t *testing.T) {
		h := make([]uint16, len(x))
		r := make([]float32, len(x))
		kernels.QuantizeAct(kernels.F16, x, halfBytes(h))
		kernels.Dequant(kernels.F16, halfBytes(h), r)
		for i, v := range x {
			require.Equal(t, toHalf(v), h[i], "toHalf(%g)", v)
			require.Equal(t, math.Float32bits(roundF16(v)), math.Float32bits(r[i]), "roundF16(%g)", v)
		}
	})
}

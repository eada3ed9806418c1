package kernels

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func readMXFP4Data(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mxfp4", name))
	require.NoError(t, err)
	return b
}

func f32sOf(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// Every impl dequantizes MXFP4 blocks to the bits llama.cpp's
// dequantize_row_mxfp4 gave (testdata/mxfp4/README.md): every code, with
// the exponents 0, 1 (f32 subnormal scales), 2, 100, 127, 128, 200, 254
// and 255 (2^127, not NaN).
func TestMXFP4DequantKnownAnswers(t *testing.T) {
	src := readMXFP4Data(t, "dequant_blocks.mxfp4")
	want := f32sOf(readMXFP4Data(t, "dequant_blocks.f32"))
	require.Equal(t, len(src)/17*32, len(want))
	forEachImpl(t, func(t *testing.T, impl string) {
		got := make([]float32, len(want))
		Dequant(MXFP4, src, got)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("element %d (block %d, e %d): %g (%#08x), llama.cpp %g (%#08x)", i, i/32, src[i/32*17],
					got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	})
}

// Every impl's MatVec, and its MatMulQ of a batch, give the bits of
// llama.cpp's AVX2 ggml_vec_dot_mxfp4_q8_0 (the reference build's dot for
// one token and, with no batched MXFP4 kernel, for a batch too) on rows of
// 1 to 9 blocks, the activations quantized to Q8_0 by Woolly. Rows with
// the extreme exponents overflow to inf - inf = NaN: any NaN matches
// there, since its sign bit is the CPU's default NaN (set on x86, clear on
// arm64).
func TestMXFP4DotKnownAnswers(t *testing.T) {
	w := readMXFP4Data(t, "dot_w.mxfp4")
	a := f32sOf(readMXFP4Data(t, "dot_a.f32"))
	want := f32sOf(readMXFP4Data(t, "dot_want.f32"))
	require.Len(t, want, 36)
	bits := func(f float32) uint32 {
		if f != f {
			return 0x7fc00000
		}
		return math.Float32bits(f)
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		wo, ao, k := 0, 0, 0
		for nb := 1; nb <= 9; nb++ {
			n := 32 * nb
			rb, ab := 17*nb, 34*nb
			// the 4 rows of this length, and their 4 activation vectors as a batch
			rows, acts := w[wo:wo+4*rb], make([]byte, 4*ab)
			for r := 0; r < 4; r++ {
				QuantizeAct(Q8_0, a[ao+r*n:ao+(r+1)*n], acts[r*ab:(r+1)*ab])
			}
			for r := 0; r < 4; r++ {
				var y [1]float32
				MatVec(MXFP4, n, rows[r*rb:(r+1)*rb], rb, acts[r*ab:], y[:], 0, 1)
				require.Equal(t, bits(want[k+r]), bits(y[0]), "%s n=%d row %d: %g, llama.cpp %g", impl, n, r, y[0], want[k+r])
			}
			y := make([]float32, 16)
			MatMulQ(MXFP4, n, rows, rb, 0, 4, acts, ab, 4, y, 4)
			for r := 0; r < 4; r++ { // token r against row r: the diagonal
				require.Equal(t, bits(want[k+r]), bits(y[r*4+r]), "%s batch n=%d row %d", impl, n, r)
			}
			wo, ao, k = wo+4*rb, ao+4*n, k+4
		}
		require.Equal(t, len(w), wo)
		require.Equal(t, len(a), ao)
	})
}

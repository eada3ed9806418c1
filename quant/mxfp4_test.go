package quant

import (
	"bufio"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/kernels"
)

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Zero(t, len(raw)%4, path)
	x := make([]float32, len(raw)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return x
}

// Woolly's MXFP4 quantizer writes the bytes llama.cpp's quantize_mxfp4 wrote
// for the same f32 rows (testdata/mxfp4/README.md): random blocks at scales
// 2^-20..2^20, zero and negative-zero blocks, spikes, ties between levels,
// amax a power of two or a few ulps below one, amax near the f32 maximum,
// f32-subnormal scales, NaNs and exact levels.
func TestMXFP4MatchesGGML(t *testing.T) {
	x := readF32(t, filepath.Join("testdata", "mxfp4", "quant_rows.f32"))
	want, err := os.ReadFile(filepath.Join("testdata", "mxfp4", "quant_rows.mxfp4"))
	require.NoError(t, err)
	const rowLen = 96
	rb, _ := ggml.MXFP4.RowBytes(rowLen)
	require.Equal(t, len(x)/rowLen*int(rb), len(want))
	for _, threads := range []int{1, 3} {
		got := make([]byte, len(want))
		require.NoError(t, Quantize(ggml.MXFP4, x, rowLen, got, threads))
		for i := range got {
			if got[i] != want[i] {
				blk := i / 17
				t.Fatalf("threads=%d: byte %d (row %d, block %d, offset %d): %#02x, llama.cpp %#02x; block input %v",
					threads, i, blk/3, blk%3, i%17, got[i], want[i], x[32*blk:32*blk+32])
			}
		}
	}
	// and row by row through QuantizeRow
	for r := 0; r < len(x)/rowLen; r++ {
		got := make([]byte, rb)
		require.NoError(t, QuantizeRow(ggml.MXFP4, x[r*rowLen:(r+1)*rowLen], got))
		require.Equal(t, want[r*int(rb):(r+1)*int(rb)], got, "row %d", r)
	}
}

// The exponent rule floorf(log2f(amax)) at every f32 binade boundary, as
// glibc's log2f gives it (testdata/mxfp4/log2_floor.txt): in binade E the
// `count` largest floats give E+1, the next ones and 2^E give E.
func TestMXFP4Log2Floor(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "mxfp4", "log2_floor.txt"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 2, line)
		E, err1 := strconv.Atoi(fields[0])
		count, err2 := strconv.Atoi(fields[1])
		require.NoError(t, err1)
		require.NoError(t, err2)
		lines++
		want := func(v float32, floor int) {
			t.Helper()
			if got := int(mxfp4Exponent(v)); got != (floor+125)&255 {
				t.Fatalf("binade %d: amax %g (%#08x): e %d, want %d (floor log2f %d)", E, v, math.Float32bits(v), got, (floor+125)&255, floor)
			}
		}
		lo := float32(math.Ldexp(1, E))
		want(lo, E)
		top := math.Float32bits(float32(math.Ldexp(1, E+1))) - 1
		if E == 127 {
			top = math.Float32bits(math.MaxFloat32)
		}
		for k := 0; k < count+4 && top-uint32(k) >= math.Float32bits(lo); k++ {
			floor := E
			if k < count {
				floor = E + 1
			}
			want(math.Float32frombits(top-uint32(k)), floor)
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 277, lines) // binades -149 .. 127
}

// Exponents outside the rows' range, as llama.cpp's build wrote them (see
// testdata/mxfp4/README.md, "probes"): +inf gives 0, amax below 2^-125
// wraps modulo 256, and the reserved 255 is an error as in llama-quantize.
func TestMXFP4ExponentEdges(t *testing.T) {
	for _, c := range []struct {
		amax float32
		e    uint8
		q3   uint8 // the code of element 3 (holding amax)
	}{
		{float32(math.Inf(1)), 0, 0},
		{float32(math.Ldexp(1, -127)), 254, 0},
		{float32(math.Ldexp(1, -130)), 251, 0},
		{float32(math.Ldexp(1, -149)), 232, 0},
		{float32(math.Ldexp(1, -125)), 0, 6},
	} {
		x := make([]float32, 32)
		x[3] = c.amax
		y := make([]byte, 17)
		require.NoError(t, QuantizeRow(ggml.MXFP4, x, y), "amax %g", c.amax)
		require.Equal(t, c.e, y[0], "amax %g", c.amax)
		require.Equal(t, c.q3, y[4]&15, "amax %g", c.amax)
	}
	x := make([]float32, 64)
	x[40] = float32(math.Ldexp(1.5, -126))
	y := make([]byte, 34)
	err := QuantizeRow(ggml.MXFP4, x, y)
	require.ErrorContains(t, err, "reserved exponent 255")
	require.ErrorContains(t, err, "block 1")
	y = make([]byte, 68)
	err = Quantize(ggml.MXFP4, append(make([]float32, 64), x...), 64, y, 2)
	require.ErrorContains(t, err, "row 1, block 1")
}

// Quantized values are the nearest level (first on ties), checked against
// a plain search of all 16 codes.
func TestMXFP4CodeIsNearest(t *testing.T) {
	for _, d := range []float32{1, 0.25, float32(math.Ldexp(1, -128)), float32(math.Ldexp(1, 126))} {
		xs := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
		for k := -30; k <= 30; k++ {
			xs = append(xs, float32(k)*d/2, float32(k)*d/2+d/1024, float32(k)*d/2-d/1024)
		}
		for _, x := range xs {
			best, code := float32(math.Abs(float64(-x))), uint8(0)
			for c := uint8(1); c < 16; c++ {
				if err := float32(math.Abs(float64(mxfp4Value(c)*d - x))); err < best {
					best, code = err, c
				}
			}
			require.Equal(t, code, mxfp4Code(x, d), "x %g d %g", x, d)
		}
	}
}

// Quantize then dequantize: within 4 d of each value (half the largest
// level gap is 2 d, and values in [12 d, 16 d) clamp to 12 d), and the
// kernels' dequantizer agrees with the Go one.
func TestMXFP4RoundTrip(t *testing.T) {
	x := readF32(t, filepath.Join("testdata", "mxfp4", "quant_rows.f32"))[:96*8]
	y := make([]byte, 8*3*17)
	require.NoError(t, Quantize(ggml.MXFP4, x, 96, y, 1))
	back, kb := make([]float32, len(x)), make([]float32, len(x))
	dequantMXFP4(y, back)
	kernels.Dequant(ggml.MXFP4, y, kb)
	for i := range x {
		require.Equal(t, math.Float32bits(back[i]), math.Float32bits(kb[i]), "element %d", i)
		d := e8m0Half(y[i/32*17])
		if v := float64(x[i]); !math.IsNaN(v) {
			require.LessOrEqual(t, math.Abs(v-float64(back[i])), float64(4*d), "element %d", i)
		}
	}
}

package quant

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
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

// A small gpt-oss-shaped f32 file quantized as MXFP4_MOE: the expert
// tensor becomes MXFP4 with the bytes of Quantize over its rows, the 2-D
// weights Q8_0, norms and the router stay f32, and the output reopens with
// general.file_type 38 and dequantizes.
func TestQuantizeFileMXFP4MoE(t *testing.T) {
	rng := rand.New(rand.NewSource(39))
	f32 := func(n int) ([]float32, []byte) {
		x := make([]float32, n)
		b := make([]byte, 4*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 0.02
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x[i]))
		}
		return x, b
	}
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	w.SetUint32("gpt-oss.block_count", 1)
	w.SetUint32("gpt-oss.expert_count", 4)
	w.SetUint32("general.file_type", 0)
	tensors := []struct {
		name  string
		shape []int64
	}{
		{"token_embd.weight", []int64{64, 50}},
		{"output_norm.weight", []int64{64}},
		{"output.weight", []int64{64, 50}},
		{"blk.0.attn_q.weight", []int64{64, 64}},
		{"blk.0.ffn_gate_inp.weight", []int64{64, 4}},
		{"blk.0.ffn_up_exps.weight", []int64{64, 32, 4}},
	}
	vals := map[string][]float32{}
	for _, tn := range tensors {
		n := 1
		for _, d := range tn.shape {
			n *= int(d)
		}
		x, b := f32(n)
		vals[tn.name] = x
		require.NoError(t, w.AddTensor(tn.name, ggml.F32, tn.shape, b))
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.gguf"), filepath.Join(dir, "out.gguf")
	fh, err := os.Create(in)
	require.NoError(t, err)
	_, err = w.WriteTo(fh)
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	ft, err := ParseFileType("mxfp4")
	require.NoError(t, err)
	_, err = QuantizeFile(in, out, ft, FileOptions{Threads: 2})
	require.NoError(t, err)

	f, err := loader.Open(out)
	require.NoError(t, err)
	defer f.Close()
	want := map[string]ggml.Type{"token_embd.weight": ggml.Q8_0, "output_norm.weight": ggml.F32,
		"output.weight": ggml.Q8_0, "blk.0.attn_q.weight": ggml.Q8_0, "blk.0.ffn_gate_inp.weight": ggml.F32,
		"blk.0.ffn_up_exps.weight": ggml.MXFP4}
	for name, ty := range want {
		ti, ok := f.Tensor(name)
		require.True(t, ok, name)
		require.Equal(t, ty, ti.Type, name)
	}
	fileType, name, ok := f.FileType()
	require.True(t, ok)
	require.Equal(t, uint64(38), fileType)
	require.Equal(t, "MXFP4_MOE", name)

	ti, _ := f.Tensor("blk.0.ffn_up_exps.weight")
	exp := make([]byte, 4*32*34)
	require.NoError(t, Quantize(ggml.MXFP4, vals["blk.0.ffn_up_exps.weight"], 64, exp, 1))
	require.Equal(t, exp, f.Data(ti))
	back := make([]float32, 64*32*4)
	kernels.Dequant(ggml.MXFP4, f.Data(ti), back)
	for i, v := range vals["blk.0.ffn_up_exps.weight"] {
		require.InDelta(t, v, back[i], 0.02, "element %d", i)
	}
}

// A block that would get the reserved exponent 255 stops QuantizeFile with
// an error naming the tensor, as llama-quantize's validation stops it; no
// output is left behind.
func TestQuantizeFileMXFP4ReservedExponent(t *testing.T) {
	x := make([]float32, 64*2*2)
	x[200] = float32(math.Ldexp(1.25, -126)) // expert 1, row 1, block 0
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	require.NoError(t, w.AddTensor("blk.0.ffn_down_exps.weight", ggml.F32, []int64{64, 2, 2}, b))
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.gguf"), filepath.Join(dir, "out.gguf")
	require.NoError(t, w.WriteFile(in))
	_, err := QuantizeFile(in, out, FileMXFP4_MOE, FileOptions{Threads: 1})
	require.ErrorContains(t, err, "blk.0.ffn_down_exps.weight")
	require.ErrorContains(t, err, "reserved exponent 255")
	_, statErr := os.Stat(out)
	require.True(t, os.IsNotExist(statErr), "output left behind: %v", statErr)
}

// QuantizeFile as mxfp4 writes llama-quantize's file byte for byte: the
// sha256 of `llama-quantize --allow-requantize SRC OUT MXFP4_MOE 2` (the
// reference commit's quantize tool built against its AVX2 build, see
// testdata/mxfp4/README.md) for two shared MoE models.
func TestQuantizeFileMXFP4MatchesLlamaQuantize(t *testing.T) {
	for _, c := range []struct{ src, sha string }{
		{"synth-qwen3moe-mini-Q4_K_M.gguf", "42233abc0eed8f74989d20a7c327ef5be13fd2dad635cc2b2332d01793b14dea"},
		{"synth-mixtral-mini-Q4_K_M.gguf", "bc564e99e3a4cff8afc2806226ca456da25375d3fb5a7b1cabf2ff6f23c31dbb"},
	} {
		in := sharedModel(t, c.src)
		out := filepath.Join(t.TempDir(), "mxfp4.gguf")
		_, err := QuantizeFile(in, out, FileMXFP4_MOE, FileOptions{Threads: 2, AllowRequantize: true})
		require.NoError(t, err)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		require.Equal(t, c.sha, hex.EncodeToString(sum[:]), "%s as MXFP4_MOE is not llama-quantize's file", c.src)
	}
}

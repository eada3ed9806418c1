package quant

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/kernels"
)

var shared = filepath.Join("..", "..", "shared")

type dequantEntry struct {
	Type     string `json:"type"`
	Model    string `json:"model"`
	Tensor   string `json:"tensor"`
	RowLen   int    `json:"row_length"`
	NRows    int    `json:"n_rows"`
	RawFile  string `json:"raw_file"`
	F32File  string `json:"f32_file"`
	RowBytes int    `json:"row_bytes"`
}

func dequantIndex(t *testing.T) []dequantEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shared, "ref", "dequant", "index.json"))
	if err != nil {
		t.Skipf("shared reference data not available (%v)", err)
	}
	var idx struct {
		Entries []dequantEntry `json:"entries"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	// Only the types this package writes: the others (IQ4_NL, IQ4_XS, and
	// types Woolly does not read yet) have no quantizer to check here.
	var out []dequantEntry
	for _, e := range idx.Entries {
		if ty, ok := ggml.TypeByName(e.Type); ok && Supported(ty) {
			out = append(out, e)
		} else {
			t.Logf("skipping %s: no quantizer for %s", e.RawFile, e.Type)
		}
	}
	return out
}

func TestDequantKnownAnswers(t *testing.T) {
	for _, e := range dequantIndex(t) {
		ty, _ := ggml.TypeByName(e.Type)
		raw, err := os.ReadFile(filepath.Join(shared, e.RawFile))
		if err != nil {
			t.Fatal(err)
		}
		want := readF32(t, filepath.Join(shared, e.F32File))
		got := make([]float32, len(want))
		if err := testDequant(ty, raw, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s %s: value %d = %v, ggml %v", e.Type, e.RawFile, i, got[i], want[i])
			}
		}
	}
}

func TestF16Conversion(t *testing.T) {
	// Every half value round-trips exactly; the midpoint between two
	// neighbours rounds to the even one.
	for h := 0; h < 1<<16; h++ {
		f := ggml.F16ToF32(uint16(h))
		if f != f { // NaN
			continue
		}
		if got := ggml.F32ToF16(f); got != uint16(h) && !(f == 0 && got&0x7fff == 0) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, got)
		}
		if h&0x7c00 == 0x7c00 || (h+1)&0x7c00 == 0x7c00 {
			continue
		}
		lo, hi := float64(f), float64(ggml.F16ToF32(uint16(h+1)))
		mid := float32((lo + hi) / 2)
		want := uint16(h)
		if h&1 == 1 {
			want = uint16(h + 1)
		}
		if got := ggml.F32ToF16(mid); got != want {
			t.Fatalf("midpoint of %#04x and next: got %#04x want %#04x", h, got, want)
		}
	}
}

// f16Rows reads rows [0, n) of an F16 tensor straight from a GGUF file,
// at the offset tensor_types.json gives.
func f16Rows(t *testing.T, model, tensor string, rowLen, nrows int) []float32 {
	t.Helper()
	tt := loadTensorTypes(t)
	info, ok := tt[model][tensor]
	if !ok || (info.Type != "F16" && info.Type != "F32") {
		t.Fatalf("%s: %s not an F16/F32 tensor", model, tensor)
	}
	es := 2
	if info.Type == "F32" {
		es = 4
	}
	fh, err := os.Open(filepath.Join(shared, "models", model))
	if err != nil {
		t.Skipf("model not available: %v", err)
	}
	defer fh.Close()
	buf := make([]byte, es*rowLen*nrows)
	if _, err := fh.ReadAt(buf, info.Offset); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, rowLen*nrows)
	for i := range out {
		if es == 2 {
			out[i] = ggml.F16ToF32(binary.LittleEndian.Uint16(buf[2*i:]))
		} else {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
	}
	return out
}

func rmsDiff(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

func rmsOf(a []float32) float64 {
	var s float64
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(a)))
}

// TestMatchesLlamaQuantizeBytes quantizes the rows of synth-llama-mini-F16
// that ../shared/ref/dequant holds in llama-quantize's output and compares
// bytes and error. The reference was built with -march=native (FMA
// contraction allowed), so a few blocks may legitimately differ; the error
// must not be worse than theirs.
func TestMatchesLlamaQuantizeBytes(t *testing.T) {
	for _, e := range dequantIndex(t) {
		if !strings.Contains(e.Model, "synth-llama-mini") || e.Type == "F16" {
			continue
		}
		ty, _ := ggml.TypeByName(e.Type)
		raw, err := os.ReadFile(filepath.Join(shared, e.RawFile))
		if err != nil {
			t.Fatal(err)
		}
		orig := f16Rows(t, "synth-llama-mini-F16.gguf", e.Tensor, e.RowLen, e.NRows)
		ours := make([]byte, len(raw))
		if err := Quantize(ty, orig, e.RowLen, ours, 2); err != nil {
			t.Fatal(err)
		}
		bb := ty.BlockBytes()
		same := 0
		for b := 0; b < len(raw)/bb; b++ {
			if string(raw[b*bb:(b+1)*bb]) == string(ours[b*bb:(b+1)*bb]) {
				same++
			}
		}
		dq := make([]float32, len(orig))
		if err := testDequant(ty, ours, dq); err != nil {
			t.Fatal(err)
		}
		ref := readF32(t, filepath.Join(shared, e.F32File))
		rOurs, rTheirs := rmsDiff(dq, orig), rmsDiff(ref, orig)
		t.Logf("%-5s %-22s %d/%d blocks byte-identical; rms err ours %.6g, llama.cpp %.6g", e.Type, e.Tensor, same, len(raw)/bb, rOurs, rTheirs)
		if rOurs > rTheirs*1.02 {
			t.Errorf("%s %s: rms error %.6g worse than llama.cpp's %.6g", e.Type, e.Tensor, rOurs, rTheirs)
		}
		if same*10 < len(raw)/bb*9 {
			t.Errorf("%s %s: only %d of %d blocks identical to llama-quantize", e.Type, e.Tensor, same, len(raw)/bb)
		}
	}
}

func gaussianRows(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// TestGaussianRoundTrip reports relative RMS error per type on N(0,1) rows
// and checks each against a bound a correct quantizer of that bit width
// meets with margin (and a broken one does not).
func TestGaussianRoundTrip(t *testing.T) {
	const rowLen, nrows = 4096, 64
	x := gaussianRows(rowLen*nrows, 7)
	// Loose relative RMS bounds: about 1.25x what a uniform quantizer of
	// the type's bit width reaches on Gaussian data. They catch a broken
	// search or packing; TestMatchesLlamaQuantizeBytes checks exact parity.
	bounds := map[ggml.Type]float64{
		ggml.F16: 3e-4, ggml.Q8_0: 0.007, ggml.Q6_K: 0.022, ggml.Q5_K: 0.045,
		ggml.Q5_1: 0.048, ggml.Q5_0: 0.053, ggml.Q4_K: 0.09, ggml.Q4_1: 0.098, ggml.Q4_0: 0.107,
		ggml.IQ4_NL: 0.095, ggml.IQ4_XS: 0.096, ggml.Q3_K: 0.19, ggml.Q2_K: 0.37,
	}
	for _, ty := range []ggml.Type{ggml.F16, ggml.Q8_0, ggml.Q6_K, ggml.Q5_K, ggml.Q5_1, ggml.Q5_0, ggml.Q4_K, ggml.Q4_1, ggml.Q4_0,
		ggml.IQ4_NL, ggml.IQ4_XS, ggml.Q3_K, ggml.Q2_K} {
		rb, _ := ty.RowBytes(rowLen)
		q := make([]byte, rb*nrows)
		if err := Quantize(ty, x, rowLen, q, 0); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := testDequant(ty, q, y); err != nil {
			t.Fatal(err)
		}
		// kernels.Dequant (the engine's reader) must see the same values.
		yk := make([]float32, len(x))
		kernels.Dequant(ty, q, yk)
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(yk[i]) {
				t.Fatalf("%v: kernels.Dequant value %d = %v, test dequantizer %v", ty, i, yk[i], y[i])
			}
		}
		rel := rmsDiff(x, y) / rmsOf(x)
		t.Logf("%-5s relative rms error %.5f (%.3f bits/weight)", ty, rel, float64(8*rb)/rowLen)
		if rel > bounds[ty] {
			t.Errorf("%v: relative rms error %.5f above %.5f", ty, rel, bounds[ty])
		}
	}
}

func TestThreadsDoNotChangeBytes(t *testing.T) {
	x := gaussianRows(256*100, 3)
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.Q5_0, ggml.Q2_K, ggml.Q3_K, ggml.IQ4_XS, ggml.IQ4_NL} {
		rb, _ := ty.RowBytes(256)
		a, b := make([]byte, rb*100), make([]byte, rb*100)
		if err := Quantize(ty, x, 256, a, 1); err != nil {
			t.Fatal(err)
		}
		if err := Quantize(ty, x, 256, b, 7); err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%v: 1 and 7 threads give different bytes", ty)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	// Zeros, a constant, and a single spike must not produce NaN/Inf.
	rows := [][]float32{make([]float32, 256), make([]float32, 256), make([]float32, 256)}
	for i := range rows[1] {
		rows[1][i] = 0.5
	}
	rows[2][17] = -3
	for _, ty := range []ggml.Type{ggml.Q8_0, ggml.Q6_K, ggml.Q5_K, ggml.Q5_1, ggml.Q5_0, ggml.Q4_K, ggml.Q4_1, ggml.Q4_0,
		ggml.Q3_K, ggml.Q2_K, ggml.IQ4_XS, ggml.IQ4_NL} {
		for ri, x := range rows {
			rb, _ := ty.RowBytes(256)
			q := make([]byte, rb)
			if err := QuantizeRow(ty, x, q); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, 256)
			if err := testDequant(ty, q, y); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				if math.IsNaN(float64(y[i])) || math.IsInf(float64(y[i]), 0) || math.Abs(float64(y[i]-x[i])) > 0.3 {
					t.Fatalf("%v row %d: element %d = %v, want ≈ %v", ty, ri, i, y[i], x[i])
				}
			}
		}
	}
	if err := QuantizeRow(ggml.Q4_K, make([]float32, 100), make([]byte, 144)); err == nil {
		t.Error("Q4_K accepted a row of 100 values")
	}
	if err := QuantizeRow(ggml.Q8_K, make([]float32, 256), make([]byte, 292)); err == nil {
		t.Error("Q8_K (activation-only type) accepted")
	}
}

// TestWholeFileVsLlamaQuantize requantizes every quantized tensor of the
// quantized minis and stories260K files from their F16/F32 sources and
// compares with llama-quantize's bytes and error, type by type.
func TestWholeFileVsLlamaQuantize(t *testing.T) {
	tt := loadTensorTypes(t)
	for _, pair := range [][2]string{
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q4_K_M.gguf"},
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q5_K_M.gguf"},
		// Q2_K, Q3_K and IQ4_XS (the CLI test covers all five new files).
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q2_K.gguf"},
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-IQ4_XS.gguf"},
		{"stories260K-F32.gguf", "stories260K-Q4_K_M.gguf"},
		{"stories260K-F32.gguf", "stories260K-Q4_0.gguf"},
		{"stories260K-F32.gguf", "stories260K-Q8_0.gguf"},
	} {
		srcModel, model := pair[0], pair[1]
		fb, err := os.ReadFile(filepath.Join(shared, "models", model))
		if err != nil {
			t.Skipf("model not available: %v", err)
		}
		type acc struct {
			ours, theirs, n float64
			same, blocks    int
		}
		per := map[ggml.Type]*acc{}
		for name, info := range tt[model] {
			ty, _ := ggml.TypeByName(info.Type)
			if !isQuantized(ty) {
				continue
			}
			rowLen, nrows := int(info.Ne[0]), int(info.Ne[1])
			orig := f16Rows(t, srcModel, name, rowLen, nrows)
			rb, _ := ty.RowBytes(int64(rowLen))
			theirs := fb[info.Offset : info.Offset+rb*int64(nrows)]
			ours := make([]byte, len(theirs))
			if err := Quantize(ty, orig, rowLen, ours, 0); err != nil {
				t.Fatal(err)
			}
			a := per[ty]
			if a == nil {
				a = &acc{}
				per[ty] = a
			}
			bb := ty.BlockBytes()
			for b := 0; b < len(ours)/bb; b++ {
				if string(ours[b*bb:(b+1)*bb]) == string(theirs[b*bb:(b+1)*bb]) {
					a.same++
				}
				a.blocks++
			}
			y1, y2 := make([]float32, len(orig)), make([]float32, len(orig))
			if err := testDequant(ty, ours, y1); err != nil {
				t.Fatal(err)
			}
			if err := testDequant(ty, theirs, y2); err != nil {
				t.Fatal(err)
			}
			r1, r2 := rmsDiff(y1, orig), rmsDiff(y2, orig)
			a.ours += r1 * r1 * float64(len(orig))
			a.theirs += r2 * r2 * float64(len(orig))
			a.n += float64(len(orig))
		}
		for ty, a := range per {
			ro, rt := math.Sqrt(a.ours/a.n), math.Sqrt(a.theirs/a.n)
			t.Logf("%s %-5s %d/%d blocks byte-identical; rms err ours %.6g, llama.cpp %.6g (ratio %.5f)", model, ty, a.same, a.blocks, ro, rt, ro/rt)
			if ro > rt*1.02 {
				t.Errorf("%s %v: rms error %.6g worse than llama.cpp's %.6g", model, ty, ro, rt)
			}
		}
	}
}

// bestIndexBisect is ggml's best_index_int8 written out as it is (the
// reference iq4Index must agree with).
func bestIndexBisect(x float32) uint8 {
	v := kvaluesIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(v[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(v[mu-1]) < float32(v[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// TestIQ4Index compares the table lookup with ggml's bisection on every
// float32 within 64 ulps of each integer and half-integer in [−130, 130]
// (levels and midpoints), on tiny values around 0, and on random values.
func TestIQ4Index(t *testing.T) {
	check := func(x float32) {
		if got, want := iq4Index(x), bestIndexBisect(x); got != want {
			t.Fatalf("iq4Index(%v) = %d, bisection %d", x, got, want)
		}
	}
	for h := -260; h <= 260; h++ {
		c := float32(h) / 2
		u := math.Float32bits(c)
		for d := -64; d <= 64; d++ {
			if c == 0 {
				check(math.Float32frombits(uint32(64 + d))) // ±tiny
				check(-math.Float32frombits(uint32(64 + d)))
				continue
			}
			check(math.Float32frombits(uint32(int64(u) + int64(d))))
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 1_000_000 {
		check(float32(r.Float64()*300 - 150))
	}
	if iq4Index(float32(math.NaN())) != 15 {
		t.Error("NaN does not give 15 as in ggml")
	}
}

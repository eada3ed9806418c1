package kernels

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ---- conversions ----

func TestF16RoundTripAllHalves(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f {
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, f, g)
		}
	}
	require.Equal(t, float32(65504), F16ToF32(0x7bff))
	require.Equal(t, float32(math.Ldexp(1, -24)), F16ToF32(1))
	require.Equal(t, float32(-2), F16ToF32(0xc000))
}

// F32ToF16 must pick the nearest half, ties to the even one (checked against
// its neighbours in float64, so the test does not trust the converter).
func TestF32ToF16Nearest(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	check := func(f float32) {
		h := F32ToF16(f)
		got := float64(F16ToF32(h))
		if math.Abs(float64(f)) >= 65520 {
			require.True(t, math.IsInf(got, 0), "%g -> %#04x", f, h)
			return
		}
		err := math.Abs(got - float64(f))
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7fff >= 0x7c00 || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			v := float64(F16ToF32(nb))
			if (v < 0) != (got < 0) && got != 0 {
				continue
			}
			e := math.Abs(v - float64(f))
			if e < err || (e == err && h&1 == 1) {
				t.Fatalf("%g (%#08x) -> %#04x (%g), neighbour %#04x (%g) is nearer or even", f, math.Float32bits(f), h, got, nb, v)
			}
		}
	}
	for i := 0; i < 200000; i++ {
		// magnitudes from deep subnormal to overflow
		f := float32(math.Ldexp(rng.Float64()+0.5, rng.Intn(46)-30))
		if rng.Intn(2) == 0 {
			f = -f
		}
		check(f)
	}
	// exact ties: half-way between two halves, in normal and subnormal range
	for h := uint16(1); h < 0x7bff; h += 37 {
		a, b := float64(F16ToF32(h)), float64(F16ToF32(h+1))
		check(float32((a + b) / 2))
	}
	check(65519)
	check(65520)
	check(float32(math.Ldexp(1, -25)))
	check(float32(math.Ldexp(1.5, -25)))
}

// ---- known-answer dequantization from llama.cpp ----

type dequantEntry struct {
	Type      string `json:"type"`
	TypeID    uint32 `json:"ggml_type_id"`
	RowLength int    `json:"row_length"`
	NRows     int    `json:"n_rows"`
	RawFile   string `json:"raw_file"`
	F32File   string `json:"f32_file"`
}

func sharedDir(t *testing.T) string {
	dir := filepath.Join("..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "ref", "dequant", "index.json")); err != nil {
		t.Skipf("shared reference data not found at %s (need ../shared next to the repo): %v", dir, err)
	}
	return dir
}

func TestDequantKnownAnswers(t *testing.T) {
	dir := sharedDir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "ref", "dequant", "index.json"))
	require.NoError(t, err)
	var idx struct {
		Entries []dequantEntry `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(raw, &idx))
	require.NotEmpty(t, idx.Entries)
	// Every type Woolly reads that has files here must be checked; entries
	// of types it does not read (yet) are skipped, by name.
	mustCover := []Type{F16, Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS}
	covered := map[Type]bool{}
	for _, e := range idx.Entries {
		if ty := Type(e.TypeID); ty.Known() {
			covered[ty] = true
		} else {
			t.Logf("skipping %s: type %s (id %d) is not supported", e.RawFile, e.Type, e.TypeID)
		}
	}
	for _, ty := range mustCover {
		require.True(t, covered[ty], "no known-answer entry of type %v in the index", ty)
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, e := range idx.Entries {
			ty := Type(e.TypeID)
			if !ty.Known() {
				continue
			}
			require.Equal(t, e.Type, ty.String())
			src, err := os.ReadFile(filepath.Join(dir, e.RawFile))
			require.NoError(t, err)
			wantRaw, err := os.ReadFile(filepath.Join(dir, e.F32File))
			require.NoError(t, err)
			n := e.RowLength * e.NRows
			require.Equal(t, 4*n, len(wantRaw))
			got := make([]float32, n)
			Dequant(ty, src, got)
			for i := range got {
				w := binary.LittleEndian.Uint32(wantRaw[4*i:])
				if math.Float32bits(got[i]) != w {
					t.Fatalf("%s element %d: got %g (%#08x), want %g (%#08x)", e.RawFile, i, got[i],
						math.Float32bits(got[i]), math.Float32frombits(w), w)
				}
			}
		}
	})
}

// ---- activation quantization, re-derived in Go from docs/formats.md ----

func goQuantizeQ8K(x []float32) []byte {
	out := make([]byte, len(x)/256*292)
	for b := 0; b < len(x)/256; b++ {
		xs, blk := x[b*256:(b+1)*256], out[b*292:(b+1)*292]
		var amax, mx float32
		for _, v := range xs {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			continue // d = 0, qs = 0, bsums = 0
		}
		iscale := float32(-127) / mx
		for j, v := range xs {
			q := math.RoundToEven(float64(float32(iscale * v)))
			if q > 127 {
				q = 127
			}
			blk[4+j] = byte(int8(q))
		}
		for g := 0; g < 16; g++ {
			s := 0
			for j := 0; j < 16; j++ {
				s += int(int8(blk[4+16*g+j]))
			}
			binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(float32(1)/iscale))
	}
	return out
}

func goQuantizeQ80(x []float32) []byte {
	out := make([]byte, len(x)/32*34)
	for b := 0; b < len(x)/32; b++ {
		xs, blk := x[b*32:(b+1)*32], out[b*34:(b+1)*34]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j, v := range xs {
			blk[2+j] = byte(int8(math.RoundToEven(float64(float32(v * id)))))
		}
	}
	return out
}

// activation vectors that stress the rules: ties, a dominant negative, zero
// blocks, values that round to exactly .5 after scaling.
func actInputs(n int, rng *rand.Rand) map[string][]float32 {
	in := map[string][]float32{}
	in["normal"] = randomF32(n, rng)
	z := make([]float32, n)
	in["zero"] = z
	ties := make([]float32, n)
	for i := range ties {
		ties[i] = float32(rng.Intn(255)-127) / 2 // many exact .5 after scaling by 1
	}
	if n > 0 {
		ties[0] = 127
	}
	in["ties"] = ties
	mixed := randomF32(n, rng)
	for i := 0; i < n; i += 64 {
		mixed[i] = -50 // negative max
		if i+32 < n {
			for j := i + 32; j < min(i+64, n); j++ {
				mixed[j] = 0 // zero 32-blocks
			}
		}
	}
	in["mixed"] = mixed
	tiny := randomF32(n, rng)
	for i := range tiny {
		tiny[i] *= 1e-30
	}
	in["tiny"] = tiny
	big := randomF32(n, rng)
	for i := range big {
		big[i] *= 1e30
	}
	in["big"] = big
	return in
}

func TestQuantizeActMatchesRules(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, n := range []int{0, 256, 512, 4096} {
			for name, x := range actInputs(n, rng) {
				got := make([]byte, n/256*292)
				QuantizeAct(Q8_K, x, got)
				require.Equal(t, goQuantizeQ8K(x), got, "Q8_K %s n=%d", name, n)
			}
		}
		for _, n := range []int{0, 32, 64, 96, 4096} {
			for name, x := range actInputs(n, rng) {
				got := make([]byte, n/32*34)
				QuantizeAct(Q8_0, x, got)
				require.Equal(t, goQuantizeQ80(x), got, "Q8_0 %s n=%d", name, n)
			}
		}
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1000} {
			x := randomF32(n, rng)
			got := make([]byte, 2*n)
			QuantizeAct(F16, x, got)
			for i := range x {
				require.Equal(t, F32ToF16(x[i]), binary.LittleEndian.Uint16(got[2*i:]))
			}
			got32 := make([]byte, 4*n)
			QuantizeAct(F32, x, got32)
			for i := range x {
				require.Equal(t, math.Float32bits(x[i]), binary.LittleEndian.Uint32(got32[4*i:]))
			}
		}
	})
}

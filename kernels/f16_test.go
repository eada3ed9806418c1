package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The Go conversions (package ggml) and csrc's give the same bits: every half,
// and f32 values around every rounding boundary, subnormals, infinities and
// NaNs.
func TestF16ConversionMatchesC(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		g, c := F16ToF32(uint16(h)), f16ToF32C(uint16(h))
		if math.Float32bits(g) != math.Float32bits(c) {
			t.Fatalf("F16ToF32(%#04x) = %#08x, C %#08x", h, math.Float32bits(g), math.Float32bits(c))
		}
	}
	check := func(f float32) {
		if g, c := F32ToF16(f), f32ToF16C(f); g != c {
			t.Fatalf("F32ToF16(%g, bits %#08x) = %#04x, C %#04x", f, math.Float32bits(f), g, c)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := math.Float32bits(f16ToF32C(uint16(h)))
		for _, d := range []int32{-1, 0, 1, 0x1000, 0xfff, 0x1001, -0x1000} {
			check(math.Float32frombits(uint32(int32(f) + d)))
		}
	}
	for _, f := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65520, 65519.99, 1e-8, -1e-8, 5.96e-8, 2.98e-8,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32} {
		check(f)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1<<20; i++ {
		check(math.Float32frombits(r.Uint32()))
	}
}

package ggml

import (
	"math"
	"testing"
)

// bf16 is the top half of an f32: widening is exact, rounding goes to the
// nearest even and keeps NaNs quiet NaNs. (The f16 conversions are checked
// bit for bit against csrc's in package kernels.)
func TestBF16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := BF16ToF32(uint16(h))
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		if f == f && F32ToBF16(f) != uint16(h) {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, F32ToBF16(f))
		}
	}
	for _, c := range []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above the tie
		{0x7f7fffff, 0x7f80}, // max f32 rounds to infinity
		{0x7f800001, 0x7fc0}, // signalling NaN becomes quiet
	} {
		if got := F32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
}

package ggml

import "math"

// The project's one Go definition of the f16 <-> f32 conversions; the C
// kernels have theirs in csrc (k_f16_to_f32, k_f32_to_f16), and a test in
// kernels holds the two to the same bits.

// F32ToF16 converts f32 to IEEE half bits, rounding to nearest even,
// subnormals included (like F16C's _cvtss_sh(x, 0) and csrc's
// k_f32_to_f16: TestF16ConversionMatchesC checks them against each other).
// Pure Go, so per-value callers (quantizers) pay no cgo call.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 112 // half exponent field
	if e >= 31 {
		return sign | 0x7c00
	}
	if e >= 1 {
		h := uint32(e)<<10 | mant>>13
		rem := mant & 0x1fff
		if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, up to infinity: still correct
		}
		return sign | uint16(h)
	}
	// Subnormal half (or zero): count of 2^-24 units is M >> (14 - e).
	if exp == 0 {
		return sign // f32 subnormals are far below half's range
	}
	m := mant | 0x800000
	s := uint32(14 - e)
	if s > 24 {
		return sign
	}
	q := m >> s
	rem := m & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return sign | uint16(q)
}

// F16ToF32 converts IEEE half bits to f32 (exact; as csrc's k_f16_to_f32).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// subnormal: normalise
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// BF16ToF32 widens bfloat16 bits to f32 (exact: bf16 is the top half of an
// f32).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f32 to bfloat16 bits, to nearest even; a NaN stays a
// quiet NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}

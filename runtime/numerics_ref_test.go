package runtime

// Go transcriptions of the reference build's numerics that the kernels
// reproduce (kernels.RoPERows, kernels.SwiGLU, f16 conversion through
// kernels.QuantizeAct / Dequant) and that the attention transcriptions in
// attention_test.go use: the specification the kernels are held to, bit for
// bit, in numerics_test.go.

import (
	"math"
	"testing"
)

// pow2 returns 2^e for -1022 <= e <= 1023.
func pow2(e int) float64 { return math.Float64frombits(uint64(e+1023) << 52) }

// roundF16 rounds x to the nearest f16 value (ties to even, subnormals
// kept, overflow to ±Inf), returned as a float32.
func roundF16(x float32) float32 {
	b := math.Float32bits(x)
	a := b & 0x7fffffff
	if a >= 0x477ff000 { // |x| >= 65520 (rounds to Inf), Inf or NaN
		if a > 0x7f800000 {
			return x
		}
		return math.Float32frombits(b&0x80000000 | 0x7f800000)
	}
	if a >= 0x38800000 { // f16 normal range: keep 10 mantissa bits, ties to even
		b += 0xfff + (b>>13)&1
		return math.Float32frombits(b &^ 0x1fff)
	}
	// f16 subnormals: multiples of 2^-24.
	return float32(math.RoundToEven(float64(x)*pow2(24)) * pow2(-24))
}

// vexpf is ggml's 16-lane AVX-512 exp approximation (ggml_v_expf, after
// ARM's optimized routines; max error 1.45 + 0.5 ulp), one lane at a time.
func vexpf(x float32) float32 {
	const r = 0x1.8p23
	z := fmaf(x, 0x1.715476p+0, r)
	n := z - r
	if n > 192 || n < -192 {
		return float32(math.Exp(float64(x))) // Inf or 0 after the SiLU division either way
	}
	b := fmaf(-n, 0x1.7f7d1cp-20, fmaf(-n, 0x1.62e4p-1, x))
	u := b * b
	j := fmaf(fmaf(fmaf(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fmaf(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fmaf(0x1.ffffecp-1, b, 1))
	return float32(float64(j) * pow2(int(n)))
}

// siluMul sets out[i] = silu(gate[i]) * up[i] over rows of n values as the
// reference's swiglu does: 16-wide blocks with vexpf, the tail with expf.
func siluMul(out, gate, up []float32, n int) {
	for r := 0; r+n <= len(out); r += n {
		o, g, u := out[r:r+n], gate[r:r+n], up[r:r+n]
		i, nb := 0, n&^15
		for ; i < nb; i++ {
			x := g[i]
			o[i] = x / (1 + vexpf(-x)) * u[i]
		}
		for ; i < n; i++ {
			x := g[i]
			o[i] = x / (1 + expf(-x)) * u[i]
		}
	}
}

// rope rotates the first nRot dims of each head of x by the angles whose
// cos/sin are given (nRot/2 entries), pairs (2i, 2i+1) or, with neox,
// (i, i+nRot/2). The first product of each output is fused with the sum,
// as the reference build's compiler contracts x0*cos - x1*sin.
func rope(x []float32, nHeads, headDim, nRot int, cos, sin []float32, neox bool) {
	half := nRot / 2
	for h := 0; h < nHeads; h++ {
		xh := x[h*headDim : (h+1)*headDim]
		for i := 0; i < half; i++ {
			i0, i1 := 2*i, 2*i+1
			if neox {
				i0, i1 = i, i+half
			}
			c, s := cos[i], sin[i]
			x0, x1 := xh[i0], xh[i1]
			xh[i0] = fmaf(x0, c, -float32(x1*s))
			xh[i1] = fmaf(x0, s, float32(x1*c))
		}
	}
}

// halfTab maps every f16 bit pattern to its f32 value.
var halfTab = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		sign := uint32(h&0x8000) << 16
		exp := uint32(h>>10) & 0x1f
		man := uint32(h & 0x3ff)
		switch {
		case exp == 0x1f:
			t[h] = math.Float32frombits(sign | 0x7f800000 | man<<13)
		case exp == 0: // zero or subnormal: man * 2^-24
			t[h] = math.Float32frombits(sign | math.Float32bits(float32(man)*0x1p-24))
		default:
			t[h] = math.Float32frombits(sign | (exp+112)<<23 | man<<13)
		}
	}
	return &t
}()

// toHalf returns the f16 bits nearest to x (ties to even).
func toHalf(x float32) uint16 {
	r := roundF16(x)
	b := math.Float32bits(r)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00
	case a >= 0x47800000: // Inf (roundF16 saturates to it)
		return sign | 0x7c00
	case a >= 0x38800000:
		return sign | uint16((a>>23-112)<<10) | uint16(a>>13&0x3ff)
	}
	return sign | uint16(math.Float32frombits(a)*0x1p24) // subnormal: an exact multiple of 2^-24
}

// TestGlibcExpLogf: expf and logf give glibc's results on inputs where
// glibc's differ from the correctly rounded ones (bits taken from glibc
// 2.36's expf/logf on x86-64), and the correctly rounded result elsewhere
// far from a tie.
func TestGlibcExpLogf(t *testing.T) {
	for _, c := range []struct {
		f       func(float32) float32
		name    string
		in, out uint32
	}{
		{logf, "logf", 1065971132, 1032949649}, {logf, "logf", 1086892093, 1072364935},
		{logf, "logf", 1069279911, 1053071221}, {logf, "logf", 1066114456, 1035068686},
		{logf, "logf", 1065526404, 1017604125}, {logf, "logf", 1075963972, 1064147619},
		{expf, "expf", 1084973414, 1129565348}, {expf, "expf", 1104979222, 1398628940},
		{expf, "expf", 1103992345, 1376178084}, {expf, "expf", 3243187453, 908088604},
		{expf, "expf", 1104264931, 1382202544}, {expf, "expf", 1104495538, 1387266138},
	} {
		x := math.Float32frombits(c.in)
		if got := math.Float32bits(c.f(x)); got != c.out {
			t.Errorf("%s(%g) = %08x, glibc %08x", c.name, x, got, c.out)
		}
		if exact := float32(math.Log(float64(x))); c.name == "logf" && math.Float32bits(exact) == c.out {
			t.Errorf("logf(%g): case does not tell glibc from exact rounding", x)
		}
	}
	if logf(1) != 0 || logf(2) != float32(math.Ln2) || expf(0) != 1 {
		t.Errorf("logf(1) %g, logf(2) %g, expf(0) %g", logf(1), logf(2), expf(0))
	}
	if !math.IsInf(float64(logf(0)), -1) || !math.IsNaN(float64(logf(-1))) {
		t.Errorf("logf(0) %g, logf(-1) %g", logf(0), logf(-1))
	}
}

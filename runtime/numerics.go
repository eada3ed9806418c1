package runtime

// Scalar numerics that reproduce, bit for bit, what the reference build
// (llama.cpp's x86 CPU backend, AVX-512, glibc) computes in the few places
// where a last-bit difference is amplified by the int8 quantization of the
// next activation: f16 rounding, expf, and SiLU.

import "math"

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
	e := int(a>>23) - 127
	if e < -14 {
		e = -14 // f16 subnormals: quantum 2^-24
	}
	return float32(math.RoundToEven(float64(x)*pow2(10-e)) * pow2(e-10))
}

// expTab[i] holds the bits of 2^(i/32) minus i<<47, the table of glibc's
// expf (so that adding k<<47 yields 2^(k/32)).
var expTab = func() (t [32]uint64) {
	for i := range t {
		t[i] = math.Float64bits(math.Exp2(float64(i)/32)) - uint64(i)<<47
	}
	return
}()

// expf is glibc's expf (the optimized-routines algorithm: a 32-entry table
// of 2^(i/32) and a cubic in double), whose result differs from the
// correctly rounded one in about 1 of 1500 inputs.
func expf(x float32) float32 {
	if !(x > -103) || x > 88 { // NaN, underflow or overflow: libm agrees with the exact value
		return float32(math.Exp(float64(x)))
	}
	const n = 32
	z := (0x1.71547652b82fep+0 * n) * float64(x)
	const shift = 0x1.8p+52
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	s := math.Float64frombits(expTab[ki%n] + ki<<47)
	const (
		c0 = 0x1.c6af84b912394p-5 / n / n / n
		c1 = 0x1.ebfce50fac4f3p-3 / n / n
		c2 = 0x1.62e42ff0c52d6p-1 / n
	)
	p := c0*r + c1
	y := c2*r + 1
	y = p*(r*r) + y
	return float32(y * s)
}

func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// vexpf is ggml's 16-lane AVX-512 exp approximation (ggml_v_expf, after
// ARM's optimized routines; max error 1.45 + 0.5 ulp), one lane at a time.
func vexpf(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	if n > 192 || n < -192 {
		return float32(math.Exp(float64(x))) // Inf or 0 after the SiLU division either way
	}
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fma32(0x1.ffffecp-1, b, 1))
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

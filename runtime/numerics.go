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
	if a >= 0x38800000 { // f16 normal range: keep 10 mantissa bits, ties to even
		b += 0xfff + (b>>13)&1
		return math.Float32frombits(b &^ 0x1fff)
	}
	// f16 subnormals: multiples of 2^-24.
	return float32(math.RoundToEven(float64(x)*pow2(24)) * pow2(-24))
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

// siluMulRange is siluMul on elements [i0, i1) of one row (len(out) its
// length): each element gets exactly the value siluMul gives it.
func siluMulRange(out, gate, up []float32, i0, i1 int) {
	nb := len(out) &^ 15
	o, g, u := out[:i1], gate[:i1], up[:i1]
	i := i0
	for ; i < min(nb, i1); i++ {
		x := g[i]
		o[i] = x / (1 + vexpf(-x)) * u[i]
	}
	for ; i < i1; i++ {
		x := g[i]
		o[i] = x / (1 + expf(-x)) * u[i]
	}
}

// glibc's single-precision sine and cosine (the optimized-routines
// algorithm, as built for x86-64 with FMA): reduction by pi/2 in double, then
// a polynomial in double. Its results differ from the correctly rounded ones
// in about 1 % of RoPE angles, and the reference computes the RoPE tables
// with it.

type sincosTab struct {
	c0, c1, c2, c3, c4 float64
}

var (
	scSign = [4]float64{1, -1, -1, 1}
	scTab  = [2]sincosTab{
		{0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16},
		{-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16},
	}
	// 4/pi to 192 bits, 8 new bits per entry.
	invPio4 = [24]uint32{
		0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
		0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
		0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
	}
)

const (
	scHpiInv = 0x1.45F306DC9C883p+23 // 2/pi * 2^24
	scHpi    = 0x1.921FB54442D18p0
	scPi63   = 0x1.921FB54442D18p-62
	scS1     = -0x1.555545995a603p-3
	scS2     = 0x1.1107605230bc4p-7
	scS3     = -0x1.994eb3774cf24p-13
)

func abstop12(y float32) uint32 { return math.Float32bits(y) >> 20 & 0x7ff }

// sinfPoly evaluates the sine (odd == false) or cosine polynomial.
func sinfPoly(x, x2 float64, t *sincosTab, odd bool) float32 {
	if !odd {
		x3 := x * x2
		s1 := math.FMA(x2, scS3, scS2)
		x7 := x3 * x2
		s := math.FMA(x3, scS1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, t.c4, t.c3)
	c1 := math.FMA(x2, t.c1, t.c0)
	x6 := x4 * x2
	c := math.FMA(x4, t.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// reduceLarge reduces |y| >= 120 by pi/2 with a 192-bit 4/pi.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * scPi63, int(n)
}

// sincosf returns glibc's (sinf(y), cosf(y)) for finite y.
func sincosf(y float32) (float32, float32) {
	x := float64(y)
	t := &scTab[0]
	switch top := abstop12(y); {
	case top < abstop12(0x1.921FB6p-1): // |y| < pi/4
		x2 := x * x
		s, c := sinfPoly(x, x2, t, false), sinfPoly(x, x2, t, true)
		if top < abstop12(0x1p-12) {
			c = 1
			if top < abstop12(0x1p-126) {
				s = y
			}
		}
		return s, c
	case top < abstop12(120):
		r := x * scHpiInv
		n := int((int32(r) + 0x800000) >> 24)
		x = math.FMA(-float64(n), scHpi, x)
		sg := scSign[n&3]
		if n&2 != 0 {
			t = &scTab[1]
		}
		return sinfPoly(x*sg, x*x, t, n&1 != 0), sinfPoly(x*sg, x*x, t, n&1 == 0)
	case top < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		x, n := reduceLarge(xi)
		sg := scSign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			t = &scTab[1]
		}
		return sinfPoly(x*sg, x*x, t, n&1 != 0), sinfPoly(x*sg, x*x, t, n&1 == 0)
	}
	nan := float32(math.NaN())
	return nan, nan
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
			xh[i0] = fma32(x0, c, -float32(x1*s))
			xh[i1] = fma32(x0, s, float32(x1*c))
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

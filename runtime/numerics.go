package runtime

// Scalar numerics that reproduce, bit for bit, what the reference build
// (llama.cpp's x86 CPU backend, AVX-512, glibc) computes in the few places
// where a last-bit difference is amplified by the int8 quantization of the
// next activation. The RoPE tables are computed here; f16 rounding, RoPE
// itself and SwiGLU run in the kernels, whose Go transcriptions (the
// specification they are tested against) are in numerics_ref_test.go.

import "math"

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

// glibc's single-precision exp (the optimized-routines algorithm): x/ln2
// split by a 32-entry table of 2^(i/32), a cubic in double for the rest.
// About 1 in 2000 of its results differ from the correctly rounded ones;
// the reference's scalar sigmoid, softplus and the Gated DeltaNet decay
// call it. Out of (-103, 88] the double exp rounded (overflow, underflow).
func expf(x float32) float32 {
	if !(x > -103) || x > 88 {
		return float32(math.Exp(float64(x)))
	}
	const shift = 0x1.8p+52
	z := float64(0x1.71547652b82fep+0*32) * float64(x)
	kd := float64(z + shift)
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	i := ki % 32
	// 2^(i/32) (expfTab), its exponent raised by ki/32.
	s := math.Float64frombits(expfTab[i] - i<<47 + ki<<47)
	p := float64(0x1.c6af84b912394p-5/32/32/32*r) + 0x1.ebfce50fac4f3p-3/32/32
	y := float64(0x1.62e42ff0c52d6p-1/32*r) + 1
	y = float64(p*float64(r*r)) + y
	return float32(y * s)
}

// expfTab holds the bits of 2^(i/32), the doubles nearest (math.Exp2 is
// exact to within the rounding of these: the values of glibc's table).
var expfTab = func() (t [32]uint64) {
	for i := range t {
		t[i] = math.Float64bits(math.Exp2(float64(i) / 32))
	}
	return t
}()

// glibc's single-precision log (the optimized-routines algorithm): x =
// 2^k z with z in [0x3f330000, 2*0x3f330000) as float bits, z/c - 1 for c
// the centre of one of 16 subintervals, and a cubic in double. About 2 %
// of its results differ from the correctly rounded ones (the reference's
// softplus calls it). For positive normal x; others through math.Log.
var logfTab = [16][2]float64{ // 1/c, log(c)
	{0x1.661ec79f8f3bep+0, -0x1.57bf7808caadep-2},
	{0x1.571ed4aaf883dp+0, -0x1.2bef0a7c06ddbp-2},
	{0x1.49539f0f010bp+0, -0x1.01eae7f513a67p-2},
	{0x1.3c995b0b80385p+0, -0x1.b31d8a68224e9p-3},
	{0x1.30d190c8864a5p+0, -0x1.6574f0ac07758p-3},
	{0x1.25e227b0b8eap+0, -0x1.1aa2bc79c81p-3},
	{0x1.1bb4a4a1a343fp+0, -0x1.a4e76ce8c0e5ep-4},
	{0x1.12358f08ae5bap+0, -0x1.1973c5a611cccp-4},
	{0x1.0953f419900a7p+0, -0x1.252f438e10c1ep-5},
	{0x1p+0, 0},
	{0x1.e608cfd9a47acp-1, 0x1.aa5aa5df25984p-5},
	{0x1.ca4b31f026aap-1, 0x1.c5e53aa362eb4p-4},
	{0x1.b2036576afce6p-1, 0x1.526e57720db08p-3},
	{0x1.9c2d163a1aa2dp-1, 0x1.bc2860d22477p-3},
	{0x1.886e6037841edp-1, 0x1.1058bc8a07ee1p-2},
	{0x1.767dcf5534862p-1, 0x1.4043057b6ee09p-2},
}

func logf(x float32) float32 {
	ix := math.Float32bits(x)
	if ix-0x00800000 >= 0x7f800000-0x00800000 { // zero, subnormal, negative, inf, nan
		return float32(math.Log(float64(x)))
	}
	const ln2 = 0x1.62e42fefa39efp-1
	const a0, a1, a2 = -0x1.00ea348b88334p-2, 0x1.5575b0be00b6ap-2, -0x1.ffffef20a4123p-2
	tmp := ix - 0x3f330000
	i := (tmp >> 19) % 16
	k := int32(tmp) >> 23
	z := float64(math.Float32frombits(ix - tmp&(0x1ff<<23)))
	invc, logc := logfTab[i][0], logfTab[i][1]
	r := float64(z*invc) - 1
	y0 := logc + float64(float64(k)*ln2)
	r2 := r * r
	y := float64(a1*r) + a2
	y = float64(a0*r2) + y
	y = float64(y*r2) + (y0 + r)
	return float32(y)
}

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

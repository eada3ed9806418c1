package quant

import (
	"fmt"
	"math"
)

// MXFP4 (OCP microscaling FP4): per 32 values one E8M0 exponent byte e and
// 16 bytes of 4-bit E2M1 codes (element j < 16 in the low nibble of byte j,
// element j+16 in its high nibble). ggml stores the codes' values doubled,
// {0, 1, 2, 3, 4, 6, 8, 12} and their negatives (codes 8..15), and halves
// the scale: value = 2^(e−128) · doubled value.
//
// The quantizer is ggml's quantize_row_mxfp4_ref:
//   - amax = the largest |x| of the block (NaNs skipped);
//   - e = floorf(log2f(amax)) − 2 + 127 for amax > 0, else 0; the half
//     scale d = 2^(e−128) = 2^(floor(log2 amax) − 3), so amax / d is in
//     [8, 16) and the largest values round to ±12 (6 in E2M1);
//   - each x gets the code whose d · value is nearest, the first code in
//     table order on ties (|value · d − x| in f32, strictly smaller wins).
//
// Two facts of the reference build (gcc, x86-64) are reproduced as well,
// since llama-quantize writes them: the float-to-uint8 conversion of e
// wraps modulo 256 for amax below 2^-125 (e.g. 2^-127 gives e = 254), and
// an infinite amax gives e = 0. llama-quantize then rejects a block with
// e = 255 (ggml_validate_row_data; amax in [2^-126, 2^-125)), and so does
// Woolly (checkMXFP4).

// mxfp4Mag are the doubled E2M1 magnitudes of codes 0..7 (8..15 negate them).
var mxfp4Mag = [8]float32{0, 1, 2, 3, 4, 6, 8, 12}

// mxfp4Exponent is the E8M0 byte of a block whose largest |x| is amax.
func mxfp4Exponent(amax float32) uint8 {
	if !(amax > 0) {
		return 0
	}
	if math.IsInf(float64(amax), 1) {
		return 0 // the reference build converts +inf to uint8 as 0
	}
	// floorf(log2f(amax)): the float64 log2 rounded to f32 gives glibc
	// log2f's floor for every f32 (testdata/mxfp4/log2_floor.txt, tested).
	l := math.Floor(float64(float32(math.Log2(float64(amax)))))
	return uint8(int32(l) - 2 + 127) // below 2^-125: wraps like the reference build
}

// mxfp4Code is the code of x for the half scale d, as ggml's exhaustive
// search of the 16 codes picks it. For x >= 0 no negative code can have a
// strictly smaller error than code 0 (|−v·d − x| >= x = |0·d − x|), and for
// x < 0 no positive one, so only code 0 and the codes of x's sign are
// tried, in table order; the errors |v·d − |x|| do not decrease once
// v·d >= |x|, which ends the search. NaN gives code 0.
func mxfp4Code(x, d float32) uint8 {
	a, base := x, uint8(0)
	if !(x >= 0) {
		a, base = -x, 8
	}
	best, code := a, uint8(0) // code 0: |0·d − x| = |x|
	for k := 1; k < 8; k++ {
		v := mxfp4Mag[k] * d // exact: a small integer times a power of two
		err := float32(math.Abs(float64(v - a)))
		if err < best {
			best, code = err, base+uint8(k)
		} else if v >= a {
			break
		}
	}
	return code
}

// e8m0Half is 2^(e−128) as ggml computes it (e = 255 gives 2^127).
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// rowMXFP4: block = e (1 byte), qs[16] (17 bytes per 32).
func rowMXFP4(x []float32, y []byte) {
	for ib := 0; ib < len(x)/32; ib++ {
		xb, yb := x[32*ib:32*ib+32], y[17*ib:17*ib+17]
		var amax float32
		for _, v := range xb {
			if a := float32(math.Abs(float64(v))); amax < a {
				amax = a
			}
		}
		e := mxfp4Exponent(amax)
		d := e8m0Half(e)
		yb[0] = e
		for j := 0; j < 16; j++ {
			yb[1+j] = mxfp4Code(xb[j], d) | mxfp4Code(xb[j+16], d)<<4
		}
	}
}

// checkMXFP4 rejects blocks with the exponent byte 255, which E8M0
// reserves for NaN and ggml's row validation refuses (llama-quantize fails
// with "quantized data validation failed" on them). The quantizer writes
// it only for a block whose largest magnitude is in [2^-126, 2^-125).
func checkMXFP4(y []byte, rowBytes int) error {
	for off := 0; off < len(y); off += 17 {
		if y[off] == 0xFF {
			return fmt.Errorf("quant: MXFP4 row %d, block %d: largest magnitude in [2^-126, 2^-125) gives the reserved exponent 255 (llama-quantize rejects it too)",
				off/rowBytes, off%rowBytes/17)
		}
	}
	return nil
}

// dequantMXFP4 is the format's value of every element (for tests and
// round trips; the kernels package has the fast one).
func dequantMXFP4(src []byte, dst []float32) {
	for ib := 0; ib < len(dst)/32; ib++ {
		b := src[17*ib:]
		d := e8m0Half(b[0])
		for j := 0; j < 16; j++ {
			lo, hi := b[1+j]&15, b[1+j]>>4
			dst[32*ib+j] = d * mxfp4Value(lo)
			dst[32*ib+j+16] = d * mxfp4Value(hi)
		}
	}
}

// mxfp4Value is the doubled value of code c; code 8 is +0, as ggml's
// integer table gives it.
func mxfp4Value(c uint8) float32 {
	if c&8 != 0 {
		return float32(-int(mxfp4Mag[c&7]))
	}
	return mxfp4Mag[c]
}

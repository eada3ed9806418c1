package quant

import "math"

// The 32-element block types. Each follows ggml's reference rule, which is
// also what llama-quantize uses for them when no importance matrix is given.

// absMaxSigned returns the value of largest magnitude (first one on ties)
// and that magnitude.
func absMaxSigned(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, maxv = a, v
		}
	}
	return
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func minMax(x []float32) (lo, hi float32) {
	lo, hi = float32(math.MaxFloat32), -float32(math.MaxFloat32)
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return
}

// rowQ4_0: d = max / -8 (signed), q = min(15, trunc(x/d + 8.5)).
// Block: d f16, qs[16]; element j (j<16) in the low nibble of qs[j], j+16 in the high nibble.
func rowQ4_0(x []float32, y []byte) {
	forBlocks(x, y, 32, 18, func(xb []float32, yb []byte) {
		id := symmetricHeader(xb, yb, -8)
		for j := 0; j < 16; j++ {
			q0 := min(15, int8(float32(xb[j]*id)+8.5))
			q1 := min(15, int8(float32(xb[j+16]*id)+8.5))
			yb[2+j] = byte(q0) | byte(q1)<<4
		}
	})
}

// forBlocks quantizes x block by block: block runs on each qk values of x
// and the blockBytes bytes of y that encode them.
func forBlocks(x []float32, y []byte, qk, blockBytes int, block func(xb []float32, yb []byte)) {
	for b := 0; b < len(x)/qk; b++ {
		block(x[qk*b:qk*b+qk], y[blockBytes*b:blockBytes*b+blockBytes])
	}
}

// symmetricHeader writes the block header d = max / div (max the signed
// value of largest magnitude, one f16) at the start of yb and returns 1/d (0
// for an all-zero block).
func symmetricHeader(xb []float32, yb []byte, div float32) (id float32) {
	maxv, _ := absMaxSigned(xb)
	d := maxv / div
	putF16(yb, d)
	return recip(d)
}

// affineHeader writes the block header d = (max-min)/levels, m = min (two
// f16) at the start of yb and returns min and 1/d (0 for a constant block).
func affineHeader(xb []float32, yb []byte, levels float32) (lo, id float32) {
	lo, hi := minMax(xb)
	d := (hi - lo) / levels
	putF16(yb, d)
	putF16(yb[2:], lo)
	return lo, recip(d)
}

// recip is 1/d, or 0 for an all-zero block (d == 0).
func recip(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// rowQ4_1: d = (max-min)/15, m = min, q = min(15, trunc((x-min)/d + 0.5)).
// Block: d f16, m f16, qs[16].
func rowQ4_1(x []float32, y []byte) {
	forBlocks(x, y, 32, 20, func(xb []float32, yb []byte) {
		lo, id := affineHeader(xb, yb, 15)
		for j := 0; j < 16; j++ {
			q0 := min(15, int8(float32((xb[j]-lo)*id)+0.5))
			q1 := min(15, int8(float32((xb[j+16]-lo)*id)+0.5))
			yb[4+j] = byte(q0) | byte(q1)<<4
		}
	})
}

// rowQ5_0: d = max / -16, q = min(31, trunc(x/d + 16.5)); the 5th bits go to qh.
// Block: d f16, qh[4] (u32, bit j = 5th bit of element j), qs[16].
func rowQ5_0(x []float32, y []byte) {
	forBlocks(x, y, 32, 22, func(xb []float32, yb []byte) {
		id := symmetricHeader(xb, yb, -16)
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := byte(min(31, int8(float32(xb[j]*id)+16.5)))
			q1 := byte(min(31, int8(float32(xb[j+16]*id)+16.5)))
			yb[6+j] = q0&15 | (q1&15)<<4
			qh |= uint32(q0>>4) << j
			qh |= uint32(q1>>4) << (j + 16)
		}
		yb[2], yb[3], yb[4], yb[5] = byte(qh), byte(qh>>8), byte(qh>>16), byte(qh>>24)
	})
}

// rowQ5_1: d = (max-min)/31, m = min, q = trunc((x-min)/d + 0.5).
// Block: d f16, m f16, qh[4], qs[16].
func rowQ5_1(x []float32, y []byte) {
	forBlocks(x, y, 32, 24, func(xb []float32, yb []byte) {
		lo, id := affineHeader(xb, yb, 31)
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := uint8(float32((xb[j]-lo)*id) + 0.5)
			q1 := uint8(float32((xb[j+16]-lo)*id) + 0.5)
			yb[8+j] = q0&15 | (q1&15)<<4
			qh |= uint32(q0>>4&1) << j
			qh |= uint32(q1>>4&1) << (j + 16)
		}
		yb[4], yb[5], yb[6], yb[7] = byte(qh), byte(qh>>8), byte(qh>>16), byte(qh>>24)
	})
}

// rowQ8_0: d = amax/127, q = roundf(x/d) (half away from zero, as ggml's
// reference quantizer for weights does). Block: d f16, qs[32] int8.
func rowQ8_0(x []float32, y []byte) {
	forBlocks(x, y, 32, 34, func(xb []float32, yb []byte) {
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		id := recip(d)
		putF16(yb, d)
		for j, v := range xb {
			yb[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	})
}

// Products are wrapped in float32(...) before an addition so that no
// compiler fuses them into an FMA: the bytes are the same on every platform.

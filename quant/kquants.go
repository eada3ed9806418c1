package quant

import (
	"math"

	"github.com/woolly-llm/woolly/ggml"
)

// K-quants: super-blocks of 256 elements.
//
// Q4_K and Q5_K: eight sub-blocks of 32 elements, each with its own scale
// and min found by a weighted least-squares search (makeQKX2); the 8 scales
// and 8 mins are then quantized to 6 bits against the super-block's d and
// dmin (f16), and every element is re-quantized with the scale and min a
// reader will actually see.
//
// Q6_K: sixteen sub-blocks of 16 elements, each with a signed scale found
// by makeQX; the 16 scales are quantized to int8 against d = max/-128.
//
// Every product that feeds an addition is wrapped in float32(...) so no
// compiler fuses it into an FMA: the output bytes are the same on every
// platform, and the arithmetic follows ggml's reference code step by step.

const groupMaxEps = 1e-15

// makeQKX2 is ggml's make_qkx2_quants: it quantizes the n values of x
// (n = len(x) ≤ 32) to L in [0, nmax] as x ≈ scale·L − theMin, choosing scale
// and min to minimise Σ w·err over nstep+1 trial inverse scales
// (nmax + rmin + rdelta·is) / (max − min), where err is the squared
// difference, or its absolute value when mad is set (Q2_K). min ≤ 0 always
// (theMin ≥ 0). L is left with the best trial's values.
func makeQKX2(nmax int, x, w []float32, L []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, theMin float32) {
	n := len(x)
	w, L = w[:n], L[:n] // one bounds check here instead of one per access
	var laux [32]uint8
	var lauxF [32]float32 // laux as floats (int→float conversions are not free)
	lf := lauxF[:n]
	// errOf is one element's contribution to the error sum.
	errOf := func(wi, diff float32) float32 {
		if mad {
			return float32(wi * abs32(diff))
		}
		return float32(wi * float32(diff*diff))
	}
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	fmax := float32(nmax)
	iscale := fmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		l := min(nmax, max(0, nearestInt(iscale*(v-lo))))
		L[i] = uint8(l)
		diff := float32(scale*float32(l)) + lo - v
		bestErr += errOf(w[i], diff)
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + fmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := min(nmax, max(0, nearestInt(iscale*(v-lo))))
			laux[i] = uint8(l)
			fl := float32(l)
			lf[i] = fl
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var cur float32
			for i, v := range x {
				diff := float32(thisScale*lf[i]) + thisMin - v
				cur += errOf(w[i], diff)
			}
			if cur < bestErr {
				copy(L, laux[:n])
				bestErr = cur
				scale = thisScale
				lo = thisMin
			}
		}
	}
	return scale, -lo
}

// kScaleMin does the work shared by Q4_K and Q5_K for one super-block:
// it writes d, dmin and the 12 packed scale bytes to hdr[0:16] and leaves
// the final quants (0..nmax) in L.
func kScaleMin(x []float32, nmax int, rmin, rdelta float32, nstep int, L *[256]uint8, hdr []byte) {
	var scales, mins [8]float32
	var weights [32]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xs, weights[:], L[32*j:32*j+32], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := hdr[4:16]
	for i := range sc {
		sc[i] = 0
	}
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&15 | (lm&15)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(hdr[0:], maxScale/63)
	putF16(hdr[2:], maxMin/63)
	d := ggml.F16ToF32(uint16(hdr[0]) | uint16(hdr[1])<<8)
	dmin := ggml.F16ToF32(uint16(hdr[2]) | uint16(hdr[3])<<8)
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		dd := d * float32(s)
		if dd == 0 {
			continue
		}
		dm := float32(dmin * float32(m)) // rounded: x+dm must not become an FMA
		for i := 32 * j; i < 32*j+32; i++ {
			L[i] = uint8(min(nmax, max(0, nearestInt((x[i]+dm)/dd))))
		}
	}
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (docs/formats.md).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&15 | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// rowQ4K: block = d f16, dmin f16, scales[12], qs[128] (144 bytes).
func rowQ4K(x []float32, y []byte) {
	var L [256]uint8
	forBlocks(x, y, 256, 144, func(xb []float32, yb []byte) {
		kScaleMin(xb, 15, -1, 0.1, 20, &L, yb)
		q := yb[16:]
		for c := range 4 { // chunk c: low nibbles = elements 64c.., high = 64c+32..
			for l := range 32 {
				q[32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
			}
		}
	})
}

// rowQ5K: block = d f16, dmin f16, scales[12], qh[32], qs[128] (176 bytes).
func rowQ5K(x []float32, y []byte) {
	var L [256]uint8
	forBlocks(x, y, 256, 176, func(xb []float32, yb []byte) {
		kScaleMin(xb, 31, -0.5, 0.1, 15, &L, yb)
		qh, qs := yb[16:48], yb[48:176]
		for i := range qh {
			qh[i] = 0
		}
		for c := range 4 {
			for l := range 32 {
				l1, l2 := L[64*c+l], L[64*c+32+l]
				if l1 > 15 {
					l1 -= 16
					qh[l] |= 1 << (2 * c)
				}
				if l2 > 15 {
					l2 -= 16
					qh[l] |= 2 << (2 * c)
				}
				qs[32*c+l] = l1 | l2<<4
			}
		}
	})
}

// makeQX6 is ggml's make_qx_quants for nmax = 32 with weights x²: it
// quantizes the 16 values of x to L in [0, 63] (offset 32) and returns the
// signed scale, searching 19 inverse scales −(32 + 0.1·is)/max.
func makeQX6(x []float32, L []uint8) float32 {
	const nmax = 32
	maxv, amax := absMaxSigned(x)
	if amax < groupMaxEps {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	quant := func(iscale float32) (sumlx, suml2 float32) {
		for _, v := range x {
			fl := float32(min(nmax-1, max(-nmax, nearestInt(iscale*v))))
			w := v * v
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		return
	}
	store := func(iscale float32) {
		for i, v := range x {
			L[i] = uint8(nmax + min(nmax-1, max(-nmax, nearestInt(iscale*v))))
		}
	}
	iscale := -nmax / maxv
	store(iscale)
	sumlx, suml2 := quant(iscale)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(nmax + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = quant(iscale)
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			store(iscale)
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// subScales fits each 16-value sub-block of the 256-value block xb with fit
// (its levels into the matching 16 of L) and returns the 16 scales, the
// signed one of largest magnitude and that magnitude.
func subScales[T any](xb []float32, L []T, fit func(x []float32, L []T) float32) (scales [16]float32, maxScale, maxAbs float32) {
	for j := range scales {
		scales[j] = fit(xb[16*j:16*j+16], L[16*j:16*j+16])
	}
	maxScale, maxAbs = absMaxSigned(scales[:])
	return scales, maxScale, maxAbs
}

// rowQ6K: block = ql[128], qh[64], scales[16] int8, d f16 (210 bytes).
func rowQ6K(x []float32, y []byte) {
	var L [256]uint8
	forBlocks(x, y, 256, 210, func(xb []float32, yb []byte) {
		scales, maxScale, maxAbsScale := subScales(xb, L[:], makeQX6)
		if maxAbsScale < groupMaxEps {
			for i := range yb {
				yb[i] = 0
			}
			return
		}
		iscale := -128 / maxScale
		putF16(yb[208:], 1/iscale)
		d := ggml.F16ToF32(uint16(yb[208]) | uint16(yb[209])<<8)
		sc := yb[192:208]
		for ib := range 16 {
			sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		for j := range 16 {
			dd := d * float32(int8(sc[j]))
			if dd == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = uint8(32 + min(31, max(-32, nearestInt(xb[i]/dd))))
			}
		}
		ql, qh := yb[0:128], yb[128:192]
		for h := range 2 {
			Lh, qlh, qhh := L[128*h:], ql[64*h:], qh[32*h:]
			for l := range 32 {
				q1, q2, q3, q4 := Lh[l], Lh[l+32], Lh[l+64], Lh[l+96]
				qlh[l] = q1&15 | (q3&15)<<4
				qlh[l+32] = q2&15 | (q4&15)<<4
				qhh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	})
}

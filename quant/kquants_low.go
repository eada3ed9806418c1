package quant

// Q2_K and Q3_K: super-blocks of 256 elements in sixteen sub-blocks of 16,
// quantized as ggml's reference row quantizers do (which is what
// llama-quantize runs for these types without an importance matrix).
//
// Q2_K: each sub-block gets a scale and a min (makeQKX2 with nmax 3,
// weights |x| and absolute error); the 16 scales and 16 mins are quantized
// to 4 bits against d = max scale / 15 and dmin = max min / 15.
//
// Q3_K: each sub-block gets a signed scale from makeQ3 (quants −4..3); the
// 16 scales are quantized to 6 bits (−32..31) against d = max / −32.
//
// As in kquants.go, every product feeding an addition is wrapped in
// float32(...) so no compiler fuses it into an FMA.

// packQ2Bits stores 256 two-bit values (0..3) as ggml's Q2_K/Q3_K qs: for
// each half h of 128 elements, byte 32h+l holds elements 128h+l, +32, +64,
// +96 in bits 0-1, 2-3, 4-5, 6-7.
func packQ2Bits(L *[256]uint8, qs []byte) {
	qs = qs[:64]
	for h := range 2 {
		Lh := L[128*h : 128*h+128]
		for l := range 32 {
			qs[32*h+l] = Lh[l] | Lh[l+32]<<2 | Lh[l+64]<<4 | Lh[l+96]<<6
		}
	}
}

// rowQ2K: block = scales[16] (low nibble scale, high nibble min), qs[64],
// d f16, dmin f16 (84 bytes).
func rowQ2K(x []float32, y []byte) {
	var L [256]uint8
	var weights [16]float32
	var scales, mins [16]float32
	forBlocks(x, y, 256, 84, func(xb []float32, yb []byte) {
		var maxScale, maxMin float32
		for j := range 16 {
			xs := xb[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2(3, xs, weights[:], L[16*j:16*j+16], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		sc := yb[0:16]
		clear(sc)
		putF16(yb[80:], 0)
		putF16(yb[82:], 0)
		if maxScale > 0 {
			is := 15 / maxScale
			for j := range sc {
				sc[j] = byte(nearestInt(is * scales[j]))
			}
			putF16(yb[80:], maxScale/15)
		}
		if maxMin > 0 {
			is := 15 / maxMin
			for j := range sc {
				sc[j] |= byte(nearestInt(is*mins[j]) << 4)
			}
			putF16(yb[82:], maxMin/15)
		}
		d, dmin := getF16(yb[80:]), getF16(yb[82:])
		for j := range 16 {
			dd := d * float32(sc[j]&15)
			if dd == 0 {
				continue
			}
			dm := float32(dmin * float32(sc[j]>>4)) // rounded: x+dm must not become an FMA
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = uint8(min(3, max(0, nearestInt((xb[i]+dm)/dd))))
			}
		}
		packQ2Bits(&L, yb[16:80])
	})
}

// makeQ3 is ggml's make_q3_quants with its error search (nmax 4, weights
// x²): it quantizes the 16 values of x to L in [0, 7] (offset 4) and
// returns the signed scale. Starting from L = round(−4·x/max), it moves one
// element at a time to its best level for the others' scale while that
// raises (Σwxl)²/Σwl², for at most five passes. An all-zero x gives L = 0
// (not 4) and scale 0, as in ggml.
func makeQ3(x []float32, L []int8) float32 {
	const nmax = 4
	L = L[:len(x)]
	maxv, amax := absMaxSigned(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -nmax / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(nmax-1, max(-nmax, nearestInt(iscale*v)))
		L[i] = int8(l)
		w, fl := v*v, float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := false
		for i, v := range x {
			w, fl := v*v, float32(L[i])
			slx := sumlx - float32(float32(w*v)*fl)
			if !(slx > 0) { // (NaN skips, as in ggml)
				continue
			}
			sl2 := suml2 - float32(float32(w*fl)*fl)
			nl := min(nmax-1, max(-nmax, nearestInt(float32(v*sl2)/slx)))
			if nl == int(L[i]) {
				continue
			}
			fn := float32(nl)
			slx += float32(float32(w*v) * fn)
			sl2 += float32(float32(w*fn) * fn)
			if sl2 > 0 && float32(slx*slx)*suml2 > float32(sumlx*sumlx)*sl2 {
				L[i], sumlx, suml2 = int8(nl), slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += nmax
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// q3Scale unpacks the 6-bit signed scale of sub-block j from Q3_K's 12
// scale bytes: low nibbles in bytes 0-7 (j < 8 low, j ≥ 8 high nibble of
// byte j−8), the two high bits in byte 8 + j%4 at bit 2·(j/4).
func q3Scale(sc []byte, j int) int8 {
	lo := sc[j%8] & 15
	if j >= 8 {
		lo = sc[j-8] >> 4
	}
	return int8(lo|(sc[8+j%4]>>(2*(j/4))&3)<<4) - 32
}

// rowQ3K: block = hmask[32], qs[64], scales[12], d f16 (110 bytes).
func rowQ3K(x []float32, y []byte) {
	var Ls [256]int8
	var L [256]uint8
	forBlocks(x, y, 256, 110, func(xb []float32, yb []byte) {
		scales, maxScale, _ := subScales(xb, Ls[:], makeQ3)
		sc := yb[96:108]
		clear(sc)
		putF16(yb[108:], 0)
		if maxScale != 0 {
			is := -32 / maxScale
			for j := range 16 {
				l := min(31, max(-32, int(int8(nearestInt(is*scales[j]))))) + 32
				if j < 8 {
					sc[j] = byte(l & 15)
				} else {
					sc[j-8] |= byte(l&15) << 4
				}
				sc[8+j%4] |= byte(l>>4) << (2 * (j / 4))
			}
			putF16(yb[108:], 1/is)
		}
		d := getF16(yb[108:])
		for i, l := range Ls {
			L[i] = uint8(l)
		}
		for j := range 16 {
			dd := d * float32(q3Scale(sc, j))
			if dd == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = uint8(4 + min(3, max(-4, nearestInt(xb[i]/dd))))
			}
		}
		// The third bit of element i goes to bit i/32 of hmask[i%32].
		hm := yb[0:32]
		clear(hm)
		for i := range L {
			if L[i] > 3 {
				hm[i%32] |= 1 << (i / 32)
				L[i] -= 4
			}
		}
		packQ2Bits(&L, yb[32:96])
	})
}

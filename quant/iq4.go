package quant

// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table of 16
// levels, as ggml's quantize_iq4_nl / quantize_iq4_xs compute them without
// an importance matrix (the element weights are then x²).
//
// Each block of 32 gets its scale by a search over 15 trial inverse scales
// (−127 + t)/max, t = −7..7, keeping the weighted least-squares scale of
// the best trial. IQ4_NL stores that scale as f16; IQ4_XS quantizes the 8
// scales of a 256-super-block to 6 bits against d = max scale / −32 and
// re-picks every index with the scale a reader will see.

// kvaluesIQ4NL is ggml's kvalues_iq4nl.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// iq4Bracket[f+128], for an integer f in [−127, 112], is the k with
// kvalues[k] ≤ f < kvalues[k+1]; as the levels are integers, that is also
// the bracket of every x with floor(x) = f.
var iq4Bracket = func() (b [256]uint8) {
	k := uint8(0)
	for f := -127; f <= 112; f++ {
		for k < 14 && int(kvaluesIQ4NL[k+1]) <= f {
			k++
		}
		b[f+128] = k
	}
	return
}()

// iq4Index returns the index of the table level nearest to x, the upper
// one on a tie, exactly as ggml's best_index_int8 does: below the first
// level 0, above the last 15, otherwise the two levels around x (found here
// by a table on floor(x) instead of bisection) compared by
// x − lower < upper − x in float32. NaN gives 15, as in ggml. The explicit
// float32(x) keeps an inlined caller's product unfused.
func iq4Index(x float32) uint8 {
	x = float32(x)
	switch {
	case x != x:
		return 15
	case x <= iq4Levels[0]:
		return 0
	case x >= iq4Levels[15]:
		return 15
	}
	// x+128 is in (1, 241); in float64 the sum only rounds up to an integer
	// when x is within 2^-45 of it, which a float32 that close to a level
	// (|level| ≥ 1) cannot be unless it is the level itself.
	lo := iq4Bracket[int(float64(x)+128)&255]
	var up uint8 // set without a branch: the outcome is a coin toss
	if !(x-iq4Levels[lo&15] < iq4Levels[(lo+1)&15]-x) {
		up = 1
	}
	return lo + up
}

// iq4Levels is kvaluesIQ4NL as float32.
var iq4Levels = func() (f [16]float32) {
	for i, v := range kvaluesIQ4NL {
		f[i] = float32(v)
	}
	return
}()

// iq4Sums quantizes xb with inverse scale id and returns Σw·q·x and Σw·q²
// over the table levels q, with the weights w (x²).
func iq4Sums(xb, w []float32, id float32) (sumqx, sumq2 float32) {
	w = w[:len(xb)]
	for j, v := range xb {
		q := iq4Levels[iq4Index(id*v)&15]
		wq := float32(w[j] * q)
		sumqx += float32(wq * v)
		sumq2 += float32(wq * q)
	}
	return
}

// iq4BlockScale is the per-32 scale search of ggml's IQ4 quantizers
// (ntry = 7, no importance matrix). A block of zeros gives 0.
func iq4BlockScale(xb []float32) float32 {
	const ntry = 7
	maxv, amax := absMaxSigned(xb)
	if amax < groupMaxEps {
		return 0
	}
	var w [32]float32
	for j, v := range xb {
		w[j] = v * v
	}
	v0 := float32(kvaluesIQ4NL[0])
	sumqx, sumq2 := iq4Sums(xb, w[:], 1/(-maxv/v0))
	var d float32
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := d * sumqx
	for t := -ntry; t <= ntry; t++ {
		sumqx, sumq2 = iq4Sums(xb, w[:], float32(t+int(kvaluesIQ4NL[0]))/maxv)
		if sumq2 > 0 && sumqx*sumqx > best*sumq2 {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// packIQ4 stores the indices of 32 values, scaled by id: element j in the
// low nibble of qs[j], element j+16 in the high nibble.
func packIQ4(xb []float32, id float32, qs []byte) {
	xb, qs = xb[:32], qs[:16]
	for j := range 16 {
		qs[j] = iq4Index(id*xb[j]) | iq4Index(id*xb[j+16])<<4
	}
}

// rowIQ4NL: block = d f16, qs[16] (18 bytes per 32).
func rowIQ4NL(x []float32, y []byte) {
	forBlocks(x, y, 32, 18, func(xb []float32, yb []byte) {
		d := iq4BlockScale(xb)
		putF16(yb, d)
		id := recip(d)
		packIQ4(xb, id, yb[2:])
	})
}

// rowIQ4XS: block = d f16, scales_h u16 (2 high bits of scale ib at bit
// 2·ib), scales_l[4] (low nibbles, even ib low, odd ib high), qs[128]
// (136 bytes per 256). Scale ib is d·(l − 32), l in 0..63.
func rowIQ4XS(x []float32, y []byte) {
	var scales [8]float32
	forBlocks(x, y, 256, 136, func(xb []float32, yb []byte) {
		var maxScale, amaxScale float32
		for ib := range 8 {
			scales[ib] = iq4BlockScale(xb[32*ib : 32*ib+32])
			if a := abs32(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		// ggml keeps using this unrounded d for the scales and indices.
		d := -maxScale / 32
		putF16(yb, d)
		id := recip(d)
		var sh uint16
		sl := yb[4:8]
		for ib := range 8 {
			l := min(31, max(-32, nearestInt(id*scales[ib])))
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			packIQ4(xb[32*ib:32*ib+32], idl, yb[8+16*ib:])
			l += 32
			if ib%2 == 0 {
				sl[ib/2] = byte(l & 15)
			} else {
				sl[ib/2] |= byte(l&15) << 4
			}
			sh |= uint16(l>>4) << (2 * ib)
		}
		yb[2], yb[3] = byte(sh), byte(sh>>8)
	})
}

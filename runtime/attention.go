package runtime

import "math"

// attnArgs describes one attention op over the f16 KV cache of a layer:
// query token t (position Pos0+t) attends to positions 0..Pos0+t.
//
//	q   [NTok][QStride]   head h at t*QStride + h*HeadDim (f32)
//	k,v [nPos][KVStride]  kv head g at p*KVStride + g*HeadDim (f16 bits)
//	out [NTok][OutStride]
type attnArgs struct {
	NTok, Pos0, NHead, NHeadKV, HeadDim int
	Q                                   []float32
	QStride                             int
	K, V                                []uint16
	KVStride                            int
	Scale                               float32
	Out                                 []float32
	OutStride                           int
}

// attendF16 is causal grouped-query attention for query heads [h0, h1) with
// the numerics of the reference's CPU flash attention for fewer than 64
// query rows: Q, K and V hold f16 values (the caller rounds them), K·Q is
// ggml_vec_dot_f16, and V is accumulated in f16 with an online softmax
// (running max M and sum S, expf from glibc). acc needs HeadDim floats.
//
// With 64 or more rows the reference uses a tiled f32 path instead
// (attendTiled); forward picks between them.
func attendF16(p *attnArgs, h0, h1 int, acc []float32) {
	group := p.NHead / p.NHeadKV
	hd := p.HeadDim
	np := hd &^ 63 // elements the reference handles in 64-wide SIMD steps
	acc = acc[:hd]
	for t := 0; t < p.NTok; t++ {
		npos := p.Pos0 + t + 1
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[t*p.QStride+h*hd : t*p.QStride+(h+1)*hd]
			S, M := float32(0), float32(math.Inf(-1))
			clear(acc)
			for pos := 0; pos < npos; pos++ {
				k := p.K[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				v := p.V[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				s := dotF16(q, k, np) * p.Scale
				ms, vs := float32(1), float32(1)
				if s > M {
					old := M
					M = s
					ms = expf(old - M)
					for i := range acc {
						acc[i] = roundF16(acc[i] * ms)
					}
				} else {
					vs = expf(s - M)
				}
				v = v[:len(acc)]
				for i, a := range acc { // y = f16(y + v*vs), fused (the product is exact in f64)
					x := float32(float64(halfTab[v[i]])*float64(vs) + float64(a))
					if b := math.Float32bits(x); b&0x7fffffff-0x38800000 < 0x477ff000-0x38800000 {
						b += 0xfff + (b>>13)&1 // f16 normal range: inline roundF16
						acc[i] = math.Float32frombits(b &^ 0x1fff)
					} else {
						acc[i] = roundF16(x)
					}
				}
				S = fma32(S, ms, vs)
			}
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			out := p.Out[t*p.OutStride+h*hd : t*p.OutStride+(h+1)*hd]
			for i := range out {
				out[i] = acc[i] * inv
			}
		}
	}
}

// dotF16 is ggml_vec_dot_f16 on AVX-512 for vectors of f16 values: the
// first np elements in 4 accumulators of 16 lanes (fused multiply-add),
// reduced pairwise, then the rest added in double.
func dotF16(x []float32, y []uint16, np int) float32 {
	sum := 0.0
	if np > 0 {
		// lanes[16*j+l] is lane l of accumulator j.
		var lanes [64]float32
		for i := 0; i < np; i += 64 {
			xs, ys := x[i:i+64], y[i:i+64]
			for l := range lanes {
				// The product of two f16 values is exact in f32, so a
				// plain add rounds exactly like the fused one.
				lanes[l] += xs[l] * halfTab[ys[l]]
			}
		}
		var v [16]float32
		for l := range v {
			v[l] = (lanes[l] + lanes[32+l]) + (lanes[16+l] + lanes[48+l])
		}
		for w := 8; w >= 1; w /= 2 {
			for l := 0; l < w; l++ {
				v[l] += v[l+w]
			}
		}
		sum = float64(v[0])
	}
	for i := np; i < len(x); i++ {
		sum += float64(x[i] * halfTab[y[i]])
	}
	return float32(sum)
}

// attendTiled is causal attention for query heads [h0, h1) with the numerics
// of the reference's tiled CPU flash attention (64 or more query rows, head
// size a multiple of 16): Q in f32, K and V holding f16 values, positions
// processed in tiles of 64. Per tile: scores are fused multiply-add chains
// over the head dimension, scaled; the running max M and sum S are updated
// (expf from glibc); the tile's exponentials come from ggml's vectorised exp
// in 16-wide groups summed in double; V is accumulated in f32 with fused
// multiply-add chains over the tile. kq needs 64 floats.
func attendTiled(p *attnArgs, h0, h1 int, kq, acc []float32) {
	const tile = 64
	group := p.NHead / p.NHeadKV
	hd := p.HeadDim
	acc = acc[:hd]
	kq = kq[:tile]
	for t := 0; t < p.NTok; t++ {
		npos := p.Pos0 + t + 1
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[t*p.QStride+h*hd : t*p.QStride+(h+1)*hd]
			S, M := float32(0), float32(math.Inf(-1))
			clear(acc)
			for ic := 0; ic < npos; ic += tile {
				n := min(tile, npos-ic) // unmasked positions in this tile
				tmax := float32(math.Inf(-1))
				j := 0
				for ; j+4 <= n; j += 4 { // four independent chains at a time
					base := (ic+j)*p.KVStride + g*hd
					k0 := p.K[base : base+hd]
					k1 := p.K[base+p.KVStride : base+p.KVStride+hd]
					k2 := p.K[base+2*p.KVStride : base+2*p.KVStride+hd]
					k3 := p.K[base+3*p.KVStride : base+3*p.KVStride+hd]
					var s0, s1, s2, s3 float32
					for d, x := range q {
						xd := float64(x)
						s0 = float32(math.FMA(xd, float64(halfTab[k0[d]]), float64(s0)))
						s1 = float32(math.FMA(xd, float64(halfTab[k1[d]]), float64(s1)))
						s2 = float32(math.FMA(xd, float64(halfTab[k2[d]]), float64(s2)))
						s3 = float32(math.FMA(xd, float64(halfTab[k3[d]]), float64(s3)))
					}
					kq[j], kq[j+1], kq[j+2], kq[j+3] = s0*p.Scale, s1*p.Scale, s2*p.Scale, s3*p.Scale
					tmax = max(tmax, kq[j], kq[j+1], kq[j+2], kq[j+3])
				}
				for ; j < n; j++ {
					k := p.K[(ic+j)*p.KVStride+g*hd : (ic+j)*p.KVStride+(g+1)*hd]
					s := float32(0)
					for d, x := range q {
						s = fma32(x, halfTab[k[d]], s)
					}
					kq[j] = s * p.Scale
					tmax = max(tmax, kq[j])
				}
				if tmax > M {
					ms := expf(M - tmax)
					for d := range acc {
						acc[d] *= ms
					}
					S *= ms
					M = tmax
				}
				// Exponentials in groups of 16 lanes, each group's sum
				// reduced pairwise in f32 and added in double; masked
				// lanes are exactly 0.
				sum := 0.0
				for b := 0; b < tile; b += 16 {
					var lanes [16]float32
					for l := 0; l < 16 && b+l < n; l++ {
						lanes[l] = vexpf(kq[b+l] - M)
						kq[b+l] = lanes[l]
					}
					for w := 8; w >= 1; w /= 2 {
						for l := 0; l < w; l++ {
							lanes[l] += lanes[l+w]
						}
					}
					sum += float64(lanes[0])
					if b+16 >= n {
						break
					}
				}
				S = float32(float64(S) + sum)
				for j := 0; j < n; j++ {
					v := p.V[(ic+j)*p.KVStride+g*hd : (ic+j)*p.KVStride+(g+1)*hd]
					v = v[:len(acc)]
					w := float64(kq[j])
					for d, a := range acc {
						acc[d] = float32(math.FMA(w, float64(halfTab[v[d]]), float64(a)))
					}
				}
			}
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			out := p.Out[t*p.OutStride+h*hd : t*p.OutStride+(h+1)*hd]
			for d := range out {
				out[d] = acc[d] * inv
			}
		}
	}
}

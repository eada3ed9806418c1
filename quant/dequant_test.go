package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/woolly-llm/woolly/ggml"
)

// testDequant is an independent, plainly written dequantizer following
// docs/formats.md; TestDequantKnownAnswers checks it bit-exactly against ggml's
// outputs in ../shared/ref/dequant before the other tests rely on it.
func testDequant(t ggml.Type, src []byte, dst []float32) error {
	f16 := func(b []byte) float32 { return ggml.F16ToF32(binary.LittleEndian.Uint16(b)) }
	n := len(dst)
	be, bb := t.BlockElems(), t.BlockBytes()
	if be == 0 || n%be != 0 || len(src) != n/be*bb {
		return fmt.Errorf("bad sizes for %v: %d values, %d bytes", t, n, len(src))
	}
	for b := 0; b < n/be; b++ {
		x, y := src[b*bb:(b+1)*bb], dst[b*be:(b+1)*be]
		switch t {
		case ggml.F32:
			y[0] = math.Float32frombits(binary.LittleEndian.Uint32(x))
		case ggml.F16:
			y[0] = f16(x)
		case ggml.Q4_0, ggml.Q4_1, ggml.Q5_0, ggml.Q5_1:
			d := f16(x)
			var m float32
			qs := x[2:]
			var qh uint32
			switch t {
			case ggml.Q4_1:
				m, qs = f16(x[2:]), x[4:]
			case ggml.Q5_0:
				qh, qs = binary.LittleEndian.Uint32(x[2:]), x[6:]
			case ggml.Q5_1:
				m, qh, qs = f16(x[2:]), binary.LittleEndian.Uint32(x[4:]), x[8:]
			}
			for j := 0; j < 16; j++ {
				lo, hi := int(qs[j]&15), int(qs[j]>>4)
				if t == ggml.Q5_0 || t == ggml.Q5_1 {
					lo |= int(qh>>j&1) << 4
					hi |= int(qh>>(j+16)&1) << 4
				}
				switch t {
				case ggml.Q4_0:
					lo, hi = lo-8, hi-8
				case ggml.Q5_0:
					lo, hi = lo-16, hi-16
				}
				y[j], y[j+16] = float32(lo)*d, float32(hi)*d
				if t == ggml.Q4_1 || t == ggml.Q5_1 {
					y[j], y[j+16] = y[j]+m, y[j+16]+m
				}
			}
		case ggml.Q8_0:
			d := f16(x)
			for j := 0; j < 32; j++ {
				y[j] = float32(int8(x[2+j])) * d
			}
		case ggml.Q4_K, ggml.Q5_K:
			d, dmin := f16(x), f16(x[2:])
			sc := x[4:16]
			qs, qh := x[16:], []byte(nil)
			if t == ggml.Q5_K {
				qh, qs = x[16:48], x[48:]
			}
			for c := 0; c < 4; c++ {
				for half := 0; half < 2; half++ {
					s, m := scaleMinK4(2*c+half, sc)
					d1, m1 := d*float32(s), dmin*float32(m)
					for l := 0; l < 32; l++ {
						q := int(qs[32*c+l] >> (4 * half) & 15)
						if qh != nil && qh[l]>>(2*c+half)&1 == 1 {
							q += 16
						}
						y[64*c+32*half+l] = float32(d1*float32(q)) - m1
					}
				}
			}
		case ggml.Q6_K:
			d := f16(x[208:])
			for h := 0; h < 2; h++ {
				ql, qh, sc := x[64*h:], x[128+32*h:], x[192+8*h:]
				for l := 0; l < 32; l++ {
					q := [4]int{
						int(ql[l]&15) | int(qh[l]&3)<<4,
						int(ql[l+32]&15) | int(qh[l]>>2&3)<<4,
						int(ql[l]>>4) | int(qh[l]>>4&3)<<4,
						int(ql[l+32]>>4) | int(qh[l]>>6&3)<<4,
					}
					for k := 0; k < 4; k++ {
						e := 32*k + l
						y[128*h+e] = d * float32(int8(sc[e/16])) * float32(q[k]-32)
					}
				}
			}
		case ggml.Q2_K:
			// scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
			d, dmin := f16(x[80:]), f16(x[82:])
			for e := 0; e < 256; e++ {
				sc := x[e/16]
				q := x[16+32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3
				dl, ml := d*float32(sc&15), dmin*float32(sc>>4)
				y[e] = float32(dl*float32(q)) - ml
			}
		case ggml.Q3_K:
			// hmask[32], qs[64], scales[12] (6-bit, packed), d.
			d := f16(x[108:])
			sc := x[96:108]
			for e := 0; e < 256; e++ {
				j := e / 16
				var s6 int
				if j < 8 {
					s6 = int(sc[j] & 15)
				} else {
					s6 = int(sc[j-8] >> 4)
				}
				s6 |= int(sc[8+j%4]>>(2*(j/4))&3) << 4
				q := int(x[32+32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3)
				if x[e%32]>>(e/32)&1 == 0 {
					q -= 4
				}
				y[e] = d * float32(s6-32) * float32(q)
			}
		case ggml.IQ4_NL:
			d := f16(x)
			for j := 0; j < 16; j++ {
				y[j] = d * float32(kvaluesIQ4NL[x[2+j]&15])
				y[j+16] = d * float32(kvaluesIQ4NL[x[2+j]>>4])
			}
		case ggml.IQ4_XS:
			// d, scales_h u16, scales_l[4], qs[128].
			d := f16(x)
			sh := binary.LittleEndian.Uint16(x[2:])
			for ib := 0; ib < 8; ib++ {
				ls := int(x[4+ib/2]>>(4*(ib%2))&15) | int(sh>>(2*ib)&3)<<4
				dl := d * float32(ls-32)
				qs := x[8+16*ib:]
				for j := 0; j < 16; j++ {
					y[32*ib+j] = dl * float32(kvaluesIQ4NL[qs[j]&15])
					y[32*ib+j+16] = dl * float32(kvaluesIQ4NL[qs[j]>>4])
				}
			}
		default:
			return fmt.Errorf("no test dequantizer for %v", t)
		}
	}
	return nil
}

package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/woolly-llm/woolly/kernels"
)

// testDequant is an independent, plainly written dequantizer following
// formats.md; TestDequantKnownAnswers checks it bit-exactly against ggml's
// outputs in ../shared/ref/dequant before the other tests rely on it.
func testDequant(t kernels.Type, src []byte, dst []float32) error {
	f16 := func(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }
	n := len(dst)
	be, bb := t.BlockElems(), t.BlockBytes()
	if be == 0 || n%be != 0 || len(src) != n/be*bb {
		return fmt.Errorf("bad sizes for %v: %d values, %d bytes", t, n, len(src))
	}
	for b := 0; b < n/be; b++ {
		x, y := src[b*bb:(b+1)*bb], dst[b*be:(b+1)*be]
		switch t {
		case kernels.F32:
			y[0] = math.Float32frombits(binary.LittleEndian.Uint32(x))
		case kernels.F16:
			y[0] = f16(x)
		case kernels.Q4_0, kernels.Q4_1, kernels.Q5_0, kernels.Q5_1:
			d := f16(x)
			var m float32
			qs := x[2:]
			var qh uint32
			switch t {
			case kernels.Q4_1:
				m, qs = f16(x[2:]), x[4:]
			case kernels.Q5_0:
				qh, qs = binary.LittleEndian.Uint32(x[2:]), x[6:]
			case kernels.Q5_1:
				m, qh, qs = f16(x[2:]), binary.LittleEndian.Uint32(x[4:]), x[8:]
			}
			for j := 0; j < 16; j++ {
				lo, hi := int(qs[j]&15), int(qs[j]>>4)
				if t == kernels.Q5_0 || t == kernels.Q5_1 {
					lo |= int(qh>>j&1) << 4
					hi |= int(qh>>(j+16)&1) << 4
				}
				switch t {
				case kernels.Q4_0:
					lo, hi = lo-8, hi-8
				case kernels.Q5_0:
					lo, hi = lo-16, hi-16
				}
				y[j], y[j+16] = float32(lo)*d, float32(hi)*d
				if t == kernels.Q4_1 || t == kernels.Q5_1 {
					y[j], y[j+16] = y[j]+m, y[j+16]+m
				}
			}
		case kernels.Q8_0:
			d := f16(x)
			for j := 0; j < 32; j++ {
				y[j] = float32(int8(x[2+j])) * d
			}
		case kernels.Q4_K, kernels.Q5_K:
			d, dmin := f16(x), f16(x[2:])
			sc := x[4:16]
			qs, qh := x[16:], []byte(nil)
			if t == kernels.Q5_K {
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
		case kernels.Q6_K:
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
		default:
			return fmt.Errorf("no test dequantizer for %v", t)
		}
	}
	return nil
}

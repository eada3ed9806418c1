package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// goDequantQ23 is Q2_K / Q3_K dequantization re-derived in Go from the
// format: element e = 128h + 32k + l has its two low bits at bits 2k, 2k+1
// of qs[32h+l]; group g = e/16.
//
//	Q2_K (scales[16] qs[64] d dmin): d*(scales[g]&15)*q - dmin*(scales[g]>>4)
//	Q3_K (hmask[32] qs[64] scales[12] d): q += 4*bit(4h+k of hmask[l]) - 4;
//	      d*(s-32)*q, s = low nibble of scales[g%8] (>>4 for g >= 8) | bits
//	      2(g/4), 2(g/4)+1 of scales[8+g%4] << 4
func goDequantQ23(t Type, b []byte) []float32 {
	bs := t.BlockBytes()
	out := make([]float32, 0, len(b)/bs*256)
	for off := 0; off < len(b); off += bs {
		blk := b[off : off+bs]
		qsOff, dOff := 16, 80
		if t == Q3_K {
			qsOff, dOff = 32, 108
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk[dOff:]))
		for e := 0; e < 256; e++ {
			h, k, l, g := e/128, e%128/32, e%32, e/16
			q := int(blk[qsOff+32*h+l]>>(2*k)) & 3
			if t == Q2_K {
				dmin := F16ToF32(binary.LittleEndian.Uint16(blk[82:]))
				dl := d * float32(blk[g]&15)
				ml := dmin * float32(blk[g]>>4)
				out = append(out, float32(dl*float32(q))-ml) // rounded before the subtraction: no FMA
				continue
			}
			q += 4*int(blk[l]>>(4*h+k)&1) - 4
			sc := blk[96:108]
			s := int(sc[g%8]>>(4*(g/8)))&15 | int(sc[8+g%4]>>(2*(g/4))&3)<<4
			dl := d * float32(s-32)
			out = append(out, dl*float32(q))
		}
	}
	return out
}

// q23EdgeRow is nb blocks of t: quant bytes fill (0x00, 0xFF) or random
// (fill < 0), d (and Q2_K's dmin) set to the given values.
func q23EdgeRow(t Type, nb, fill int, d, dmin float32, rng *rand.Rand) []byte {
	bs := t.BlockBytes()
	b := make([]byte, nb*bs)
	if fill < 0 {
		rng.Read(b)
	} else {
		for i := range b {
			b[i] = byte(fill)
		}
	}
	for off := 0; off < len(b); off += bs {
		if t == Q2_K {
			putF16(b[off+80:], d)
			putF16(b[off+82:], dmin)
		} else {
			putF16(b[off+108:], d)
		}
	}
	return b
}

// Q2_K / Q3_K on edge blocks, every kernel set: zero, largest, negative and
// subnormal d and dmin, quant bytes all 0x00 (Q3_K: q = -4 with scale -32)
// and all 0xFF (every quant and scale at its maximum), 1, 2 and 33 blocks.
// Dequant must equal the Go derivation of the format bit for bit; dots must
// equal ref bit for bit (every set sums in the reference build's order) and
// ref must equal the exact dot of the dequantized rows within f32 rounding.
func TestQ2KQ3KEdges(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	scales := []float32{0, 65504, -65504, float32(math.Ldexp(1, -24)), -1, 0.0123}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, ty := range []Type{Q2_K, Q3_K} {
			for _, nb := range []int{1, 2, 33} {
				n := 256 * nb
				for _, fill := range []int{0x00, 0xFF, -1} {
					for si, d := range scales {
						dmin := scales[(si+nb)%len(scales)]
						w := q23EdgeRow(ty, nb, fill, d, dmin, rng)
						name := fmt.Sprintf("%v nb=%d fill=%d d=%g dmin=%g", ty, nb, fill, d, dmin)
						got := make([]float32, n)
						Dequant(ty, w, got)
						want := goDequantQ23(ty, w)
						for i := range want {
							if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
								t.Fatalf("%s: dequant element %d = %g, the format gives %g", name, i, got[i], want[i])
							}
						}
						x := randomF32(n, rng)
						if si%2 == 1 {
							x[0] = -1000 // a negative max: qs -127
						}
						a, af := actFor(t, ty, x)
						rb, _ := ty.RowBytes(int64(n))
						var y, yr [1]float32
						MatVec(ty, n, w, int(rb), a, y[:], 0, 1)
						withImpl(t, "ref", func() { MatVec(ty, n, w, int(rb), a, yr[:], 0, 1) })
						require.Equal(t, math.Float32bits(yr[0]), math.Float32bits(y[0]), "%s: dot %g, ref %g", name, y[0], yr[0])
						exact, abs := exactDot(got, af)
						if d := math.Abs(float64(yr[0]) - exact); d > dotTol(abs) {
							t.Fatalf("%s: ref dot %g, exact %g (|diff| %g > %g)", name, yr[0], exact, d, dotTol(abs))
						}
					}
				}
			}
		}
	})
}

// Bad input gives an error, never a panic: short source, a row length that
// is not a whole number of blocks.
func TestQ2KQ3KBadInput(t *testing.T) {
	for _, ty := range []Type{Q2_K, Q3_K} {
		require.Panics(t, func() { Dequant(ty, make([]byte, ty.BlockBytes()-1), make([]float32, 256)) }, "%v short source", ty)
		require.Panics(t, func() { Dequant(ty, make([]byte, 4*ty.BlockBytes()), make([]float32, 300)) }, "%v n=300", ty)
		a := make([]byte, 292)
		require.Panics(t, func() { MatVec(ty, 128, make([]byte, ty.BlockBytes()), ty.BlockBytes(), a, make([]float32, 1), 0, 1) }, "%v n=128", ty)
		require.Panics(t, func() { MatVec(ty, 256, make([]byte, ty.BlockBytes()-1), ty.BlockBytes(), a, make([]float32, 1), 0, 1) }, "%v short row", ty)
	}
}

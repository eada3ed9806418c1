package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/woolly-llm/woolly/ggml"
)

// forEachImpl runs f once per kernel set this CPU can run, restoring the
// default afterwards.
func forEachImpl(t *testing.T, f func(t *testing.T, impl string)) {
	t.Helper()
	def := Impl()
	defer Use(def)
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}

// withImpl runs f with kernel set name active.
func withImpl(t testing.TB, name string, f func()) {
	t.Helper()
	def := Impl()
	if err := Use(name); err != nil {
		t.Fatal(err)
	}
	defer Use(def)
	f()
}

// weightTypes is every type of the type table (package ggml) that weights can
// have, in id order: all but Q8_K, which only activations use. It is built
// from the table, so a type added there is in every test that ranges over
// weightTypes (TestDotImplsVsRef among them) and fails in randomRow until
// the tests know how to make its blocks; TestWeightTypesFromTable holds the
// list to the table and to the C kernels. quantTypes: the block-quantized
// ones (more than one element per block).
var weightTypes, quantTypes = tableWeightTypes()

func tableWeightTypes() (weights, quants []Type) {
	for _, t := range ggml.Types() { // in id order
		if t != Q8_K {
			weights = append(weights, t)
		}
	}
	for _, t := range weights {
		if t.BlockElems() > 1 {
			quants = append(quants, t)
		}
	}
	return weights, quants
}

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// randHalfScale is a positive or negative scale of magnitude ~ 2^[-12, -4].
func randScale(rng *rand.Rand) float32 {
	s := float32(math.Ldexp(0.5+rng.Float64(), -4-rng.Intn(9)))
	if rng.Intn(4) == 0 {
		s = -s
	}
	return s
}

// randomRow makes n elements of type t: random quant bytes, sane scales.
// style 0: random; 1: all zero bytes; 2: extreme scales (max f16, tiny
// subnormals, negative).
func randomRow(t Type, n int, rng *rand.Rand, style int) []byte {
	rb, err := t.RowBytes(int64(n))
	if err != nil {
		panic(err)
	}
	b := make([]byte, rb)
	if style == 1 {
		return b
	}
	rng.Read(b)
	scale := func() float32 {
		if style == 2 {
			switch rng.Intn(4) {
			case 0:
				return 65504
			case 1:
				return -65504
			case 2:
				return float32(math.Ldexp(float64(1+rng.Intn(1023)), -24)) // subnormal half
			default:
				return -float32(math.Ldexp(float64(1+rng.Intn(1023)), -24))
			}
		}
		return randScale(rng)
	}
	bs := t.BlockBytes()
	for off := 0; off < len(b); off += bs {
		blk := b[off : off+bs]
		switch t {
		case F32:
			v := float32(rng.NormFloat64())
			if style == 2 {
				v = scale()
			}
			binary.LittleEndian.PutUint32(blk, math.Float32bits(v))
		case F16:
			v := float32(rng.NormFloat64())
			if style == 2 {
				v = scale()
			}
			putF16(blk, v)
		case BF16:
			v := float32(rng.NormFloat64())
			binary.LittleEndian.PutUint16(blk, uint16(math.Float32bits(v)>>16))
		case Q4_0, Q5_0, Q8_0, Q6_K, IQ4_NL, IQ4_XS:
			at := 0
			if t == Q6_K {
				at = 208
			}
			putF16(blk[at:], scale())
		case Q4_1, Q5_1, Q4_K, Q5_K:
			putF16(blk, scale())
			putF16(blk[2:], scale())
		case MXFP4: // the E8M0 exponent byte first: 2^-12 .. 2^-3 halved, or
			// style 2: the extremes 0, 1 (f32 subnormals), 2, 254 and 255
			blk[0] = byte(116 + rng.Intn(10))
			if style == 2 {
				blk[0] = []byte{0, 1, 2, 254, 255}[rng.Intn(5)]
			}
		case Q2_K: // d, dmin last
			putF16(blk[80:], scale())
			putF16(blk[82:], scale())
		case Q3_K: // d last
			putF16(blk[108:], scale())
		default:
			// a type new to the table: its block layout must be written here
			// before the tests that range over weightTypes can run it
			panic(fmt.Sprintf("randomRow: no case for %v: add its block layout", t))
		}
	}
	return b
}

func randomF32(n int, rng *rand.Rand) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// dequantAct converts an activation row back to f32 (Go code, independent of
// the C kernels for Q8_K).
func dequantAct(t *testing.T, act Type, a []byte, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	switch act {
	case Q8_K:
		for b := 0; b < n/256; b++ {
			blk := a[b*292:]
			d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
			for j := 0; j < 256; j++ {
				out[b*256+j] = d * float32(int8(blk[4+j]))
			}
		}
	default:
		Dequant(act, a, out)
	}
	return out
}

// panicText runs f and returns the text of its panic ("" when it returns):
// the kernels panic with an error naming the broken argument.
func panicText(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

package kernels

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// The Gated DeltaNet kernels (gdn.go) against a Go transcription of
// csrc/gdn.h's specification, on every kernel set, bit for bit.

// gdnDot is the dot of csrc/gdn.h: 64 fused slots, the tree, the tail.
func gdnDot(a, b []float32) float32 {
	n := len(a)
	np := n &^ 63
	var sum float32
	if np > 0 {
		var acc [64]float32
		for i := 0; i < np; i += 64 {
			for l := range acc {
				acc[l] = fma32(a[i+l], b[i+l], acc[l])
			}
		}
		var v [16]float32
		for l := range v {
			v[l] = (acc[l] + acc[32+l]) + (acc[16+l] + acc[48+l])
		}
		for s := 8; s >= 1; s /= 2 {
			for l := 0; l < s; l++ {
				v[l] += v[l+s]
			}
		}
		sum = v[0]
	}
	for i := np; i < n; i++ {
		sum += float32(a[i] * b[i])
	}
	return sum
}

func gdnRecurSpec(state, qkv []float32, qkvStride int, decay, beta []float32, gStride int,
	out []float32, outStride, n int, sh DeltaNetShape, h0, h1 int, scale float32) {
	S, kd := sh.S, sh.NK*sh.S
	for hv := h0; hv < h1; hv++ {
		hk := hv % sh.NK
		if sh.Grouped {
			hk = hv / (sh.NV / sh.NK)
		}
		M := state[hv*S*S : (hv+1)*S*S]
		for t := 0; t < n; t++ {
			row := qkv[t*qkvStride:]
			q, k, v := row[hk*S:(hk+1)*S], row[kd+hk*S:kd+(hk+1)*S], row[2*kd+hv*S:2*kd+(hv+1)*S]
			d, b := decay[t*gStride+hv], beta[t*gStride+hv]
			for j := 0; j < S; j++ {
				mj := M[j*S : (j+1)*S]
				for i := range mj {
					mj[i] *= d
				}
				dj := (v[j] - gdnDot(mj, k)) * b
				for i := range mj {
					mj[i] = fma32(k[i], dj, mj[i])
				}
				out[t*outStride+hv*S+j] = gdnDot(mj, q) * scale
			}
		}
	}
}

func gdnConvSpec(out, in []float32, stride, n int, win, w []float32, K, c0, c1 int) {
	for ch := c0; ch < c1; ch++ {
		wn, wc := win[ch*(K-1):(ch+1)*(K-1)], w[ch*K:(ch+1)*K]
		for t := 0; t < n; t++ {
			x := in[t*stride+ch]
			var sum float32
			for i := 0; i < K-1; i++ {
				sum = fma32(wn[i], wc[i], sum)
			}
			out[t*stride+ch] = fma32(x, wc[K-1], sum)
			if K > 1 {
				copy(wn, wn[1:])
				wn[K-2] = x
			}
		}
	}
}

// sameBits reports the first index where a and b differ in bits (NaNs of
// any payload equal), or -1.
func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// gdnFill fills x with values of the given kind: 0 normal random, 1 edge
// values (signed zeros, subnormals, large and tiny magnitudes mixed in).
func gdnFill(r *rand.Rand, x []float32, kind int, mag float32) {
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, 1e30, -1e30, 1e-30, 1, -1, 65504}
	for i := range x {
		x[i] = (r.Float32()*2 - 1) * mag
		if kind == 1 && r.Intn(4) == 0 {
			x[i] = edges[r.Intn(len(edges))]
		}
	}
}

func TestDeltaNetRecur(t *testing.T) {
	type tc struct {
		sh    DeltaNetShape
		n     int
		extra int // padding of the strides
	}
	cases := []tc{
		{DeltaNetShape{S: 128, NK: 2, NV: 4}, 5, 0},
		{DeltaNetShape{S: 128, NK: 2, NV: 4, Grouped: true}, 3, 7},
		{DeltaNetShape{S: 64, NK: 1, NV: 3}, 4, 0},
		{DeltaNetShape{S: 200, NK: 1, NV: 2}, 3, 3}, // 3 vector steps and a tail of 8
		{DeltaNetShape{S: 100, NK: 2, NV: 2}, 2, 0}, // one step and a tail of 36
		{DeltaNetShape{S: 16, NK: 2, NV: 4}, 6, 1},  // all tail (the minis)
		{DeltaNetShape{S: 1, NK: 1, NV: 1}, 3, 0},
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		r := rand.New(rand.NewSource(7))
		for ci, c := range cases {
			for kind := 0; kind < 2; kind++ {
				S, nK, nV, n := c.sh.S, c.sh.NK, c.sh.NV, c.n
				qs, gs, os := (2*nK+nV)*S+c.extra, nV+c.extra, nV*S+c.extra
				state := make([]float32, nV*S*S)
				qkv := make([]float32, n*qs)
				decay, beta := make([]float32, n*gs), make([]float32, n*gs)
				gdnFill(r, state, kind, 1)
				gdnFill(r, qkv, kind, 1)
				for i := range decay {
					decay[i], beta[i] = r.Float32(), r.Float32()
				}
				if kind == 1 {
					decay[0], beta[0] = 0, 1
				}
				scale := 1 / float32(math.Sqrt(float64(S)))
				for _, hr := range [][2]int{{0, nV}, {nV / 2, nV}} {
					wantS, gotS := append([]float32(nil), state...), append([]float32(nil), state...)
					want, got := make([]float32, n*os), make([]float32, n*os)
					gdnRecurSpec(wantS, qkv, qs, decay, beta, gs, want, os, n, c.sh, hr[0], hr[1], scale)
					DeltaNetRecur(gotS, qkv, qs, decay, beta, gs, got, os, n, c.sh, hr[0], hr[1], scale)
					if i := sameBits(want, got); i >= 0 {
						t.Fatalf("case %d kind %d heads %v: out[%d] = %g (%#x), want %g (%#x)", ci, kind, hr, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
					if i := sameBits(wantS, gotS); i >= 0 {
						t.Fatalf("case %d kind %d heads %v: state[%d] = %g, want %g", ci, kind, hr, i, gotS[i], wantS[i])
					}
				}
			}
		}
	})
}

func TestDeltaNetConv(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		r := rand.New(rand.NewSource(11))
		for _, K := range []int{1, 2, 4, 5, 9, 12} {
			for kind := 0; kind < 4; kind++ {
				cc, n, stride := 301, []int{9, 1, 4, 5}[kind], 307 // n: the tiled path and the one-channel one
				in := make([]float32, n*stride)
				w := make([]float32, cc*K)
				win := make([]float32, cc*max(K-1, 0))
				gdnFill(r, in, kind%2, 2)
				gdnFill(r, w, kind%2, 1)
				gdnFill(r, win, kind%2, 2)
				for _, cr := range [][2]int{{0, cc}, {5, 21}, {16, 48}, {3, 290}} {
					wantW, gotW := append([]float32(nil), win...), append([]float32(nil), win...)
					want, got := make([]float32, n*stride), make([]float32, n*stride)
					gdnConvSpec(want, in, stride, n, wantW, w, K, cr[0], cr[1])
					DeltaNetConv(got, in, stride, n, gotW, w, K, cr[0], cr[1])
					if i := sameBits(want, got); i >= 0 {
						t.Fatalf("K %d kind %d channels %v: out[%d] = %g, want %g", K, kind, cr, i, got[i], want[i])
					}
					if i := sameBits(wantW, gotW); i >= 0 {
						t.Fatalf("K %d kind %d channels %v: window[%d] = %g, want %g", K, kind, cr, i, gotW[i], wantW[i])
					}
				}
			}
		}
	})
}

func TestDeltaNetBadInput(t *testing.T) {
	sh := DeltaNetShape{S: 4, NK: 1, NV: 2}
	st, qkv, g, out := make([]float32, 32), make([]float32, 16), make([]float32, 2), make([]float32, 8)
	// Each misuse panics with an error naming the kernel.
	bad := []func(){
		func() { DeltaNetRecur(st, qkv, 16, g, g, 2, out, 8, 1, DeltaNetShape{S: 0, NK: 1, NV: 2}, 0, 2, 1) },
		func() {
			DeltaNetRecur(st, qkv, 16, g, g, 2, out, 8, 1, DeltaNetShape{S: 4, NK: 2, NV: 3, Grouped: true}, 0, 3, 1)
		},
		func() { DeltaNetRecur(st, qkv, 16, g, g, 2, out, 8, 1, sh, 0, 3, 1) },
		func() { DeltaNetRecur(st, qkv, 15, g, g, 2, out, 8, 1, sh, 0, 2, 1) },
		func() { DeltaNetRecur(st, qkv, 16, g, g, 2, out, 8, 2, sh, 0, 2, 1) },
		func() { DeltaNetRecur(st[:31], qkv, 16, g, g, 2, out, 8, 1, sh, 0, 2, 1) },
		func() { DeltaNetConv(out, qkv, 8, 2, st, st, 0, 0, 8) },
		func() { DeltaNetConv(out, qkv, 8, 2, st, st, 4, 0, 9) },
		func() { DeltaNetConv(out, qkv, 8, 3, st, st, 4, 0, 8) },
		func() { DeltaNetConv(out, qkv, 8, 2, st[:20], st, 4, 0, 8) },
	}
	for i, f := range bad {
		var got any
		func() {
			defer func() { got = recover() }()
			f()
		}()
		if err, ok := got.(error); !ok || !strings.Contains(err.Error(), "kernels.DeltaNet") {
			t.Errorf("bad input %d: panic %v, want an error naming the kernel", i, got)
		}
	}
	DeltaNetRecur(st, qkv, 16, g, g, 2, out, 8, 1, sh, 0, 2, 1) // good input: no panic
}

// BenchmarkDeltaNetRecur: one Qwen3.5-0.8B layer's recurrence (16 value
// heads, state 128) over 128 tokens.
func BenchmarkDeltaNetRecur(b *testing.B) {
	sh := DeltaNetShape{S: 128, NK: 16, NV: 16}
	n, qs := 128, (2*16+16)*128
	r := rand.New(rand.NewSource(1))
	state, qkv := make([]float32, 16*128*128), make([]float32, n*qs)
	decay, beta, out := make([]float32, n*16), make([]float32, n*16), make([]float32, n*16*128)
	gdnFill(r, qkv, 0, 1)
	for i := range decay {
		decay[i], beta[i] = 0.9, 0.5
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		DeltaNetRecur(state, qkv, qs, decay, beta, 16, out, 16*128, n, sh, 0, 16, 0.088)
	}
}

// BenchmarkDeltaNetConv: one Qwen3.5-0.8B layer's convolution (6144
// channels, 4 taps) over 128 tokens.
func BenchmarkDeltaNetConv(b *testing.B) {
	cc, n, K := 6144, 128, 4
	r := rand.New(rand.NewSource(1))
	in, out := make([]float32, n*cc), make([]float32, n*cc)
	win, w := make([]float32, cc*(K-1)), make([]float32, cc*K)
	gdnFill(r, in, 0, 1)
	gdnFill(r, w, 0, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		DeltaNetConv(out, in, cc, n, win, w, K, 0, cc)
	}
}

package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exact attention kernels (AttentionF16Acc, AttentionTiled) are checked
// bit for bit against Go re-derivations of their rules in csrc/kernels.h.
// Every product that a rule rounds on its own is wrapped in float32() so that
// Go never fuses it (it does on arm64); fused steps use fma32 (order_test.go).
//
// The sliding window and the soft-cap are modelled the way llama.cpp applies
// them, not the way the kernels skip work: a mask of 0 / -inf over every
// cache position (causal and window), the score scaled by Scale/SoftCap,
// capped as SoftCap*tanhf, then the mask added. The f16acc model skips the
// -inf entries; the tiled one runs whole 64-lane tiles (masked lanes -inf,
// so their exponentials are 0 and V gets 0*v), skips a tile only when all
// its lanes are masked and otherwise leaves a row alone whose tile max is
// -inf.

// h2f is F16ToF32 from a table (the models call it in their inner loops).
var h2f = func() func(uint16) float32 {
	var tab []float32
	var once sync.Once
	return func(h uint16) float32 {
		once.Do(func() {
			tab = make([]float32, 1<<16)
			for i := range tab {
				tab[i] = F16ToF32(uint16(i))
			}
		})
		return tab[h]
	}
}()

// roundHalf is f16r without a cgo call: x rounded to the nearest f16 value
// (ties to even; overflow to inf), as f32. TestRoundHalf checks it against
// the C conversion.
func roundHalf(x float32) float32 {
	b := math.Float32bits(x)
	sign, a := b&0x80000000, b&0x7fffffff
	switch {
	case a >= 0x7f800000: // inf, NaN
		return x
	case a >= 0x477ff000: // at or past 65520: inf
		return math.Float32frombits(sign | 0x7f800000)
	case a >= 0x38800000: // f16 normal: keep 10 mantissa bits
		a += 0xfff + (a>>13)&1
		return math.Float32frombits(sign | a&^0x1fff)
	}
	r := math.RoundToEven(float64(math.Float32frombits(a))*(1<<24)) / (1 << 24) // f16 subnormal: multiples of 2^-24
	return math.Float32frombits(sign | math.Float32bits(float32(r)))
}

func TestRoundHalf(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	xs := []float32{0, 1, 65504, 65519.996, 65520, 6.1035156e-05, 6.1e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
		float32(math.Inf(1)), 1e-30, 0.33325195, 0.33337402}
	for i := 0; i < 200000; i++ {
		xs = append(xs, math.Float32frombits(rng.Uint32()&0x7fffffff))
		xs = append(xs, float32(rng.NormFloat64()*math.Pow(2, float64(rng.Intn(48)-30))))
	}
	for _, x := range xs {
		for _, v := range []float32{x, -x} {
			if math.IsNaN(float64(v)) {
				continue
			}
			if got, want := roundHalf(v), f16r(v); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("roundHalf(%g) = %g, C conversion %g", v, got, want)
			}
		}
	}
}

// attnMask is llama.cpp's KQ mask entry for the query at position p and the
// key at position j: 0 when seen, -inf when in the future or, with a window
// w > 0, when p - j >= w (LLAMA_SWA_TYPE_STANDARD).
func attnMask(p, j, w int) float32 {
	if j > p || (w > 0 && p-j >= w) {
		return float32(math.Inf(-1))
	}
	return 0
}

// attnScore is the reference's score before the mask: the dot product times
// the scale (divided by the cap when capping), then cap*tanhf.
func attnScore(dot, scale, softcap float32) float32 {
	if softcap != 0 {
		scale /= softcap
	}
	s := float32(dot * scale)
	if softcap != 0 {
		s = float32(softcap * Tanhf(s))
	}
	return s
}

// goExpf is glibc's expf algorithm (32-entry table, cubic in double).
func goExpf(x float32) float32 {
	if !(x > -103) || x > 88 {
		return float32(math.Exp(float64(x)))
	}
	z := float64(0x1.71547652b82fep+0*32) * float64(x)
	kd := z + 0x1.8p+52
	ki := math.Float64bits(kd)
	kd -= 0x1.8p+52
	r := z - kd
	i := ki % 32
	s := math.Float64frombits(math.Float64bits(math.Exp2(float64(i)/32)) - i<<47 + ki<<47)
	p := float64(0x1.c6af84b912394p-5/32/32/32*r) + 0x1.ebfce50fac4f3p-3/32/32
	y := float64(0x1.62e42ff0c52d6p-1/32*r) + 1
	y = float64(p*float64(r*r)) + y
	return float32(y * s)
}

// goVexpf is ggml_v_expf for one lane.
func goVexpf(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	if n > 192 || n < -192 {
		return float32(math.Exp(float64(x)))
	}
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	u := float32(b * b)
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fma32(0x1.ffffecp-1, b, 1))
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

func goF16Acc(p *AttnF16Params, h0, h1 int) []float32 {
	hd := p.HeadDim
	yf := make([]float32, hd)
	dot := func(x []float32, y []uint16) float32 {
		for i := range yf {
			yf[i] = h2f(y[i])
		}
		return vecDotOrder(x[:hd], yf)
	}
	return eachHead(p, h0, h1, func(q []float32, g, qpos int, acc []float32) float32 {
		S, M := float32(0), float32(math.Inf(-1))
		for pos := 0; pos < p.Pos0+p.NTok; pos++ {
			mv := attnMask(qpos, pos, p.Window)
			if math.IsInf(float64(mv), -1) {
				continue
			}
			k, v := p.K[pos*p.KVStride+g*hd:], p.V[pos*p.KVStride+g*hd:]
			s := attnScore(dot(q, k), p.Scale, p.SoftCap)
			s += mv
			ms, vs := float32(1), float32(1)
			if s > M {
				ms = goExpf(M - s)
				M = s
				for i := range acc {
					acc[i] = roundHalf(float32(acc[i] * ms))
				}
			} else {
				vs = goExpf(s - M)
			}
			for i := range acc {
				acc[i] = roundHalf(fma32(h2f(v[i]), vs, acc[i]))
			}
			S = fma32(S, ms, vs)
		}
		return S
	})
}

func goTiled(p *AttnF16Params, h0, h1 int) []float32 {
	const tile = 64
	hd, nkv := p.HeadDim, p.Pos0+p.NTok
	sc := p.Scale
	if p.SoftCap != 0 {
		sc /= p.SoftCap
	}
	var kq, mask [tile]float32
	return eachHead(p, h0, h1, func(q []float32, g, qpos int, acc []float32) float32 {
		S, M := float32(0), float32(math.Inf(-1))
		for ic := 0; ic < nkv; ic += tile {
			skip := true
			for j := range mask {
				mask[j] = float32(math.Inf(-1)) // lanes past the cache: padding
				if ic+j < nkv {
					mask[j] = attnMask(qpos, ic+j, p.Window)
				}
				skip = skip && math.IsInf(float64(mask[j]), -1)
			}
			if skip {
				continue
			}
			for j := range kq {
				s := float32(math.Inf(-1))
				if ic+j < nkv {
					k := p.K[(ic+j)*p.KVStride+g*hd:]
					d := float32(0)
					for i := 0; i < hd; i++ {
						d = fma32(q[i], h2f(k[i]), d)
					}
					// the tile is scaled, then tanh'd, then multiplied by the cap
					s = float32(d * sc)
					if p.SoftCap != 0 {
						s = float32(Tanhf(s) * p.SoftCap)
					}
				} else if p.SoftCap != 0 {
					s = -p.SoftCap // tanh(-inf) * cap, then the padding's -inf
				}
				kq[j] = s + mask[j]
			}
			tmax := float32(math.Inf(-1))
			for _, x := range kq {
				tmax = max(tmax, x)
			}
			if math.IsInf(float64(tmax), -1) {
				continue // the reference zeroes this row's weights: V gets 0*v
			}
			if tmax > M {
				ms := goExpf(M - tmax)
				for d := range acc {
					acc[d] = float32(acc[d] * ms)
				}
				S = float32(S * ms)
				M = tmax
			}
			sum := 0.0
			for b := 0; b < tile; b += 16 {
				var lanes [16]float32
				for l := range lanes {
					lanes[l] = goVexpf(kq[b+l] - M) // 0 for the masked lanes
					kq[b+l] = lanes[l]
				}
				sum += float64(tree16(lanes))
			}
			S = float32(float64(S) + sum)
			for j := range kq {
				if ic+j >= nkv {
					break // zero padding of V: adds 0
				}
				v := p.V[(ic+j)*p.KVStride+g*hd:]
				for d := range acc {
					acc[d] = fma32(kq[j], h2f(v[d]), acc[d])
				}
			}
		}
		return S
	})
}

// eachHead runs head for every query token and head in [h0, h1) of p (q the
// head's query row, g its KV head, qpos its position, acc its output
// accumulator, cleared) and stores acc / S in a copy of p.Out, S being head's
// result.
func eachHead(p *AttnF16Params, h0, h1 int, head func(q []float32, g, qpos int, acc []float32) (S float32)) []float32 {
	out := append([]float32(nil), p.Out...)
	hd, group := p.HeadDim, p.NHead/p.NHeadKV
	acc := make([]float32, hd)
	for tk := 0; tk < p.NTok; tk++ {
		for h := h0; h < h1; h++ {
			clear(acc)
			S := head(p.Q[tk*p.QStride+h*hd:], h/group, p.Pos0+tk, acc)
			normalizeInto(out[tk*p.OutStride+h*hd:], acc, S)
		}
	}
	return out
}

// normalizeInto stores acc / S in out (zeros when S is 0: the reference
// multiplies by 1/S only when S is not 0).
func normalizeInto(out, acc []float32, S float32) {
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i, a := range acc {
		out[i] = a * inv
	}
}

type attnCase struct{ ntok, pos0, nh, nkv, hd, h0, h1 int }

// attnCases: single tokens, an empty cache, GQA ratios 1/4/8, head sizes
// 8..128 and odd ones, positions crossing 64-position tiles and 32-row
// blocks, partial head ranges.
var attnCases = []attnCase{
	{1, 0, 1, 1, 1, 0, 1},
	{1, 0, 4, 4, 8, 0, 4},
	{1, 7, 8, 2, 32, 0, 8},
	{1, 63, 8, 1, 64, 0, 8},
	{1, 64, 8, 1, 64, 3, 8},
	{1, 200, 8, 8, 128, 0, 8},
	{5, 0, 8, 2, 64, 2, 7},
	{3, 20, 4, 4, 128, 0, 4},
	{9, 3, 6, 3, 80, 1, 5},
	{2, 100, 8, 1, 100, 0, 8},
	{7, 60, 8, 2, 16, 0, 8},
	{70, 0, 4, 1, 64, 0, 4},
	{66, 61, 8, 2, 32, 1, 8},
	{40, 130, 2, 2, 128, 0, 2},
	{64, 0, 8, 8, 8, 0, 8},
	{33, 31, 4, 4, 24, 0, 4},
	{65, 3, 2, 1, 12, 0, 2},
}

func attnFixture(c attnCase, rng *rand.Rand, qf16 bool, qmul float32) *AttnF16Params {
	npos := c.pos0 + c.ntok
	p := &AttnF16Params{NTok: c.ntok, Pos0: c.pos0, NHead: c.nh, NHeadKV: c.nkv, HeadDim: c.hd,
		QStride: c.nh*c.hd + 5, KVStride: c.nkv*c.hd + 3, OutStride: c.nh*c.hd + 1, Scale: 1 / float32(math.Sqrt(float64(c.hd)))}
	p.Q = randomF32(c.ntok*p.QStride, rng)
	for i := range p.Q {
		p.Q[i] *= qmul // sharper softmax: more max changes
		if qf16 {
			p.Q[i] = f16r(p.Q[i])
		}
	}
	half := func(n int) []uint16 {
		h := make([]uint16, n)
		for i, x := range randomF32(n, rng) {
			h[i] = F32ToF16(x)
		}
		return h
	}
	p.K, p.V = half(npos*p.KVStride), half(npos*p.KVStride)
	p.Out = randomF32(c.ntok*p.OutStride, rng)
	return p
}

// widen returns the f32 AttnParams of p, for the f32 kernel.
func widen(p *AttnF16Params) *AttnParams {
	w := &AttnParams{NTok: p.NTok, Pos0: p.Pos0, NHead: p.NHead, NHeadKV: p.NHeadKV, HeadDim: p.HeadDim,
		Q: p.Q, QStride: p.QStride, KVStride: p.KVStride, Scale: p.Scale, Out: append([]float32(nil), p.Out...), OutStride: p.OutStride,
		Window: p.Window, SoftCap: p.SoftCap}
	w.K, w.V = make([]float32, len(p.K)), make([]float32, len(p.V))
	for i := range p.K {
		w.K[i], w.V[i] = F16ToF32(p.K[i]), F16ToF32(p.V[i])
	}
	return w
}

func testExactAttention(t *testing.T, name string, qf16 bool, tol float64,
	kernel func(*AttnF16Params, int, int, []float32), oracle func(*AttnF16Params, int, int) []float32, scratch func(int) int) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewSource(15))
		for _, c := range attnCases {
			for _, qmul := range []float32{1, 4} {
				p := attnFixture(c, rng, qf16, qmul)
				want := oracle(p, c.h0, c.h1)
				f32 := naiveAttention(widen(p), c.h0, c.h1)
				kernel(p, c.h0, c.h1, make([]float32, scratch(c.hd)))
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(p.Out[i]),
						"%s %s case %+v q*%g at %d: %g, want %g", name, impl, c, qmul, i, p.Out[i], want[i])
					require.InDelta(t, f32[i], p.Out[i], tol, "%s far from f32 attention: case %+v at %d", name, c, i)
				}
			}
		}
	})
}

func TestAttentionF16Acc(t *testing.T) {
	testExactAttention(t, "AttentionF16Acc", true, 2e-2, AttentionF16Acc, goF16Acc, AttentionF16AccScratch)
}

func TestAttentionTiled(t *testing.T) {
	testExactAttention(t, "AttentionTiled", false, 1e-4, AttentionTiled, goTiled, AttentionTiledScratch)
}

// windowCases: sliding windows of 1, smaller than, equal to and larger than
// the position count (pos0+ntok), windows lying wholly in the cached prefix
// (the query at pos0 sees only itself among the new rows), windows that are
// not multiples of 64 with positions crossing 64-position tiles and 32-row
// blocks, exactly 64, and soft-caps from 0.1 (saturated) to 50, or none.
var windowCases = []struct {
	attnCase
	window int
	cap    float32
}{
	{attnCase{1, 0, 4, 2, 64, 0, 4}, 1, 0},
	{attnCase{1, 0, 4, 2, 64, 0, 4}, 1, 3},
	{attnCase{1, 100, 4, 2, 64, 0, 4}, 16, 3},
	{attnCase{5, 10, 8, 2, 32, 0, 8}, 16, 0},
	{attnCase{5, 10, 8, 2, 32, 2, 7}, 15, 3},
	{attnCase{5, 10, 8, 2, 32, 0, 8}, 40, 2.5},
	{attnCase{7, 60, 8, 2, 16, 0, 8}, 67, 0},
	{attnCase{9, 3, 6, 3, 80, 1, 5}, 2, 1},
	{attnCase{3, 200, 8, 8, 128, 0, 8}, 128, 30},
	{attnCase{70, 0, 4, 1, 64, 0, 4}, 16, 3},
	{attnCase{70, 0, 4, 1, 64, 0, 4}, 1, 0},
	{attnCase{66, 61, 8, 2, 32, 1, 8}, 70, 2.5},
	{attnCase{66, 61, 8, 2, 32, 0, 8}, 127, 0},
	{attnCase{40, 130, 2, 2, 128, 0, 2}, 65, 1},
	{attnCase{100, 30, 4, 2, 12, 0, 4}, 33, 5},
	{attnCase{64, 200, 4, 4, 16, 0, 4}, 100, 0},
	{attnCase{64, 200, 4, 4, 16, 0, 4}, 64, 50},
	{attnCase{33, 31, 4, 4, 24, 0, 4}, 64, 3},
	{attnCase{65, 3, 2, 1, 12, 0, 2}, 1000, 3},
	{attnCase{20, 80, 2, 1, 16, 0, 2}, 30, 0.1},
	{attnCase{1, 300, 4, 1, 32, 0, 4}, 0, 3},
	{attnCase{70, 0, 4, 1, 64, 0, 4}, 0, 3},
}

// The sliding window and the soft-cap: the exact kernels give the bits of
// the llama.cpp-structured models on every kernel set, stay close to the
// f32 kernel, which stays close to a double model; a window covering every
// position changes no bit. The models run once per case, the kernels once
// per case and kernel set.
func TestAttentionWindowSoftCap(t *testing.T) {
	type path struct {
		name   string
		kernel func(*AttnF16Params, int, int, []float32)
		scr    int
	}
	type run struct {
		c         attnCase
		window    int
		cap       float32
		qmul      float32
		path      path
		p         *AttnF16Params
		out0      []float32 // Out before the call
		want, f32 []float32
		tol       float64
	}
	type f32run struct {
		c     attnCase
		p     *AttnParams
		out0  []float32
		want  []float32
		label string
	}
	rng := rand.New(rand.NewSource(16))
	var runs []run
	var f32runs []f32run
	for _, c := range windowCases {
		for _, ph := range []struct {
			path
			qf16   bool
			tol    float64
			oracle func(*AttnF16Params, int, int) []float32
		}{
			{path{"AttentionF16Acc", AttentionF16Acc, AttentionF16AccScratch(c.hd)}, true, 2e-2, goF16Acc},
			{path{"AttentionTiled", AttentionTiled, AttentionTiledScratch(c.hd)}, false, 1e-4, goTiled},
		} {
			for _, qmul := range []float32{1, 4} {
				p := attnFixture(c.attnCase, rng, ph.qf16, qmul)
				p.Window, p.SoftCap = c.window, c.cap
				runs = append(runs, run{c: c.attnCase, window: c.window, cap: c.cap, qmul: qmul, path: ph.path, p: p,
					out0: append([]float32(nil), p.Out...), want: ph.oracle(p, c.h0, c.h1),
					f32: naiveAttention(widen(p), c.h0, c.h1), tol: ph.tol})
			}
		}
		w := widen(attnFixture(c.attnCase, rng, false, 2))
		w.Window, w.SoftCap = c.window, c.cap
		f32runs = append(f32runs, f32run{c: c.attnCase, p: w, out0: append([]float32(nil), w.Out...),
			want: naiveAttention(w, c.h0, c.h1), label: fmt.Sprintf("case %+v window %d cap %g", c.attnCase, c.window, c.cap)})
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, r := range runs {
			c, p := r.c, *r.p
			p.Out = append([]float32(nil), r.out0...)
			scr := make([]float32, r.path.scr)
			r.path.kernel(&p, c.h0, c.h1, scr)
			for i := range r.want {
				if math.Float32bits(r.want[i]) != math.Float32bits(p.Out[i]) {
					t.Fatalf("%s %s case %+v window %d cap %g q*%g at %d: %g, want %g", r.path.name, impl, c, r.window, r.cap, r.qmul, i, p.Out[i], r.want[i])
				}
				if math.Abs(float64(r.f32[i]-p.Out[i])) > r.tol {
					t.Fatalf("%s far from f32 attention: case %+v window %d cap %g at %d: %g vs %g", r.path.name, c, r.window, r.cap, i, p.Out[i], r.f32[i])
				}
			}
			if r.window >= c.pos0+c.ntok {
				got := p.Out
				p.Out, p.Window = append([]float32(nil), r.out0...), 0
				r.path.kernel(&p, c.h0, c.h1, scr)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(p.Out[i]) {
						t.Fatalf("%s %s: window %d >= positions is not a no-op at %d", r.path.name, impl, r.window, i)
					}
				}
			}
		}
		// the f32 kernel against the double model
		for _, r := range f32runs {
			p := *r.p
			p.Out = append([]float32(nil), r.out0...)
			Attention(&p, r.c.h0, r.c.h1, make([]float32, r.c.pos0+r.c.ntok))
			for i := range r.want {
				if math.Abs(float64(r.want[i]-p.Out[i])) > 2e-5 {
					t.Fatalf("Attention %s %s at %d: %g, double model %g", impl, r.label, i, p.Out[i], r.want[i])
				}
			}
		}
	})
}

// Tanhf is the C library's: on glibc it agrees with a correctly rounded
// tanh to within an ulp, and it is odd.
func TestTanhf(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	for i := 0; i < 20000; i++ {
		x := float32(rng.NormFloat64() * math.Pow(10, 4*rng.Float64()-2))
		got, want := Tanhf(x), float32(math.Tanh(float64(x)))
		require.InDelta(t, want, got, 2*float64(math.Nextafter32(float32(math.Abs(float64(want))), 2)-float32(math.Abs(float64(want)))), "tanhf(%g)", x)
		require.Equal(t, -got, Tanhf(-x))
	}
	require.Equal(t, float32(1), Tanhf(float32(math.Inf(1))))
	require.Equal(t, float32(0), Tanhf(0))
}

func TestAttentionExactErrors(t *testing.T) {
	for name, f := range map[string]func(*AttnF16Params, int, int, []float32){
		"f16acc": AttentionF16Acc, "tiled": AttentionTiled,
	} {
		t.Run(name, func(t *testing.T) {
			ok := func() *AttnF16Params {
				return &AttnF16Params{NTok: 1, NHead: 1, NHeadKV: 1, HeadDim: 8, Q: make([]float32, 8),
					K: make([]uint16, 8), V: make([]uint16, 8), KVStride: 8, Out: make([]float32, 8)}
			}
			scr := make([]float32, AttentionTiledScratch(8))
			f(ok(), 0, 1, scr)
			require.Panics(t, func() { f(nil, 0, 1, scr) })
			require.Panics(t, func() { f(ok(), 0, 1, scr[:7]) }, "short scratch")
			require.Panics(t, func() { f(ok(), 0, 2, scr) }, "head range")
			p := ok()
			p.V = p.V[:7]
			require.Panics(t, func() { f(p, 0, 1, scr) }, "short V")
			p = ok()
			p.Pos0 = 1
			require.Panics(t, func() { f(p, 0, 1, scr) }, "cache shorter than pos0+ntok")
			p = ok()
			p.NHead = 3
			p.NHeadKV = 2
			require.Panics(t, func() { f(p, 0, 1, scr) }, "heads not a multiple of kv heads")
			for _, bad := range []struct {
				window int
				cap    float32
			}{{-1, 0}, {0, -1}, {0, float32(math.NaN())}, {0, float32(math.Inf(1))}, {0, float32(math.Inf(-1))}} {
				p = ok()
				p.Window, p.SoftCap = bad.window, bad.cap
				require.Regexp(t, "window|soft-cap", panicText(func() { f(p, 0, 1, scr) }), "window %d cap %g", bad.window, bad.cap)
				w := widen(p)
				require.Panics(t, func() { Attention(w, 0, 1, scr) }, "f32: window %d cap %g", bad.window, bad.cap)
			}
			p = ok()
			p.Window, p.SoftCap = 1<<40, 1e-30 // any window, any positive cap
			f(p, 0, 1, scr)
		})
	}
}

// The vector exp of the tiled kernel over its whole input range, including
// the lanes that leave the fast path (|n| > 126).
func TestAttentionTiledExpRange(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, spread := range []float32{10, 100, 300} {
			c := attnCase{20, 80, 2, 1, 16, 0, 2}
			rng := rand.New(rand.NewSource(int64(spread)))
			p := attnFixture(c, rng, false, spread)
			want := goTiled(p, 0, 2)
			AttentionTiled(p, 0, 2, make([]float32, AttentionTiledScratch(16)))
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(p.Out[i]), fmt.Sprintf("%s spread %g at %d", impl, spread, i))
			}
		}
	})
}

// The f16-accumulating kernel at depth over its whole exponential range:
// one token (decode) and a few, several 64-position chunks, head sizes with
// and without a scalar tail, sharp softmaxes whose exponent arguments leave
// the fast range (< -103) on many lanes.
func TestAttentionF16AccExpRange(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, c := range []attnCase{{1, 300, 8, 2, 64, 0, 8}, {1, 130, 4, 1, 128, 1, 4}, {3, 77, 4, 2, 80, 0, 4}, {1, 1000, 8, 1, 64, 3, 7}} {
			for _, spread := range []float32{1, 10, 100, 300} {
				rng := rand.New(rand.NewSource(int64(spread) + int64(c.pos0)))
				p := attnFixture(c, rng, true, spread)
				want := goF16Acc(p, c.h0, c.h1)
				AttentionF16Acc(p, c.h0, c.h1, make([]float32, AttentionF16AccScratch(c.hd)))
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(p.Out[i]), fmt.Sprintf("%s case %+v spread %g at %d", impl, c, spread, i))
				}
			}
		}
	})
}

package kernels

import (
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// AttentionKVQ is checked bit for bit against a Go model of its contract
// (csrc/kernels.h, k_attention_kvq) built on the exposed pieces (the q8_0
// quantizer, the row dot of MatVec, Dequant, glibc's expf), on every
// kernel set; every set against the reference set; and against f32
// attention over the dequantized cache within a tolerance.

var kvTypes = []Type{F16, Q8_0, Q4_0}

// kvqFixture makes a cache of npos rows of the two types (random values,
// stored with StoreKV) and random queries.
func kvqFixture(t *testing.T, c attnCase, kt, vt Type, rng *rand.Rand, qmul float32) (*AttnKVQParams, []float32, []float32) {
	npos, kvd := c.pos0+c.ntok, c.nkv*c.hd
	kRow, _ := kt.RowBytes(int64(kvd))
	vRow, _ := vt.RowBytes(int64(kvd))
	p := &AttnKVQParams{NTok: c.ntok, Pos0: c.pos0, NHead: c.nh, NHeadKV: c.nkv, HeadDim: c.hd, KType: kt, VType: vt,
		QStride: c.nh*c.hd + 5, KStride: int(kRow) + 6, VStride: int(vRow), OutStride: c.nh*c.hd + 1,
		Scale: 1 / float32(math.Sqrt(float64(c.hd)))}
	p.Q = randomF32(c.ntok*p.QStride, rng)
	for i := range p.Q {
		p.Q[i] *= qmul
	}
	p.K, p.V = make([]byte, npos*p.KStride), make([]byte, npos*p.VStride)
	kf, vf := randomF32(npos*kvd, rng), randomF32(npos*kvd, rng)
	for i := 0; i < npos; i++ {
		if i%7 == 3 { // an all-zero row: the quantizers' 0 scale
			clear(kf[i*kvd : (i+1)*kvd])
		}
		StoreKV(kt, kf[i*kvd:(i+1)*kvd], p.K[i*p.KStride:])
		StoreKV(vt, vf[i*kvd:(i+1)*kvd], p.V[i*p.VStride:])
	}
	// the cache as stored, widened to f32, for the f32 comparison
	kw, vw := make([]float32, npos*kvd), make([]float32, npos*kvd)
	for i := 0; i < npos; i++ {
		Dequant(kt, p.K[i*p.KStride:i*p.KStride+int(kRow)], kw[i*kvd:(i+1)*kvd])
		Dequant(vt, p.V[i*p.VStride:i*p.VStride+int(vRow)], vw[i*kvd:(i+1)*kvd])
	}
	p.Out = randomF32(c.ntok*p.OutStride, rng)
	return p, kw, vw
}

// goKVQ is the model of k_attention_kvq.
func goKVQ(t *testing.T, p *AttnKVQParams, h0, h1 int) []float32 {
	hd, group := p.HeadDim, p.NHead/p.NHeadKV
	out := append([]float32(nil), p.Out...)
	kgb, _ := p.KType.RowBytes(int64(hd))
	vgb, _ := p.VType.RowBytes(int64(hd))
	q8 := make([]byte, hd/32*34)
	qf, yf, vf, acc := make([]float32, hd), make([]float32, hd), make([]float32, hd), make([]float32, hd)
	y := make([]float32, 1)
	for tk := 0; tk < p.NTok; tk++ {
		qpos := p.Pos0 + tk
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[tk*p.QStride+h*hd : tk*p.QStride+(h+1)*hd]
			if p.KType == F16 {
				for i := range qf {
					qf[i] = f16r(q[i])
				}
			} else {
				QuantizeAct(Q8_0, q, q8)
			}
			clear(acc)
			S, M := float32(0), float32(math.Inf(-1))
			for pos := 0; pos <= qpos; pos++ {
				if math.IsInf(float64(attnMask(qpos, pos, p.Window)), -1) {
					continue
				}
				k := p.K[pos*p.KStride+g*int(kgb):]
				v := p.V[pos*p.VStride+g*int(vgb):]
				var dot float32
				if p.KType == F16 {
					for i := range yf {
						yf[i] = F16ToF32(uint16(k[2*i]) | uint16(k[2*i+1])<<8)
					}
					dot = vecDotOrder(qf, yf)
				} else {
					MatVec(p.KType, hd, k[:kgb], int(kgb), q8, y, 0, 1)
					dot = y[0]
				}
				s := attnScore(dot, p.Scale, p.SoftCap)
				ms, vs := float32(1), float32(1)
				if s > M {
					ms = goExpf(M - s)
					M = s
					for i := range acc {
						if p.VType == F16 {
							acc[i] = roundHalf(float32(acc[i] * ms))
						} else {
							acc[i] = float32(acc[i] * ms)
						}
					}
				} else {
					vs = goExpf(s - M)
				}
				Dequant(p.VType, v[:vgb], vf)
				for i := range acc {
					if p.VType == F16 {
						acc[i] = roundHalf(fma32(vf[i], vs, acc[i]))
					} else {
						acc[i] = fma32(vf[i], vs, acc[i])
					}
				}
				S = fma32(S, ms, vs)
			}
			normalizeInto(out[tk*p.OutStride+h*hd:], acc, S)
		}
	}
	return out
}

// kvqCases: the attnCases of fewer than 32 rows whose head size the
// quantized blocks divide (AttentionKVQ has one path whatever the rows),
// and one head alone, 65 and 33 rows, head size 96.
var kvqCases = append(slices.DeleteFunc(slices.Clone(attnCases), func(c attnCase) bool { return c.hd%32 != 0 || c.ntok >= 32 }),
	attnCase{1, 0, 1, 1, 32, 0, 1}, attnCase{65, 0, 2, 1, 32, 0, 2}, attnCase{33, 3, 4, 2, 96, 1, 4})

func TestAttentionKVQ(t *testing.T) {
	type run struct {
		c            attnCase
		kt, vt       Type
		window       int
		cap, qmul    float32
		want, f32out []float32
	}
	// the cases, with the reference set's outputs
	var runs []run
	var fixtures []*AttnKVQParams
	rng := rand.New(rand.NewSource(27))
	withImpl(t, "ref", func() {
		for _, c := range kvqCases {
			for _, kt := range kvTypes {
				for _, vt := range kvTypes {
					if kt == F16 && vt == F16 {
						continue
					}
					for _, opt := range []struct {
						window    int
						cap, qmul float32
					}{{0, 0, 1}, {0, 0, 6}, {5, 0, 1}, {0, 1.5, 4}} {
						p, kw, vw := kvqFixture(t, c, kt, vt, rng, opt.qmul)
						p.Window, p.SoftCap = opt.window, opt.cap
						f := &AttnParams{NTok: p.NTok, Pos0: p.Pos0, NHead: p.NHead, NHeadKV: p.NHeadKV, HeadDim: p.HeadDim,
							Q: p.Q, QStride: p.QStride, K: kw, V: vw, KVStride: c.nkv * c.hd, Scale: p.Scale,
							Out: append([]float32(nil), p.Out...), OutStride: p.OutStride, Window: p.Window, SoftCap: p.SoftCap}
						out0 := append([]float32(nil), p.Out...)
						AttentionKVQ(p, c.h0, c.h1, make([]float32, AttentionKVQScratch(c.hd)))
						runs = append(runs, run{c, kt, vt, opt.window, opt.cap, opt.qmul, p.Out, naiveAttention(f, c.h0, c.h1)})
						p.Out = out0
						fixtures = append(fixtures, p)
					}
				}
			}
		}
	})
	forEachImpl(t, func(t *testing.T, impl string) {
		for i, r := range runs {
			p := *fixtures[i]
			p.Out = append([]float32(nil), fixtures[i].Out...)
			want := goKVQ(t, &p, r.c.h0, r.c.h1)
			AttentionKVQ(&p, r.c.h0, r.c.h1, make([]float32, AttentionKVQScratch(r.c.hd)))
			for j := range want {
				require.Equal(t, math.Float32bits(want[j]), math.Float32bits(p.Out[j]),
					"%s: K %v V %v case %+v window %d cap %g q*%g at %d: %g, model %g", impl, r.kt, r.vt, r.c, r.window, r.cap, r.qmul, j, p.Out[j], want[j])
				require.Equal(t, math.Float32bits(r.want[j]), math.Float32bits(p.Out[j]),
					"%s vs ref: K %v V %v case %+v at %d", impl, r.kt, r.vt, r.c, j)
				// Q quantized to q8_0 moves sharp scores (q*6) far: the f32
				// bound holds for plain ones
				tol := 2e-2
				if r.kt != F16 {
					tol = 5e-2
				}
				if r.qmul == 1 {
					require.InDelta(t, r.f32out[j], p.Out[j], tol, "far from f32 attention: K %v V %v case %+v at %d", r.kt, r.vt, r.c, j)
				}
			}
		}
	})
}

// Bad types, shapes and short slices are errors before any work.
func TestAttentionKVQErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	p, _, _ := kvqFixture(t, attnCase{2, 3, 4, 2, 32, 0, 4}, Q8_0, Q4_0, rng, 1)
	scr := make([]float32, AttentionKVQScratch(32))
	AttentionKVQ(p, 0, 4, scr)
	for name, mod := range map[string]func(q *AttnKVQParams){
		"both f16":  func(q *AttnKVQParams) { q.KType, q.VType = F16, F16 },
		"q4_k":      func(q *AttnKVQParams) { q.KType = Q4_K },
		"head dim":  func(q *AttnKVQParams) { q.HeadDim = 16 },
		"short k":   func(q *AttnKVQParams) { q.K = q.K[:len(q.K)-7] },
		"short v":   func(q *AttnKVQParams) { q.V = q.V[:10] },
		"k stride":  func(q *AttnKVQParams) { q.KStride = 10 },
		"window":    func(q *AttnKVQParams) { q.Window = -1 },
		"gqa ratio": func(q *AttnKVQParams) { q.NHeadKV = 3 },
	} {
		q := *p
		mod(&q)
		require.Panics(t, func() { AttentionKVQ(&q, 0, 4, scr) }, name)
	}
	require.Panics(t, func() { AttentionKVQ(p, 0, 4, scr[:10]) }, "scratch")
	require.Panics(t, func() { AttentionKVQ(p, 2, 5, scr) }, "head range")
	require.Panics(t, func() { StoreKV(Q4_K, make([]float32, 256), make([]byte, 1000)) })
	require.Panics(t, func() { StoreKV(Q8_0, make([]float32, 31), make([]byte, 100)) })
	require.Panics(t, func() { StoreKV(Q4_0, make([]float32, 64), make([]byte, 35)) })
}

// StoreKV's q4_0 is the reference's rounding: checked on values whose
// quantization is known (the Go model of quantize_row_q4_0_ref).
func TestStoreKVQ4_0(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	forEachImpl(t, func(t *testing.T, impl string) {
		x := randomF32(32*40, rng)
		for i := 0; i < 32; i++ {
			x[32+i] = 0 // a zero block
			x[64+i] = float32(i%5) * 0.25
		}
		got := make([]byte, 18*40)
		StoreKV(Q4_0, x, got)
		for b := 0; b < 40; b++ {
			xb := x[32*b : 32*b+32]
			var amax, mx float32
			for _, v := range xb {
				if a := float32(math.Abs(float64(v))); amax < a {
					amax, mx = a, v
				}
			}
			d := mx / -8
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			require.Equal(t, F32ToF16(d), uint16(got[18*b])|uint16(got[18*b+1])<<8, "block %d scale", b)
			for j := 0; j < 16; j++ {
				q0 := min(15, int8(float32(xb[j]*id)+8.5))
				q1 := min(15, int8(float32(xb[j+16]*id)+8.5))
				require.Equal(t, byte(q0)|byte(q1)<<4, got[18*b+2+j], "block %d byte %d", b, j)
			}
		}
	})
}

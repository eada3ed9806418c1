package kernels

import (
	"math"
	"math/rand"
	goruntime "runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// quantize activations x for weight type wt, returning the bytes and their
// dequantized values.
func actFor(t *testing.T, wt Type, x []float32) ([]byte, []float32) {
	t.Helper()
	act := wt.ActType()
	rb, err := act.RowBytes(int64(len(x)))
	require.NoError(t, err)
	a := make([]byte, rb)
	QuantizeAct(act, x, a)
	return a, dequantAct(t, act, a, len(x))
}

// exactDot is sum(w*a) in float64 and the sum of |w*a| (the error scale).
func exactDot(w, a []float32) (float64, float64) {
	var s, abs float64
	for i := range w {
		p := float64(w[i]) * float64(a[i])
		s += p
		abs += math.Abs(p)
	}
	return s, abs
}

// dotTol is the tolerance of a dot product of n terms whose |products| sum
// to abs: f32 accumulation error (a few ulps per block sum).
func dotTol(abs float64) float64 { return 2e-5*abs + 1e-30 }

func blocksFor(t Type) []int {
	be := t.BlockElems()
	if be == 1 {
		return []int{0, 1, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1000}
	}
	return []int{0, be, 2 * be, 7 * be, 16 * be}
}

// MatVec of every weight type against sum(dequant(w) * dequant(a)).
func TestMatVecMatchesDequant(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, wt := range weightTypes {
			for _, n := range blocksFor(wt) {
				for style := 0; style < 3; style++ {
					const rows = 3
					rb, _ := wt.RowBytes(int64(n))
					w := make([]byte, 0, rows*int(rb))
					for r := 0; r < rows; r++ {
						w = append(w, randomRow(wt, n, rng, style)...)
					}
					x := randomF32(n, rng)
					a, af := actFor(t, wt, x)
					y := make([]float32, rows)
					MatVec(wt, n, w, int(rb), a, y, 0, rows)
					for r := 0; r < rows; r++ {
						wf := make([]float32, n)
						Dequant(wt, w[r*int(rb):], wf)
						want, abs := exactDot(wf, af)
						if math.IsInf(abs, 0) || math.IsNaN(abs) || abs > 1e37 {
							continue // extreme scales overflow f32 for this row
						}
						if d := math.Abs(float64(y[r]) - want); d > dotTol(abs) {
							t.Fatalf("%v n=%d style=%d row %d: got %g want %g (|diff| %g > tol %g)", wt, n, style, r, y[r], want, d, dotTol(abs))
						}
					}
				}
			}
		}
	})
}

// exactMatMul: the x86 kernels keep each row's summation order in the tiled
// MatMulQ kernels, so MatMulQ equals MatVec bit for bit (the reference build
// computes both with the same dot product, except for the batchOrder types);
// other architectures are held to a tolerance until their tiles do the same.
var exactMatMul = goruntime.GOARCH == "amd64"

// batchOrder reports the types whose reference build sums a product of two
// or more tokens in another order than its one-token dot (IQ4_NL: llamafile's
// tinyBLAS_Q0 against ggml's vec_dot; see csrc/kernels.h). Woolly follows
// both, so their MatMulQ of a batch equals the ref set's MatMulQ bit for bit
// (on amd64), and MatVec only within rounding.
func batchOrder(wt Type) bool { return wt == IQ4_NL }

// MatMulQ must equal MatVec token by token (see exactMatMul), or for a
// batchOrder type and ntok >= 2 the ref set's MatMulQ.
func TestMatMulQMatchesMatVec(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, wt := range weightTypes {
			n := 2 * max(wt.BlockElems(), 32)
			if wt.BlockElems() == 256 {
				n = 512
			}
			const rows, r0, r1 = 37, 3, 36
			rb, _ := wt.RowBytes(int64(n))
			w := make([]byte, 0, rows*int(rb))
			for r := 0; r < rows; r++ {
				w = append(w, randomRow(wt, n, rng, 0)...)
			}
			for _, ntok := range []int{1, 2, 5, 9} {
				ab, _ := wt.ActType().RowBytes(int64(n))
				aStride := int(ab) + 8
				a := make([]byte, ntok*aStride)
				for tk := 0; tk < ntok; tk++ {
					QuantizeAct(wt.ActType(), randomF32(n, rng), a[tk*aStride:])
				}
				yStride := rows + 3
				y := make([]float32, ntok*yStride)
				for i := range y {
					y[i] = -12345
				}
				MatMulQ(wt, n, w, int(rb), r0, r1, a, aStride, ntok, y, yStride)
				var yb []float32 // the ref set's batch, for batchOrder types
				if batchOrder(wt) && ntok >= 2 {
					yb = make([]float32, len(y))
					withImpl(t, "ref", func() { MatMulQ(wt, n, w, int(rb), r0, r1, a, aStride, ntok, yb, yStride) })
				}
				for tk := 0; tk < ntok; tk++ {
					yv := make([]float32, rows)
					MatVec(wt, n, w, int(rb), a[tk*aStride:], yv, r0, r1)
					for r := 0; r < yStride; r++ {
						got := y[tk*yStride+r]
						if r < r0 || r >= r1 {
							require.Equal(t, float32(-12345), got, "%v wrote outside rows at t=%d r=%d", wt, tk, r)
							continue
						}
						if yb != nil {
							require.InDelta(t, yv[r], got, 1e-5*(1+math.Abs(float64(yv[r]))), "%v ntok=%d t=%d r=%d vs MatVec", wt, ntok, tk, r)
							if exactMatMul {
								require.Equal(t, math.Float32bits(yb[tk*yStride+r]), math.Float32bits(got), "%v ntok=%d t=%d r=%d: %g vs the ref batch %g", wt, ntok, tk, r, got, yb[tk*yStride+r])
							} else {
								require.InDelta(t, yb[tk*yStride+r], got, 1e-5*(1+math.Abs(float64(yv[r]))), "%v ntok=%d t=%d r=%d vs the ref batch", wt, ntok, tk, r)
							}
						} else if exactMatMul {
							require.Equal(t, math.Float32bits(yv[r]), math.Float32bits(got), "%v ntok=%d t=%d r=%d: %g vs %g", wt, ntok, tk, r, got, yv[r])
						} else {
							require.InDelta(t, yv[r], got, 1e-5*(1+math.Abs(float64(yv[r]))), "%v ntok=%d t=%d r=%d", wt, ntok, tk, r)
						}
					}
				}
			}
		}
	})
}

func naiveSgemm(transB bool, m0, m1, N, K int, A []float32, lda int, B []float32, ldb int, C []float32, ldc int) {
	for m := m0; m < m1; m++ {
		for j := 0; j < N; j++ {
			var s float64
			for k := 0; k < K; k++ {
				b := B[k*ldb+j]
				if transB {
					b = B[j*ldb+k]
				}
				s += float64(A[m*lda+k]) * float64(b)
			}
			C[m*ldc+j] = float32(s)
		}
	}
}

func TestSgemm(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 16, 32}, {6, 16, 33}, {7, 17, 31}, {13, 40, 100}, {32, 64, 256}, {5, 1, 300}, {2, 3, 0}}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			for _, transB := range []bool{false, true} {
				lda, ldc := K+3, N+2
				ldb := N + 1
				if transB {
					ldb = K + 1
				}
				A := randomF32(M*lda, rng)
				B := randomF32(max(K, N)*ldb, rng)
				C := randomF32(M*ldc, rng)
				want := append([]float32(nil), C...)
				m0, m1 := 0, M
				if M > 2 {
					m0 = 1
				}
				naiveSgemm(transB, m0, m1, N, K, A, lda, B, ldb, want, ldc)
				Sgemm(transB, m0, m1, N, K, A, lda, B, ldb, C, ldc)
				for i := range C {
					require.InDelta(t, want[i], C[i], 1e-5*float64(K+1), "M%d N%d K%d transB=%v at %d", M, N, K, transB, i)
				}
			}
		}
	})
}

// naiveAttention is attention in double precision: positions first..p of the
// window (all 0..p without one), scores soft-capped as cap*tanh(s/cap).
func naiveAttention(p *AttnParams, h0, h1 int) []float32 {
	out := append([]float32(nil), p.Out...)
	group := p.NHead / p.NHeadKV
	for tk := 0; tk < p.NTok; tk++ {
		npos := p.Pos0 + tk + 1
		first := 0
		if p.Window > 0 {
			first = max(0, npos-p.Window)
		}
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[tk*p.QStride+h*p.HeadDim:]
			s := make([]float64, npos)
			mx := math.Inf(-1)
			for pos := first; pos < npos; pos++ {
				k := p.K[pos*p.KVStride+g*p.HeadDim:]
				var d float64
				for i := 0; i < p.HeadDim; i++ {
					d += float64(q[i]) * float64(k[i])
				}
				s[pos] = d * float64(p.Scale)
				if c := float64(p.SoftCap); c != 0 {
					s[pos] = c * math.Tanh(s[pos]/c)
				}
				mx = math.Max(mx, s[pos])
			}
			var sum float64
			for pos := first; pos < npos; pos++ {
				s[pos] = math.Exp(s[pos] - mx)
				sum += s[pos]
			}
			o := out[tk*p.OutStride+h*p.HeadDim:]
			for i := 0; i < p.HeadDim; i++ {
				var acc float64
				for pos := first; pos < npos; pos++ {
					acc += s[pos] / sum * float64(p.V[pos*p.KVStride+g*p.HeadDim+i])
				}
				o[i] = float32(acc)
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	cases := []struct{ ntok, pos0, nh, nkv, hd, h0, h1 int }{
		{1, 0, 1, 1, 1, 0, 1},
		{1, 7, 8, 2, 32, 0, 8},
		{5, 0, 8, 2, 32, 2, 7},
		{3, 20, 4, 4, 64, 0, 4},
		{9, 3, 6, 3, 17, 1, 5},
		{2, 300, 8, 1, 128, 0, 8},
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, c := range cases {
			npos := c.pos0 + c.ntok
			p := &AttnParams{NTok: c.ntok, Pos0: c.pos0, NHead: c.nh, NHeadKV: c.nkv, HeadDim: c.hd,
				QStride: c.nh*c.hd + 5, KVStride: c.nkv*c.hd + 3, OutStride: c.nh*c.hd + 1, Scale: 1 / float32(math.Sqrt(float64(c.hd)))}
			p.Q = randomF32(c.ntok*p.QStride, rng)
			p.K = randomF32(npos*p.KVStride, rng)
			p.V = randomF32(npos*p.KVStride, rng)
			p.Out = randomF32(c.ntok*p.OutStride, rng)
			want := naiveAttention(p, c.h0, c.h1)
			Attention(p, c.h0, c.h1, make([]float32, npos))
			for i := range want {
				require.InDelta(t, want[i], p.Out[i], 2e-5, "case %+v at %d", c, i)
			}
		}
	})
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, neox := range []bool{false, true} {
			for _, sh := range [][3]int{{1, 2, 2}, {8, 32, 32}, {4, 64, 32}, {3, 128, 128}, {2, 80, 40}, {2, 64, 6}, {32, 64, 64}} {
				nh, hd, nrot := sh[0], sh[1], sh[2]
				x := randomF32(nh*hd, rng)
				cs, sn := make([]float32, nrot/2), make([]float32, nrot/2)
				for i := range cs {
					th := rng.Float64() * 2 * math.Pi
					cs[i], sn[i] = float32(math.Cos(th)), float32(math.Sin(th))
				}
				want := append([]float32(nil), x...)
				for h := 0; h < nh; h++ {
					for i := 0; i < nrot/2; i++ {
						i0, i1 := h*hd+2*i, h*hd+2*i+1
						if neox {
							i0, i1 = h*hd+i, h*hd+i+nrot/2
						}
						// one FMA, the other product rounded (float64 holds
						// x0*c exactly, so this is fmaf barring double rounding)
						x0, x1 := x[i0], x[i1]
						want[i0] = float32(math.FMA(float64(x0), float64(cs[i]), -float64(x1*sn[i])))
						want[i1] = float32(math.FMA(float64(x0), float64(sn[i]), float64(x1*cs[i])))
					}
				}
				RoPERows(x, 1, nh, hd, nrot, cs, sn, neox)
				for i := range x {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(x[i]), "neox=%v %v at %d: %g vs %g", neox, sh, i, x[i], want[i])
				}
			}
		}
	})
}

var vecLens = []int{0, 1, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1000}

func TestVectorOps(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, n := range vecLens {
			x, w := randomF32(n, rng), randomF32(n, rng)
			// RMSNorm, with and without weight, in place too
			for _, ww := range [][]float32{w, nil} {
				var ss float64
				for _, v := range x {
					ss += float64(v * v)
				}
				sc := 1 / math.Sqrt(ss/float64(max(n, 1))+1e-5)
				out := make([]float32, n)
				RMSNorm(out, x, ww, 1e-5)
				for i := range x {
					want := float64(x[i]) * sc
					if ww != nil {
						want *= float64(ww[i])
					}
					require.InDelta(t, want, out[i], 1e-5*(1+math.Abs(want)), "rmsnorm n=%d", n)
				}
				inplace := append(make([]float32, 0, n), x...)
				RMSNorm(inplace, inplace, ww, 1e-5)
				require.Equal(t, out, inplace)
			}
			// Add, Scale
			out := make([]float32, n)
			Add(out, x, w)
			for i := range out {
				require.Equal(t, x[i]+w[i], out[i])
			}
			sc := append([]float32(nil), x...)
			Scale(sc, 0.37)
			for i := range sc {
				require.Equal(t, x[i]*0.37, sc[i])
			}
		}
	})
}

// rmsnormModel is k_rmsnorm step by step in Go: the float squares summed in
// double, in order (lanes false: the ref set) or in k_rmsnorm_avx2's order
// (lanes true: every SIMD set, x86-64 and arm64 alike): element i of each
// 8-element chunk into lane i % 8, then lane k plus lane k+4, then
// (0+1)+(2+3), then the tail in order.
func rmsnormModel(x, w []float32, eps float32, lanes bool) []float32 {
	n := len(x)
	var sum float64
	i := 0
	if lanes {
		var l [8]float64
		for ; i+8 <= n; i += 8 {
			for k := range l {
				l[k] += float64(float32(x[i+k] * x[i+k]))
			}
		}
		sum = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
	}
	for ; i < n; i++ {
		sum += float64(float32(x[i] * x[i]))
	}
	mean := float32(0)
	if n > 0 {
		mean = float32(sum / float64(n))
	}
	sc := 1 / float32(math.Sqrt(float64(mean+eps))) // sqrtf: sqrt rounded once to float
	out := make([]float32, n)
	for i := range x {
		v := float32(x[i] * sc)
		if w != nil {
			v = float32(v * w[i])
		}
		out[i] = v
	}
	return out
}

// RMSNorm's bits are its set's order of the double sum of squares: the ref
// set's in-order sum, every SIMD set's eight-lane sum (so arm64 prints x86's
// logits). The constructed rows of 32 tell orders apart: a*a + 0.25 has 25
// significant bits, so its mean over 32 is halfway between two floats and
// rounds to the even one, down; tiny squares (2^-32 + 2^-34 in a lane, each
// under half an ulp of the big sum, two of them over) round it up where an
// order adds two tiny lanes before the big one and vanish where it does not.
// With them in lanes 2 and 3, or 1 and 5, or every lane, the in-order sum,
// lanes summed in order, and the pairings (0+4)+(2+6) or (0+1)+(2+3) each
// differ from k_rmsnorm_avx2's order for about 4 in 10 values of a.
func TestRMSNormSumOrder(t *testing.T) {
	type tc struct {
		x, w []float32
		eps  float32
	}
	var cases []tc
	for _, lanes := range [][]int{{2, 3}, {1, 5}, {1, 2, 3, 4, 5, 6, 7}} {
		distinct := 0
		for a := 2048; a < 2897; a++ {
			x := make([]float32, 32)
			x[0], x[8] = float32(a), 0.5
			for _, k := range lanes {
				x[k], x[k+8] = 1.0/(1<<16), 1.0/(1<<17)
			}
			if !slices.Equal(rmsnormModel(x, nil, 0, false), rmsnormModel(x, nil, 0, true)) {
				distinct++
			}
			cases = append(cases, tc{x: x})
		}
		require.Greater(t, distinct, 100, "lanes %v: the constructed rows must tell the in-order sum apart", lanes)
	}
	// and random rows of every length, magnitudes over 2^-20 .. 2^20
	rng := rand.New(rand.NewSource(11))
	for _, n := range append(vecLens, 2048, 4099) {
		for r := 0; r < 4; r++ {
			x, w := make([]float32, n), randomF32(n, rng)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.Intn(41)-20)))
			}
			cases = append(cases, tc{x, nil, 1e-5}, tc{x, w, 1e-6})
		}
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		lanes := impl != "ref"
		for ci, c := range cases {
			want := rmsnormModel(c.x, c.w, c.eps, lanes)
			got := make([]float32, len(c.x))
			RMSNorm(got, c.x, c.w, c.eps)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("case %d (n=%d, w=%v) at %d: %g, want %g (lanes=%v)", ci, len(c.x), c.w != nil, i, got[i], want[i], lanes)
				}
			}
		}
	})
}

func TestDequantBulkMatchesDequant(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	forEachImpl(t, func(t *testing.T, impl string) {
		var tasks []DequantTask
		var want [][]float32
		for _, ty := range weightTypes {
			n := 40 * max(ty.BlockElems(), 32)
			src := randomRow(ty, n, rng, 0)
			w := make([]float32, n)
			Dequant(ty, src, w)
			want = append(want, w)
			tasks = append(tasks, DequantTask{Type: ty, Src: src, Dst: make([]float32, n)})
		}
		for _, pf := range []int{0, 64, 4096, 1 << 20} {
			for i := range tasks {
				clear(tasks[i].Dst)
			}
			require.NoError(t, DequantBulk(tasks, pf))
			for i := range tasks {
				require.Equal(t, want[i], tasks[i].Dst, "%v prefetch %d", tasks[i].Type, pf)
			}
		}
	})
}

// Bad arguments panic (a caller's bug) and never reach C.
func TestArgumentChecks(t *testing.T) {
	q := make([]byte, 144)
	y := make([]float32, 4)
	a := make([]byte, 292)
	// The panic is an error naming the kernel and the argument.
	for want, f := range map[string]func(){
		"kernels.MatVec: y has 0 entries, rows up to 1":       func() { MatVec(Q4_K, 256, q, 144, a, y[:0], 0, 1) },
		"kernels.MatVec: activations have 10 bytes, need 292": func() { MatVec(Q4_K, 256, q, 144, a[:10], y, 0, 1) },
		"kernels.Dequant: no dequantizer for":                 func() { Dequant(Q8_K, a, make([]float32, 256)) },
		"kernels.RMSNorm: out 3 / w 0 shorter than x 4":       func() { RMSNorm(make([]float32, 3), make([]float32, 4), nil, 1e-5) },
	} {
		var got any
		func() {
			defer func() { got = recover() }()
			f()
		}()
		err, ok := got.(error)
		require.True(t, ok, "want an error panic naming %q, got %T %v", want, got, got)
		require.Contains(t, err.Error(), want)
	}
	require.Panics(t, func() { Dequant(Q4_K, q, make([]float32, 512)) })
	require.Panics(t, func() { Dequant(Q4_K, q, make([]float32, 100)) })
	require.Panics(t, func() { Dequant(Type(99), q, make([]float32, 256)) })
	require.Panics(t, func() { Dequant(Q8_K, a, make([]float32, 256)) })
	require.Panics(t, func() { QuantizeAct(Q8_K, make([]float32, 256), make([]byte, 291)) })
	require.Panics(t, func() { QuantizeAct(Q4_K, make([]float32, 256), make([]byte, 1000)) })
	require.Panics(t, func() { QuantizeAct(Q8_0, make([]float32, 33), make([]byte, 1000)) })
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 144, a, y, 0, 2) })             // w too short
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 144, a[:10], y, 0, 1) })        // a too short
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 144, a, y[:0], 0, 1) })         // y too short
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 100, a, y, 0, 1) })             // stride too small
	require.Panics(t, func() { MatVec(Q4_K, 100, q, 144, a, y, 0, 1) })             // not whole blocks
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 144, a, y, 1, 0) })             // bad range
	require.Panics(t, func() { MatVec(Q4_K, 256, nil, 144, nil, y, 0, 1) })         // nil
	MatVec(Q4_K, 256, q, 144, a, y, 0, 1)                                           // fine
	require.Panics(t, func() { MatMulQ(Q4_K, 256, q, 144, 0, 1, a, 292, 2, y, 4) }) // a too short for 2 tokens
	require.Panics(t, func() { MatMulQ(Q4_K, 256, q, 144, 0, 1, a, 292, 1, nil, 1) })
	require.Panics(t, func() { Sgemm(false, 0, 2, 2, 2, make([]float32, 3), 2, make([]float32, 4), 2, make([]float32, 4), 2) })
	require.Panics(t, func() { Sgemm(true, 0, 1, 2, 2, make([]float32, 2), 2, make([]float32, 3), 2, make([]float32, 2), 2) })
	require.Panics(t, func() {
		Attention(&AttnParams{NTok: 1, NHead: 2, NHeadKV: 1, HeadDim: 4, Q: make([]float32, 8), K: make([]float32, 4),
			V: make([]float32, 3), KVStride: 4, Out: make([]float32, 8), QStride: 8, OutStride: 8, Scale: 1}, 0, 2, make([]float32, 1))
	})
	require.Panics(t, func() { Attention(&AttnParams{NTok: 1, NHead: 3, NHeadKV: 2, HeadDim: 4}, 0, 3, nil) })
	require.Panics(t, func() { Attention(nil, 0, 0, nil) })
	require.Panics(t, func() { RMSNorm(make([]float32, 3), make([]float32, 4), nil, 1e-5) })
	require.Panics(t, func() { RoPERows(make([]float32, 8), 1, 1, 8, 8, make([]float32, 3), make([]float32, 4), false) })
	require.Panics(t, func() { RoPERows(make([]float32, 8), 1, 1, 8, 7, make([]float32, 4), make([]float32, 4), false) })
	require.Panics(t, func() { Add(make([]float32, 4), make([]float32, 4), nil) })
	require.Error(t, DequantBulk([]DequantTask{{Type: Q8_0, Src: make([]byte, 33), Dst: make([]float32, 32)}}, 0))
	require.Error(t, Use("no-such-impl"))
}

func TestDispatch(t *testing.T) {
	av := Available()
	require.Equal(t, "ref", av[0])
	require.Contains(t, av, Impl())
}

// Huge strides or counts that would overflow a naive size computation are
// rejected, not passed to C.
func TestOverflowChecks(t *testing.T) {
	q := make([]byte, 144*4)
	a := make([]byte, 292)
	y := make([]float32, 8)
	require.Panics(t, func() { MatVec(Q4_K, 256, q, 1<<62, a, y, 0, 5) })
	require.Panics(t, func() { MatVec(Q4_K, 256, q, math.MaxInt, a, y, 0, 2) })
	require.Panics(t, func() { MatMulQ(Q4_K, 256, q, 144, 0, 1, a, 1<<62, 5, y, 1) })
	require.Panics(t, func() { MatMulQ(Q4_K, 256, q, 144, 0, 1, a, 292, 1<<40, y, 1) })
	require.Panics(t, func() {
		Sgemm(false, 0, 3, 2, 2, make([]float32, 8), 1<<62, make([]float32, 4), 2, make([]float32, 8), 2)
	})
	require.Panics(t, func() {
		RoPERows(make([]float32, 8), 1, 1<<40, 1<<30, 2, make([]float32, 1), make([]float32, 1), false)
	})
	require.Panics(t, func() {
		Attention(&AttnParams{NTok: 2, NHead: 1, NHeadKV: 1, HeadDim: 4, Q: make([]float32, 8), QStride: 1 << 62,
			K: make([]float32, 8), V: make([]float32, 8), KVStride: 4, Out: make([]float32, 8), OutStride: 4}, 0, 1, make([]float32, 2))
	})
}

// Concurrent calls on disjoint outputs (the runtime's worker pattern) give
// the same results as one call.
func TestConcurrentMatVec(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	const n, rows, workers = 512, 64, 4
	w := make([]byte, 0)
	for r := 0; r < rows; r++ {
		w = append(w, randomRow(Q4_K, n, rng, 0)...)
	}
	a, _ := actFor(t, Q4_K, randomF32(n, rng))
	want := make([]float32, rows)
	MatVec(Q4_K, n, w, 144*2, a, want, 0, rows)
	got := make([]float32, rows)
	done := make(chan struct{}, workers)
	for k := 0; k < workers; k++ {
		go func(k int) {
			for it := 0; it < 50; it++ {
				MatVec(Q4_K, n, w, 144*2, a, got, k*rows/workers, (k+1)*rows/workers)
			}
			done <- struct{}{}
		}(k)
	}
	for k := 0; k < workers; k++ {
		<-done
	}
	require.Equal(t, want, got)
}

func f16r(x float32) float32 { return F16ToF32(F32ToF16(x)) }

// The tile kernels take tokens in groups of 8 (where a set has such a
// kernel, with activation data prepared once per group), then 4, then one
// at a time; x86 rows of up to 64 Q4_K/Q6_K blocks use the 8-token path and
// longer ones fall back to groups of 4; up to 23 tokens the AVX-512 groups
// read the raw rows, from 24 on rows decoded per chunk, and 4 to 7 tokens
// left after the groups of 8 (AVX2: 2 or 3 after groups of 4) go as a group
// padded with zeros. Every token of every group must equal MatVec bit for
// bit on amd64, for rows of random, zero and extreme
// scales, at the lengths around that limit.
func TestMatMulQTokenGroups(t *testing.T) {
	if !exactMatMul {
		t.Skip("the tiles are bit-identical to MatVec on amd64 only")
	}
	rng := rand.New(rand.NewSource(8))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, wt := range []Type{Q4_K, Q6_K} {
			for _, n := range []int{0, 256, 2048, 63 * 256, 64 * 256, 65 * 256} {
				rows := 6
				if n == 64*256 {
					rows = 45 // two tiles, each in chunks of rows (AVX-512 Q4_K decodes weights per chunk)
				}
				rb, _ := wt.RowBytes(int64(n))
				var w []byte
				for r := 0; r < rows; r++ {
					w = append(w, randomRow(wt, n, rng, r%3)...)
				}
				ab, _ := wt.ActType().RowBytes(int64(n))
				for _, ntok := range []int{2, 3, 4, 5, 7, 8, 12, 13, 16, 19, 23, 24} {
					a := make([]byte, ntok*int(ab))
					for tk := 0; tk < ntok; tk++ {
						QuantizeAct(wt.ActType(), randomF32(n, rng), a[tk*int(ab):])
					}
					y := make([]float32, ntok*rows)
					for i := range y {
						y[i] = -12345 // every output must be written, also for n = 0
					}
					MatMulQ(wt, n, w, int(rb), 0, rows, a, int(ab), ntok, y, rows)
					for tk := 0; tk < ntok; tk++ {
						yv := make([]float32, rows)
						MatVec(wt, n, w, int(rb), a[tk*int(ab):], yv, 0, rows)
						for r := range rows {
							require.Equal(t, math.Float32bits(yv[r]), math.Float32bits(y[tk*rows+r]),
								"%s %v n=%d ntok=%d t=%d r=%d: %g vs MatVec %g", impl, wt, n, ntok, tk, r, y[tk*rows+r], yv[r])
						}
					}
				}
			}
		}
	})
}

package kernels

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// timed runs body b.N times on a locked thread and, besides the wall-clock
// MB/s of b.SetBytes(bytes), reports cpu-GB/s: bytes per second of thread
// CPU time, which stays meaningful on a machine shared with other work.
func timed(b *testing.B, bytes int64, body func()) (cpuSeconds float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(bytes)
	b.ResetTimer()
	c0 := threadCPU()
	for i := 0; i < b.N; i++ {
		body()
	}
	c := threadCPU() - c0
	if c > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/c/1e9, "cpu-GB/s")
	}
	return c
}

// Benchmarks are named Benchmark<Op>/<impl>/<size>; b.SetBytes counts weight
// bytes (or input bytes for Dequant / f32 ops), so -bench reports GB/s.
//
//	go test ./kernels -run x -bench 'MatVec' -benchtime 200ms

var benchTypes = []Type{Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS, MXFP4, F16, F32, Q2_K, Q3_K}

func benchImpls(b *testing.B, f func(b *testing.B)) {
	def := Impl()
	defer Use(def)
	for _, name := range Available() {
		b.Run(name, func(b *testing.B) {
			if err := Use(name); err != nil {
				b.Fatal(err)
			}
			f(b)
		})
	}
}

func benchMatrix(t Type, n, rows int) ([]byte, int) {
	rng := rand.New(rand.NewSource(1))
	rb, _ := t.RowBytes(int64(n))
	w := make([]byte, 0, rows*int(rb))
	for r := 0; r < rows; r++ {
		w = append(w, randomRow(t, n, rng, 0)...)
	}
	return w, int(rb)
}

func benchAct(b *testing.B, t Type, n, ntok int) ([]byte, int) {
	rng := rand.New(rand.NewSource(2))
	ab, _ := t.ActType().RowBytes(int64(n))
	a := make([]byte, ntok*int(ab))
	for i := 0; i < ntok; i++ {
		QuantizeAct(t.ActType(), randomF32(n, rng), a[i*int(ab):])
	}
	return a, int(ab)
}

// MatVec over a 4096 x 1024 matrix (Q4_K: 2.4 MB, in L3): one thread.
func BenchmarkMatVec(b *testing.B) {
	const n, rows = 4096, 1024
	benchImpls(b, func(b *testing.B) {
		for _, t := range benchTypes {
			w, rb := benchMatrix(t, n, rows)
			a, _ := benchAct(b, t, n, 1)
			y := make([]float32, rows)
			b.Run(fmt.Sprintf("%v/%dx%d", t, rows, n), func(b *testing.B) {
				timed(b, int64(len(w)), func() { MatVec(t, n, w, rb, a, y, 0, rows) })
			})
		}
	})
}

// MatMulQ: 128 tokens (one pp128 batch) against a 2048 x 256 matrix (weights
// reused per tile; the AVX-512 Q4_K tile decodes them once per chunk of rows).
func BenchmarkMatMulQ(b *testing.B) {
	const n, rows, ntok = 2048, 256, 128
	benchImpls(b, func(b *testing.B) {
		for _, t := range []Type{Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS, MXFP4, F16, F32, Q2_K, Q3_K} {
			w, rb := benchMatrix(t, n, rows)
			a, ab := benchAct(b, t, n, ntok)
			y := make([]float32, ntok*rows)
			b.Run(fmt.Sprintf("%v/%dx%dx%dtok", t, rows, n, ntok), func(b *testing.B) {
				timed(b, int64(len(w))*ntok, func() { MatMulQ(t, n, w, rb, 0, rows, a, ab, ntok, y, rows) }) // weight bytes consumed (as if re-read per token)
			})
		}
	})
}

func BenchmarkDequant(b *testing.B) {
	const n = 1 << 18
	benchImpls(b, func(b *testing.B) {
		for _, t := range benchTypes {
			w, _ := benchMatrix(t, n, 1)
			dst := make([]float32, n)
			b.Run(fmt.Sprintf("%v/%d", t, n), func(b *testing.B) {
				timed(b, int64(len(w)), func() { Dequant(t, w, dst) })
			})
		}
	})
}

// DequantBulk of 16 MB of Q4_K (out of cache) with and without prefetch hints.
func BenchmarkDequantBulk(b *testing.B) {
	const n = 1 << 20
	var tasks []DequantTask
	var total int64
	for i := 0; i < 8; i++ {
		w, _ := benchMatrix(Q4_K, n, 1)
		tasks = append(tasks, DequantTask{Type: Q4_K, Src: w, Dst: make([]float32, n)})
		total += int64(len(w))
	}
	benchImpls(b, func(b *testing.B) {
		for _, pf := range []int{0, 1024, 4096, 16384} {
			b.Run(fmt.Sprintf("prefetch-%d", pf), func(b *testing.B) {
				timed(b, total, func() {
					if err := DequantBulk(tasks, pf); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	})
}

func BenchmarkQuantizeAct(b *testing.B) {
	const n = 4096
	x := randomF32(n, rand.New(rand.NewSource(3)))
	benchImpls(b, func(b *testing.B) {
		for _, act := range []Type{Q8_K, Q8_0, F16} {
			rb, _ := act.RowBytes(n)
			dst := make([]byte, rb)
			b.Run(fmt.Sprintf("%v/%d", act, n), func(b *testing.B) {
				timed(b, 4*n, func() { QuantizeAct(act, x, dst) })
			})
		}
	})
}

func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewSource(4))
	benchImpls(b, func(b *testing.B) {
		for _, sh := range [][3]int{{32, 256, 256}, {64, 512, 512}} {
			M, N, K := sh[0], sh[1], sh[2]
			A, B, C := randomF32(M*K, rng), randomF32(K*N, rng), make([]float32, M*N)
			for _, tb := range []bool{false, true} {
				b.Run(fmt.Sprintf("%dx%dx%d/transB=%v", M, N, K, tb), func(b *testing.B) {
					ldb := N
					if tb {
						ldb = K
					}
					c := timed(b, int64(4*K*N), func() { Sgemm(tb, 0, M, N, K, A, K, B, ldb, C, N) })
					if c > 0 {
						b.ReportMetric(float64(2*M*N*K)*float64(b.N)/c/1e9, "cpu-GFLOP/s")
					}
				})
			}
		}
	})
}

// Attention: one decode token at position 511, 32 heads / 8 kv heads,
// head_dim 128 (f32 and f16 caches), and a 512-row prompt for the tiled kernel.
func BenchmarkAttention(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	const nh, nkv, hd, pos = 32, 8, 128, 511
	p := &AttnParams{NTok: 1, Pos0: pos, NHead: nh, NHeadKV: nkv, HeadDim: hd, QStride: nh * hd, KVStride: nkv * hd,
		OutStride: nh * hd, Scale: 0.088}
	p.Q, p.K, p.V, p.Out = randomF32(nh*hd, rng), randomF32((pos+1)*nkv*hd, rng), randomF32((pos+1)*nkv*hd, rng), make([]float32, nh*hd)
	h := &AttnF16Params{NTok: 1, Pos0: pos, NHead: nh, NHeadKV: nkv, HeadDim: hd, Q: p.Q, QStride: nh * hd,
		K: make([]uint16, len(p.K)), V: make([]uint16, len(p.V)), KVStride: nkv * hd, Scale: 0.088, Out: p.Out, OutStride: nh * hd}
	for i := range p.K {
		h.K[i], h.V[i] = F32ToF16(p.K[i]), F32ToF16(p.V[i])
	}
	for i := range h.Q {
		h.Q[i] = F16ToF32(F32ToF16(h.Q[i]))
	}
	scratch := make([]float32, max(pos+1, AttentionF16AccScratch(hd), AttentionTiledScratch(hd)))
	prompt := *h
	prompt.NTok, prompt.Pos0 = pos+1, 0
	prompt.Q, prompt.Out = randomF32((pos+1)*nh*hd, rng), make([]float32, (pos+1)*nh*hd)
	benchImpls(b, func(b *testing.B) {
		b.Run(fmt.Sprintf("decode-pos%d", pos), func(b *testing.B) {
			timed(b, int64(2*4*(pos+1)*nkv*hd), func() { Attention(p, 0, nh, scratch) })
		})
		b.Run(fmt.Sprintf("f16acc-decode-pos%d", pos), func(b *testing.B) {
			timed(b, int64(2*2*(pos+1)*nkv*hd), func() { AttentionF16Acc(h, 0, nh, scratch) })
		})
		b.Run(fmt.Sprintf("tiled-prompt%d", pos+1), func(b *testing.B) {
			timed(b, int64(2*2*(pos+1)*nkv*hd), func() { AttentionTiled(&prompt, 0, nh, scratch) })
		})
		// Gemma 2 style: soft-cap 50 and / or a 128-position window (bytes
		// as without them, so the ns/op compare)
		for _, v := range []struct {
			name   string
			window int
			cap    float32
		}{{"cap", 0, 50}, {"window128", 128, 0}, {"cap-window128", 128, 50}} {
			hv, pv := *h, prompt
			hv.Window, hv.SoftCap, pv.Window, pv.SoftCap = v.window, v.cap, v.window, v.cap
			b.Run(fmt.Sprintf("f16acc-decode-pos%d-%s", pos, v.name), func(b *testing.B) {
				timed(b, int64(2*2*(pos+1)*nkv*hd), func() { AttentionF16Acc(&hv, 0, nh, scratch) })
			})
			b.Run(fmt.Sprintf("tiled-prompt%d-%s", pos+1, v.name), func(b *testing.B) {
				timed(b, int64(2*2*(pos+1)*nkv*hd), func() { AttentionTiled(&pv, 0, nh, scratch) })
			})
		}
	})
}

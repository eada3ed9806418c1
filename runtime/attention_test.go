package runtime

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/kernels"
)

// The Go transcriptions of the reference's two flash-attention paths that
// matched llama.cpp's logits before the kernels carried them; they are the
// oracle for kernels.AttentionF16Acc and kernels.AttentionTiled, which the
// forward pass calls (bit for bit on amd64).

// attnArgs describes one attention op over the f16 KV cache of a layer:
// query token t (position p = Pos0+t) attends to positions 0..p, or with
// Window > 0 to the positions p' with p-Window < p' <= p (llama.cpp's
// standard sliding window; the other positions are -inf in its mask and the
// flash-attention paths skip them). SoftCap > 0 caps each score before the
// mask as the reference's flash attention does: the scale is divided by
// the cap (one f32 division), then s = cap*tanhf(s) (Gemma 2).
//
//	q   [NTok][QStride]   head h at t*QStride + h*HeadDim (f32)
//	k,v [nPos][KVStride]  kv head g at p*KVStride + g*HeadDim (f16 bits)
//	out [NTok][OutStride]
type attnArgs kernels.AttnF16Params

// first is the first position the query at position p sees.
func (p *attnArgs) first(pos int) int {
	if p.Window > 0 {
		return max(0, pos-p.Window+1)
	}
	return 0
}

// kqScale is the multiplier of q·k: the scale, divided by the cap when
// capping (the reference folds the cap into it).
func (p *attnArgs) kqScale() float32 {
	if p.SoftCap != 0 {
		return p.Scale / p.SoftCap
	}
	return p.Scale
}

// capScore applies the soft-cap to a scaled score: cap*tanhf(s) with the C
// library's tanhf (glibc's is the reference's); the identity without a cap.
func (p *attnArgs) capScore(s float32) float32 {
	if p.SoftCap != 0 {
		return p.SoftCap * kernels.Tanhf(s)
	}
	return s
}

// attendF16 is causal grouped-query attention for query heads [h0, h1) with
// the numerics of the reference's CPU flash attention for fewer than 64
// query rows: Q, K and V hold f16 values (the caller rounds them), K·Q is
// ggml_vec_dot_f16, and V is accumulated in f16 with an online softmax
// (running max M and sum S, expf from glibc). acc needs HeadDim floats.
//
// With 64 or more rows the reference uses a tiled f32 path instead
// (attendTiled).
func attendF16(p *attnArgs, h0, h1 int, acc []float32) {
	group := p.NHead / p.NHeadKV
	hd := p.HeadDim
	np := hd &^ 63 // elements the reference handles in 64-wide SIMD steps
	acc = acc[:hd]
	sc := p.kqScale()
	for t := 0; t < p.NTok; t++ {
		npos := p.Pos0 + t + 1
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[t*p.QStride+h*hd : t*p.QStride+(h+1)*hd]
			S, M := float32(0), float32(math.Inf(-1))
			clear(acc)
			// the masked positions (before the window) are skipped: they
			// leave M, S and acc as they are
			for pos := p.first(npos - 1); pos < npos; pos++ {
				k := p.K[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				v := p.V[pos*p.KVStride+g*hd : pos*p.KVStride+(g+1)*hd]
				s := p.capScore(dotF16(q, k, np) * sc)
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
				S = fmaf(S, ms, vs)
			}
			p.writeHead(t, h, acc, S)
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
// processed in tiles of 64 (from position 0). Per tile: scores are fused
// multiply-add chains over the head dimension, scaled (and capped); the
// running max M and sum S are updated (expf from glibc); the tile's
// exponentials come from ggml's vectorised exp in 16-wide groups summed in
// double; V is accumulated in f32 with fused multiply-add chains over the
// tile. Masked lanes (after the query, before its window) are -inf in the
// reference: their exponentials are exactly 0, so they are left out of the
// max and add nothing (0·v to V); a tile with no unmasked lane leaves M, S
// and acc alone. kq needs 64 floats.
func attendTiled(p *attnArgs, h0, h1 int, kq, acc []float32) {
	const tile = 64
	group := p.NHead / p.NHeadKV
	hd := p.HeadDim
	acc = acc[:hd]
	kq = kq[:tile]
	sc := p.kqScale()
	for t := 0; t < p.NTok; t++ {
		npos := p.Pos0 + t + 1
		first := p.first(npos - 1)
		for h := h0; h < h1; h++ {
			g := h / group
			q := p.Q[t*p.QStride+h*hd : t*p.QStride+(h+1)*hd]
			S, M := float32(0), float32(math.Inf(-1))
			clear(acc)
			for ic := first - first%tile; ic < npos; ic += tile {
				j0 := max(first-ic, 0)  // unmasked lanes of this tile:
				n := min(tile, npos-ic) // [j0, n)
				tmax := float32(math.Inf(-1))
				j := j0
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
					kq[j], kq[j+1], kq[j+2], kq[j+3] = p.capScore(s0*sc), p.capScore(s1*sc), p.capScore(s2*sc), p.capScore(s3*sc)
					tmax = max(tmax, kq[j], kq[j+1], kq[j+2], kq[j+3])
				}
				for ; j < n; j++ {
					k := p.K[(ic+j)*p.KVStride+g*hd : (ic+j)*p.KVStride+(g+1)*hd]
					s := float32(0)
					for d, x := range q {
						s = fmaf(x, halfTab[k[d]], s)
					}
					kq[j] = p.capScore(s * sc)
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
				for b := j0 &^ 15; b < tile; b += 16 {
					var lanes [16]float32
					for l := max(j0-b, 0); l < 16 && b+l < n; l++ {
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
				for j := j0; j < n; j++ {
					v := p.V[(ic+j)*p.KVStride+g*hd : (ic+j)*p.KVStride+(g+1)*hd]
					v = v[:len(acc)]
					w := float64(kq[j])
					for d, a := range acc {
						acc[d] = float32(math.FMA(w, float64(halfTab[v[d]]), float64(a)))
					}
				}
			}
			p.writeHead(t, h, acc, S)
		}
	}
}

// writeHead stores the output of head h for token t: acc divided by the
// softmax sum S (zeros when S is 0, every position masked).
func (p *attnArgs) writeHead(t, h int, acc []float32, S float32) {
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	out := p.Out[t*p.OutStride+h*p.HeadDim : t*p.OutStride+(h+1)*p.HeadDim]
	for i := range out {
		out[i] = acc[i] * inv
	}
}

func attnFixture(ntok, npos, nh, nkv, hd int, seed int64) *attnArgs {
	rng := rand.New(rand.NewSource(seed))
	kvd := nkv * hd
	p := &attnArgs{NTok: ntok, Pos0: npos - ntok, NHead: nh, NHeadKV: nkv, HeadDim: hd,
		Q: make([]float32, ntok*nh*hd), QStride: nh * hd, K: make([]uint16, npos*kvd), V: make([]uint16, npos*kvd),
		KVStride: kvd, Scale: 1 / float32(math.Sqrt(float64(hd))), Out: make([]float32, ntok*nh*hd), OutStride: nh * hd}
	for i := range p.K {
		p.K[i] = toHalf(float32(rng.NormFloat64()))
		p.V[i] = toHalf(float32(rng.NormFloat64()))
	}
	for i := range p.Q {
		p.Q[i] = float32(rng.NormFloat64()) * 2
	}
	return p
}

func (p *attnArgs) kernelParams(out []float32) *kernels.AttnF16Params {
	kp := kernels.AttnF16Params(*p)
	kp.Out = out
	return &kp
}

func (p *attnArgs) widened(out []float32) *kernels.AttnParams {
	w := &kernels.AttnParams{NTok: p.NTok, Pos0: p.Pos0, NHead: p.NHead, NHeadKV: p.NHeadKV, HeadDim: p.HeadDim,
		Q: p.Q, QStride: p.QStride, K: make([]float32, len(p.K)), V: make([]float32, len(p.V)), KVStride: p.KVStride,
		Scale: p.Scale, Out: out, OutStride: p.OutStride, Window: p.Window, SoftCap: p.SoftCap}
	for i := range p.K {
		w.K[i], w.V[i] = halfTab[p.K[i]], halfTab[p.V[i]]
	}
	return w
}

// The attention kernels the forward pass uses give the bits of the Go
// transcriptions (split over head ranges as the workers do), and both stay
// within f16 rounding of the f32 kernel; with and without a sliding window
// (1, inside the new rows, wholly in the cached prefix, across 64-position
// tiles, at least the position count) and a soft-cap (Gemma 2's 50 and the
// synthetic mini's 3).
func TestAttentionKernelsMatchGo(t *testing.T) {
	for _, c := range []struct {
		ntok, npos, nh, nkv, hd, window int
		cap                             float32
	}{
		{1, 1, 4, 4, 8, 0, 0}, {1, 7, 8, 2, 32, 0, 0}, {3, 70, 8, 2, 64, 0, 0}, {1, 300, 32, 4, 64, 0, 0}, {1, 129, 8, 1, 128, 0, 0},
		{64, 64, 4, 1, 64, 0, 0}, {70, 140, 8, 2, 32, 0, 0}, {100, 300, 8, 8, 128, 0, 0}, {65, 65, 2, 2, 16, 0, 0}, {9, 9, 8, 4, 8, 0, 0},
		{5, 5, 4, 2, 64, 16, 3}, {5, 40, 4, 2, 64, 16, 3}, {1, 300, 4, 2, 64, 16, 50}, {3, 70, 8, 2, 64, 1, 0},
		{64, 64, 4, 2, 64, 16, 3}, {70, 140, 8, 2, 32, 100, 0}, {100, 300, 8, 8, 128, 70, 50}, {65, 200, 2, 2, 16, 130, 3},
		{80, 80, 4, 2, 64, 80, 3}, {80, 90, 4, 2, 64, 1000, 0}, {70, 140, 8, 2, 32, 0, 3},
	} {
		p := attnFixture(c.ntok, c.npos, c.nh, c.nkv, c.hd, int64(c.npos*c.hd))
		p.Window, p.SoftCap = c.window, c.cap
		ref := make([]float32, len(p.Out))
		kernels.Attention(p.widened(ref), 0, c.nh, make([]float32, c.npos))
		f16q := append([]float32(nil), p.Q...)
		for i, x := range f16q {
			f16q[i] = roundF16(x)
		}
		scr := make([]float32, max(kernels.AttentionF16AccScratch(c.hd), kernels.AttentionTiledScratch(c.hd)))
		for _, path := range []string{"f16", "tiled"} {
			q := p.Q
			if path == "f16" {
				q = f16q
			}
			pp := *p
			pp.Q = q
			want := make([]float32, len(p.Out))
			pp.Out = want
			if path == "f16" {
				attendF16(&pp, 0, c.nh, make([]float32, c.hd))
			} else {
				attendTiled(&pp, 0, c.nh, make([]float32, 64), make([]float32, c.hd))
			}
			got := make([]float32, len(p.Out))
			kp := pp.kernelParams(got)
			for _, hr := range [][2]int{{0, c.nh / 2}, {c.nh / 2, c.nh}} {
				if path == "f16" {
					kernels.AttentionF16Acc(kp, hr[0], hr[1], scr)
				} else {
					kernels.AttentionTiled(kp, hr[0], hr[1], scr)
				}
			}
			for i := range want {
				// Go fuses a*b+c on arm64 (the transcriptions' expf polynomial),
				// which can move an f16 accumulator by one ulp: bits on amd64,
				// 2e-3 elsewhere.
				if goruntime.GOARCH == "amd64" && math.Float32bits(got[i]) != math.Float32bits(want[i]) ||
					math.Abs(float64(got[i]-want[i])) > 2e-3 {
					t.Fatalf("%+v %s (kernels %s): out[%d] = %g, Go %g", c, path, kernels.Impl(), i, got[i], want[i])
				}
				if d := math.Abs(float64(got[i] - ref[i])); d > 2e-2 {
					t.Fatalf("%+v %s: out[%d] = %g, f32 kernel %g", c, path, i, got[i], ref[i])
				}
			}
		}
	}
}

// Decode at position 500 (TinyLlama's shape: 32 heads, 4 kv heads, head 64)
// and a 512-row prompt, one thread: the Go transcription, the F16-cache
// kernel that path uses, and the F32 kernel over the widened cache.
func BenchmarkAttention(b *testing.B) {
	decode := attnFixture(1, 500, 32, 4, 64, 1)
	for i, x := range decode.Q {
		decode.Q[i] = roundF16(x)
	}
	scr := make([]float32, kernels.AttentionTiledScratch(64)+kernels.AttentionF16AccScratch(64)+1024)
	for _, c := range []struct {
		name   string
		p      *attnArgs
		goRef  func(p *attnArgs)
		kernel func(p *kernels.AttnF16Params, h0, h1 int, scratch []float32)
	}{
		{"decode500", decode, func(p *attnArgs) { attendF16(p, 0, 32, scr) }, kernels.AttentionF16Acc},
		{"prompt512", attnFixture(512, 512, 32, 4, 64, 2), func(p *attnArgs) { attendTiled(p, 0, 32, scr[:64], scr[64:]) }, kernels.AttentionTiled},
	} {
		out := make([]float32, len(c.p.Out))
		b.Run(c.name+"-go", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.goRef(c.p)
			}
		})
		b.Run(c.name+"-kernel", func(b *testing.B) {
			kp := c.p.kernelParams(out)
			for i := 0; i < b.N; i++ {
				c.kernel(kp, 0, 32, scr)
			}
		})
		b.Run(c.name+"-f32kernel", func(b *testing.B) {
			kp := c.p.widened(out)
			for i := 0; i < b.N; i++ {
				kernels.Attention(kp, 0, 32, scr)
			}
		})
	}
}

// Prompt and generation speed against the context length on TinyLlama
// (models/ of the repo; skipped when absent): a 512-token prompt in one
// batch, and 16 single-token steps after a prompt of pos random tokens.
// Reports tokens/s and process CPU milliseconds per token (steadier than
// wall time on a shared machine).
func BenchmarkContext(b *testing.B) {
	path := filepath.Join("..", "models", "tinyllama-1.1b-q4_k_m.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%s not found (woolly synth --preset tinyllama-1.1b --type q4_k_m makes it)", path)
	}
	m := loadPath(b, path, LoadOptions{})
	rng := rand.New(rand.NewSource(1))
	prompt := make([]int32, 512)
	for i := range prompt {
		prompt[i] = int32(3 + rng.Intn(m.Info().NVocab-3))
	}
	s := newSession(b, m, 1024)
	report := func(b *testing.B, ntok int, cpu time.Duration) {
		b.ReportMetric(float64(ntok)/b.Elapsed().Seconds(), "tokens/s")
		b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(ntok), "cpu-ms/token")
	}
	b.Run("prompt512", func(b *testing.B) {
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			s.Reset()
			c0 := processCPU()
			if _, err := s.Eval(prompt, false); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - c0
		}
		report(b, 512*b.N, cpu)
	})
	for _, pos := range []int{16, 512} {
		b.Run(fmt.Sprintf("decode-pos%d", pos), func(b *testing.B) {
			const steps = 16
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s.Reset()
				if _, err := s.Eval(prompt[:pos], false); err != nil {
					b.Fatal(err)
				}
				c0 := processCPU()
				b.StartTimer()
				for j := 0; j < steps; j++ {
					if _, err := s.Eval(prompt[j:j+1], false); err != nil {
						b.Fatal(err)
					}
				}
				cpu += processCPU() - c0
			}
			report(b, steps*b.N, cpu)
		})
	}
}

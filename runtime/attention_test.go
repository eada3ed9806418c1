package runtime

import (
	"math"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

func attnFixture(ntok, npos, nh, nkv, hd int) (*attnArgs, *kernels.AttnParams) {
	kvd := nkv * hd
	p := &attnArgs{NTok: ntok, Pos0: npos - ntok, NHead: nh, NHeadKV: nkv, HeadDim: hd,
		Q: make([]float32, ntok*nh*hd), QStride: nh * hd, K: make([]uint16, npos*kvd), V: make([]uint16, npos*kvd),
		KVStride: kvd, Scale: 1 / float32(math.Sqrt(float64(hd))), Out: make([]float32, ntok*nh*hd), OutStride: nh * hd}
	kp := &kernels.AttnParams{NTok: ntok, Pos0: npos - ntok, NHead: nh, NHeadKV: nkv, HeadDim: hd,
		Q: p.Q, QStride: nh * hd, K: make([]float32, npos*kvd), V: make([]float32, npos*kvd),
		KVStride: kvd, Scale: p.Scale, OutStride: nh * hd}
	for i := range p.K {
		p.K[i] = toHalf(float32(math.Sin(float64(i) * 0.37)))
		p.V[i] = toHalf(float32(math.Cos(float64(i) * 0.11)))
		kp.K[i], kp.V[i] = halfTab[p.K[i]], halfTab[p.V[i]]
	}
	for i := range p.Q {
		p.Q[i] = roundF16(float32(math.Sin(float64(i)*0.73)) * 2)
	}
	return p, kp
}

// The exact attention paths agree with the f32 kernel within f16 rounding.
func TestAttentionPathsAgree(t *testing.T) {
	for _, c := range []struct{ ntok, npos, hd int }{{1, 7, 32}, {3, 70, 64}, {70, 140, 32}, {1, 300, 128}} {
		p, kp := attnFixture(c.ntok, c.npos, 8, 2, c.hd)
		want := make([]float32, len(p.Out))
		kp.Out = want
		if err := kernels.Attention(kp, 0, 8, make([]float32, c.npos)); err != nil {
			t.Fatal(err)
		}
		for name, f := range map[string]func(*attnArgs){
			"f16":   func(p *attnArgs) { attendF16(p, 0, 8, make([]float32, c.hd)) },
			"tiled": func(p *attnArgs) { attendTiled(p, 0, 8, make([]float32, 64), make([]float32, c.hd)) },
		} {
			p.Out = make([]float32, len(want))
			f(p)
			for i := range want {
				if d := math.Abs(float64(p.Out[i] - want[i])); d > 2e-3 {
					t.Fatalf("%+v %s: out[%d] = %g, kernel %g", c, name, i, p.Out[i], want[i])
				}
			}
		}
	}
}

func BenchmarkAttention(b *testing.B) {
	p, kp := attnFixture(1, 500, 32, 8, 64)
	kp.Out = make([]float32, len(p.Out))
	scr := make([]float32, 1024)
	b.Run("f16-exact", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			attendF16(p, 0, 32, scr)
		}
	})
	b.Run("kernel", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			kernels.Attention(kp, 0, 32, scr)
		}
	})
}

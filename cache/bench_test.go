package cache

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

func BenchmarkGetHit(b *testing.B) {
	c, _ := New[tensorKey, []float32](1<<30, Options[tensorKey, []float32]{ScanResistant: true})
	k := tensorKey{"model", "blk.0.attn_q.weight"}
	c.Add(k, make([]float32, 16), 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Get(k)
	}
}

func BenchmarkGetOrLoadParallelHit(b *testing.B) {
	c, _ := New[int, int](1<<30, Options[int, int]{})
	for i := 0; i < 64; i++ {
		c.Add(i, i, 8)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.GetOrLoad(i&63, func() (int, int64, error) { return 0, 8, nil })
			i++
		}
	})
}

// randomQ4K returns rows×cols Q4_K weights with small finite scales.
func randomQ4K(r *rand.Rand, rows, cols int) []byte {
	nb := rows * cols / 256
	w := make([]byte, nb*144)
	r.Read(w)
	for i := 0; i < nb; i++ {
		binary.LittleEndian.PutUint16(w[i*144:], kernels.F32ToF16(0.01))
		binary.LittleEndian.PutUint16(w[i*144+2:], kernels.F32ToF16(0.005))
	}
	return w
}

// BenchmarkPromptMatmul compares, for one weight matrix and a prompt batch,
// the quantized path (activations to Q8_K + MatMulQ) with f32 weights from
// the cache (Sgemm) and with dequantizing on every batch (Dequant + Sgemm).
// One thread. This is the figure that decides --dequant-cache's default.
func BenchmarkPromptMatmul(b *testing.B) {
	const rows, cols = 1024, 1024
	r := rand.New(rand.NewSource(1))
	w := randomQ4K(r, rows, cols)
	rb, _ := kernels.Q4_K.RowBytes(cols)
	wf := make([]float32, rows*cols)
	if err := kernels.Dequant(kernels.Q4_K, w, wf); err != nil {
		b.Fatal(err)
	}
	for _, ntok := range []int{8, 64} {
		x := make([]float32, ntok*cols)
		for i := range x {
			x[i] = r.Float32()*2 - 1
		}
		y := make([]float32, ntok*rows)
		arb, _ := kernels.Q8_K.RowBytes(cols)
		a := make([]byte, ntok*int(arb))
		b.Run(fmt.Sprintf("matmulq/ntok=%d", ntok), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for t := 0; t < ntok; t++ {
					if err := kernels.QuantizeAct(kernels.Q8_K, x[t*cols:(t+1)*cols], a[t*int(arb):(t+1)*int(arb)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := kernels.MatMulQ(kernels.Q4_K, cols, w, int(rb), 0, rows, a, int(arb), ntok, y, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("sgemm-cached/ntok=%d", ntok), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := kernels.Sgemm(true, 0, ntok, rows, cols, x, cols, wf, cols, y, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("dequant+sgemm/ntok=%d", ntok), func(b *testing.B) {
			tmp := make([]float32, rows*cols)
			for i := 0; i < b.N; i++ {
				if err := kernels.Dequant(kernels.Q4_K, w, tmp); err != nil {
					b.Fatal(err)
				}
				if err := kernels.Sgemm(true, 0, ntok, rows, cols, x, cols, tmp, cols, y, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("dequant", func(b *testing.B) {
		b.SetBytes(int64(len(wf)) * 4)
		for i := 0; i < b.N; i++ {
			kernels.Dequant(kernels.Q4_K, w, wf)
		}
	})
	for _, pf := range []int{0, DefaultPrefetchBytes} {
		b.Run(fmt.Sprintf("dequantbulk/prefetch=%d", pf), func(b *testing.B) {
			b.SetBytes(int64(len(wf)) * 4)
			tasks := []kernels.DequantTask{{Type: kernels.Q4_K, Src: w, Dst: wf}}
			for i := 0; i < b.N; i++ {
				kernels.DequantBulk(tasks, pf)
			}
		})
	}
}

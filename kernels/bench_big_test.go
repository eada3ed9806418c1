package kernels

import (
	"fmt"
	"testing"
)

// MatVec out of cache: a 2048 x 5632 (FFN-shaped) matrix, 16 copies so each
// pass reads ~100 MB, one thread; cpu-GB/s is weight bytes per thread-CPU second.
func BenchmarkMatVecBig(b *testing.B) {
	const n, rows, copies = 2048, 5632, 16
	for _, t := range []Type{Q4_K, Q6_K} {
		w1, rb := benchMatrix(t, n, rows)
		w := make([]byte, 0, len(w1)*copies)
		for i := 0; i < copies; i++ {
			w = append(w, w1...)
		}
		a, _ := benchAct(b, t, n, 1)
		y := make([]float32, rows*copies)
		b.Run(fmt.Sprintf("%v/%s", t, Impl()), func(b *testing.B) {
			timed(b, int64(len(w)), func() error { return MatVec(t, n, w, rb, a, y, 0, rows*copies) })
		})
	}
}

// MatVecBig over two threads: the same ~100 MB pass split in two halves, one
// goroutine each; MB/s is wall clock, to compare with
// `woolly bench --bandwidth -t 2` (the machine's two-thread read bandwidth).
func BenchmarkMatVecBig2T(b *testing.B) {
	const n, rows, copies = 2048, 5632, 16
	for _, t := range []Type{Q4_K, Q6_K} {
		w1, rb := benchMatrix(t, n, rows)
		w := make([]byte, 0, len(w1)*copies)
		for i := 0; i < copies; i++ {
			w = append(w, w1...)
		}
		a, _ := benchAct(b, t, n, 1)
		y := make([]float32, rows*copies)
		const half = rows * copies / 2
		b.Run(fmt.Sprintf("%v/%s", t, Impl()), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			errs := make(chan error, 1)
			for i := 0; i < b.N; i++ {
				go func() { errs <- MatVec(t, n, w, rb, a, y, half, rows*copies) }()
				err := MatVec(t, n, w, rb, a, y, 0, half)
				if err2 := <-errs; err == nil {
					err = err2
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

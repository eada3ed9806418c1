package kernels

import (
	"fmt"
	"testing"
)

// MatMulQ of small batches (the decode steps of a few sequences at once)
// against MatVec, one thread, over the out-of-cache FFN-shaped matrices of
// MatVecBig: cpu-GB/s counts the weight bytes once per token, so a batch
// that costs no more than one token reads ntok times MatVec's figure.
//
//	go test ./kernels -run x -bench MatMulQSmall -benchtime 200ms
func BenchmarkMatMulQSmall(b *testing.B) {
	for _, t := range []Type{Q4_K, Q6_K} {
		n, w, rb, _, rows := bigMatVec(b, t)
		for _, ntok := range []int{1, 2, 3, 4, 6, 8, 16, 32, 64} {
			a, ab := benchAct(b, t, n, ntok)
			y := make([]float32, rows*ntok)
			b.Run(fmt.Sprintf("%v/%s/%dtok", t, Impl(), ntok), func(b *testing.B) {
				timed(b, int64(len(w))*int64(ntok), func() {
					if ntok == 1 {
						MatVec(t, n, w, rb, a, y, 0, rows)
						return
					}
					MatMulQ(t, n, w, rb, 0, rows, a, ab, ntok, y, rows)
				})
			})
		}
	}
}

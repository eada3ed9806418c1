package kernels

import (
	"fmt"
	"testing"
)

// bigMatVec builds the out-of-cache MatVec input of the Big benchmarks: a
// 2048 x 5632 (FFN-shaped) matrix of type t, 16 copies so each pass reads
// ~100 MB, and one activation row.
func bigMatVec(b *testing.B, t Type) (n int, w []byte, rb int, a []byte, rows int) {
	const cols, r1, copies = 2048, 5632, 16
	w1, rb := benchMatrix(t, cols, r1)
	w = make([]byte, 0, len(w1)*copies)
	for i := 0; i < copies; i++ {
		w = append(w, w1...)
	}
	a, _ = benchAct(b, t, cols, 1)
	return cols, w, rb, a, r1 * copies
}

// MatVec out of cache, one thread; cpu-GB/s is weight bytes per thread-CPU second.
func BenchmarkMatVecBig(b *testing.B) {
	for _, t := range []Type{Q4_K, Q6_K} {
		n, w, rb, a, rows := bigMatVec(b, t)
		y := make([]float32, rows)
		b.Run(fmt.Sprintf("%v/%s", t, Impl()), func(b *testing.B) {
			timed(b, int64(len(w)), func() { MatVec(t, n, w, rb, a, y, 0, rows) })
		})
	}
}

// MatVecBig over two threads: the same pass split in two halves, one
// goroutine each; MB/s is wall clock, to compare with
// `woolly bench --bandwidth -t 2` (the machine's two-thread read bandwidth).
func BenchmarkMatVecBig2T(b *testing.B) {
	for _, t := range []Type{Q4_K, Q6_K} {
		n, w, rb, a, rows := bigMatVec(b, t)
		y := make([]float32, rows)
		half := rows / 2
		b.Run(fmt.Sprintf("%v/%s", t, Impl()), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			done := make(chan struct{}, 1)
			for i := 0; i < b.N; i++ {
				go func() { MatVec(t, n, w, rb, a, y, half, rows); done <- struct{}{} }()
				MatVec(t, n, w, rb, a, y, 0, half)
				<-done
			}
		})
	}
}

// MatVec over packed rows against the same rows unpacked, one thread, for
// each type the active set packs: an in-cache 4096 x 1024 matrix and the
// out-of-cache one of MatVecBig. Run with -count N: the unpacked and packed
// runs alternate.
//
//	go test ./kernels -run x -bench MatVecPacked -count 5 -benchtime 300ms
func BenchmarkMatVecPacked(b *testing.B) {
	for _, t := range []Type{Q4_K, Q6_K, Q8_0, Q5_K, IQ4_XS} {
		if PackRows(t) == 0 {
			continue
		}
		for _, size := range []string{"cache", "big"} {
			var n, rb, rows int
			var w, a []byte
			if size == "big" {
				n, w, rb, a, rows = bigMatVec(b, t)
			} else {
				n, rows = 4096, 1024
				w, rb = benchMatrix(t, n, rows)
				a, _ = benchAct(b, t, n, 1)
			}
			pw := make([]byte, len(w))
			p, err := Pack(t, n, w, rb, rows, pw)
			if err != nil {
				b.Fatal(err)
			}
			y := make([]float32, rows)
			b.Run(fmt.Sprintf("%v/%s/%s/unpacked", t, Impl(), size), func(b *testing.B) {
				timed(b, int64(len(w)), func() { MatVec(t, n, w, rb, a, y, 0, rows) })
			})
			b.Run(fmt.Sprintf("%v/%s/%s/packed", t, Impl(), size), func(b *testing.B) {
				timed(b, int64(len(w)), func() { MatVecPacked(p, t, n, pw, rb, rows, a, y, 0, rows) })
			})
		}
	}
}

// MatMulQ of a 64-token batch over packed rows against the same rows
// unpacked, one thread (4096 x 1024 matrix): the cost of unpacking tiles.
//
//	go test ./kernels -run x -bench MatMulQPacked -benchtime 300ms
func BenchmarkMatMulQPacked(b *testing.B) {
	const n, rows, ntok = 4096, 1024, 64
	for _, t := range []Type{Q4_K, Q6_K, Q8_0, Q5_K, IQ4_XS} {
		if PackRows(t) == 0 {
			continue
		}
		w, rb := benchMatrix(t, n, rows)
		a, ab := benchAct(b, t, n, ntok)
		pw := make([]byte, len(w))
		p, err := Pack(t, n, w, rb, rows, pw)
		if err != nil {
			b.Fatal(err)
		}
		y := make([]float32, rows*ntok)
		b.Run(fmt.Sprintf("%v/%s/unpacked", t, Impl()), func(b *testing.B) {
			timed(b, int64(len(w)), func() { MatMulQ(t, n, w, rb, 0, rows, a, ab, ntok, y, rows) })
		})
		b.Run(fmt.Sprintf("%v/%s/packed", t, Impl()), func(b *testing.B) {
			timed(b, int64(len(w)), func() { MatMulQPacked(p, t, n, pw, rb, rows, 0, rows, a, ab, ntok, y, rows) })
		})
	}
}

// MatVecBig2T packed against unpacked: the out-of-cache pass split in two
// halves (a multiple of the group size), one goroutine each; MB/s is wall
// clock (compare with `woolly bench --bandwidth -t 2`).
func BenchmarkMatVecPacked2T(b *testing.B) {
	for _, t := range []Type{Q4_K, Q6_K} {
		g := PackRows(t)
		if g == 0 {
			continue
		}
		n, w, rb, a, rows := bigMatVec(b, t)
		pw := make([]byte, len(w))
		p, err := Pack(t, n, w, rb, rows, pw)
		if err != nil {
			b.Fatal(err)
		}
		y := make([]float32, rows)
		half := rows / 2 / g * g
		for _, packed := range []bool{false, true} {
			mv := func(r0, r1 int) {
				if packed {
					MatVecPacked(p, t, n, pw, rb, rows, a, y, r0, r1)
					return
				}
				MatVec(t, n, w, rb, a, y, r0, r1)
			}
			name := map[bool]string{false: "unpacked", true: "packed"}[packed]
			b.Run(fmt.Sprintf("%v/%s/%s", t, Impl(), name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				done := make(chan struct{}, 1)
				for i := 0; i < b.N; i++ {
					go func() { mv(half, rows); done <- struct{}{} }()
					mv(0, half)
					<-done
				}
			})
		}
	}
}

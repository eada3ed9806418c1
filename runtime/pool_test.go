package runtime

import (
	"sync/atomic"
	"testing"
	"time"
)

// Every chunk runs exactly once, with a worker id below n that no other
// running chunk holds, for many back-to-back jobs of varying sizes.
func TestPoolRunChunks(t *testing.T) {
	for _, nw := range []int{1, 2, 3, 4} {
		p := newPool(nw)
		busy := make([]atomic.Int32, nw)
		for it := 0; it < 300; it++ {
			n := it % 37
			counts := make([]atomic.Int32, n)
			var bad atomic.Int32
			p.runChunks(n, func(wk, c int) {
				if wk < 0 || wk >= nw || busy[wk].Add(1) != 1 {
					bad.Add(1)
				}
				counts[c].Add(1)
				if it%50 == 0 {
					time.Sleep(50 * time.Microsecond) // let the workers park between jobs
				}
				busy[wk].Add(-1)
			})
			if bad.Load() != 0 {
				t.Fatalf("%d workers, job %d: a worker id was out of range or ran two chunks at once", nw, it)
			}
			for c := range counts {
				if got := counts[c].Load(); got != 1 {
					t.Fatalf("%d workers, job %d: chunk %d ran %d times", nw, it, c, got)
				}
			}
			if it%100 == 99 {
				time.Sleep(2 * time.Millisecond) // workers park; the next job must wake them
			}
		}
		seen := make([]atomic.Int32, nw)
		p.run(func(w int) { seen[w].Add(1) })
		for w := range seen {
			if seen[w].Load() != 1 {
				t.Fatalf("%d workers: run called f(%d) %d times", nw, w, seen[w].Load())
			}
		}
		p.close()
		p.close() // idempotent
	}
}

func BenchmarkPoolRun(b *testing.B) {
	p := newPool(2)
	defer p.close()
	var x [2]int
	for i := 0; i < b.N; i++ {
		p.run(func(w int) { x[w]++ })
	}
}

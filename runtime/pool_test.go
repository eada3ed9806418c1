package runtime

import (
	"errors"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

func TestPerformanceCores(t *testing.T) {
	fake := func(vals map[string]uint32) func(string) (uint32, error) {
		return func(name string) (uint32, error) {
			if v, ok := vals[name]; ok {
				return v, nil
			}
			return 0, errors.New("unknown sysctl " + name)
		}
	}
	// Apple Silicon: 4 performance + 4 efficiency cores → 4.
	if got := performanceCores(fake(map[string]uint32{"hw.perflevel0.physicalcpu": 4, "hw.physicalcpu": 8})); got != 4 {
		t.Errorf("M-series: %d threads, want the 4 performance cores", got)
	}
	// Intel Mac (no perflevels) → physical cores.
	if got := performanceCores(fake(map[string]uint32{"hw.physicalcpu": 6})); got != 6 {
		t.Errorf("Intel Mac: %d threads, want 6", got)
	}
	// A zero answer is not believed.
	if got := performanceCores(fake(map[string]uint32{"hw.perflevel0.physicalcpu": 0, "hw.physicalcpu": 10})); got != 10 {
		t.Errorf("zero perflevel0: %d, want 10", got)
	}
	if got := performanceCores(fake(nil)); got != 0 {
		t.Errorf("no sysctl: %d, want 0", got)
	}
	if goruntime.GOOS != "darwin" {
		if got := performanceCores(sysctlUint32); got != 0 {
			t.Errorf("on %s performanceCores = %d, want 0 (Linux keeps /sys)", goruntime.GOOS, got)
		}
	}
}

// A job's chunks are cut into one contiguous part per worker: a worker
// runs its own part in order, then the others' from the next one on.
func TestJobParts(t *testing.T) {
	for _, tc := range []struct{ n, parts, wk int }{{16, 2, 0}, {16, 2, 1}, {10, 3, 2}, {2, 4, 3}, {7, 1, 0}} {
		var order []int
		j := newJob(func(wk, c int) { order = append(order, c) }, tc.n, tc.parts)
		j.fin = make(chan struct{}, 1)
		j.work(tc.wk)
		var want []int
		for k := 0; k < tc.parts; k++ {
			p := (tc.wk + k) % tc.parts
			for c := p * tc.n / tc.parts; c < (p+1)*tc.n/tc.parts; c++ {
				want = append(want, c)
			}
		}
		if len(order) != tc.n || !slicesEqual(order, want) {
			t.Errorf("n=%d parts=%d worker %d ran %v, want %v", tc.n, tc.parts, tc.wk, order, want)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A chunk's panic is re-raised on the caller's goroutine, with the value and
// the stack of the goroutine that panicked, after every other chunk has run;
// the pool then runs the next job normally. Covers a panic on a worker
// goroutine (wk != 0) and on the caller (wk == 0).
func TestPoolReraisesWorkerPanic(t *testing.T) {
	for _, nw := range []int{2, 3} {
		p := newPool(nw)
		for _, onWorker := range []bool{true, false} {
			seen := 0
			for it := 0; it < 20; it++ {
				const n = 64
				boom := errors.New("kernels.Test: boom")
				var ran atomic.Int32
				var panicked atomic.Bool
				release := make(chan struct{}, 1)
				got := func() (r any) {
					defer func() { r = recover() }()
					p.runChunks(n, func(wk, c int) {
						ran.Add(1)
						// The chunk that panics waits until the other goroutine has
						// run one, so both the caller and a worker take part.
						if (wk != 0) == onWorker && panicked.CompareAndSwap(false, true) {
							<-release
							panic(boom)
						}
						if (wk != 0) != onWorker {
							// Hold the other side until the panicking chunk has started.
							for t0 := time.Now(); !panicked.Load() && time.Since(t0) < time.Second; {
								goruntime.Gosched()
							}
							select {
							case release <- struct{}{}:
							default:
							}
						}
					})
					return nil
				}()
				if got == nil {
					if !panicked.Load() { // the other side took every chunk: no panic to see
						continue
					}
					t.Fatalf("%d workers: runChunks returned after a chunk panicked", nw)
				}
				wp, ok := got.(*workerPanic)
				if !ok {
					t.Fatalf("%d workers: recovered %T %v, want *workerPanic", nw, got, got)
				}
				if !errors.Is(wp, boom) || !strings.Contains(wp.Error(), "kernels.Test: boom") ||
					!strings.Contains(wp.Error(), "TestPoolReraisesWorkerPanic") {
					t.Fatalf("%d workers: panic text lacks the value or the worker's stack:\n%s", nw, wp.Error())
				}
				if ran.Load() != n {
					t.Fatalf("%d workers: %d of %d chunks ran", nw, ran.Load(), n)
				}
				// The pool is still usable.
				var sum atomic.Int64
				p.runChunks(100, func(_, c int) { sum.Add(int64(c)) })
				if sum.Load() != 99*100/2 {
					t.Fatalf("%d workers: job after the panic summed %d", nw, sum.Load())
				}
				seen++
			}
			if seen == 0 {
				t.Fatalf("%d workers, panic on a worker %v: no job panicked", nw, onWorker)
			}
		}
		p.close()
	}
}

// chunkRows: whole 16-row groups, at least chunkMinRows, about 8 to 32
// chunks per worker where the rows allow it, and more chunks for bigger ops
// (granite-8b's 59 MB feed-forward op must not keep 8 per worker, the
// count that left ~0.3 ms of one thread idle per op).
func TestChunkRows(t *testing.T) {
	chunks := func(rows, rp int) int { return (rows + rp - 1) / rp }
	for _, tc := range []struct{ rows, rowBytes, mats, workers int }{
		{12800, 2304, 2, 2}, {4096, 10500, 1, 2}, {4096, 2304, 1, 2}, {1024, 2304, 1, 2},
		{5632, 1152, 2, 2}, {2048, 3168, 1, 2}, {49159, 3360, 1, 2}, {64, 144, 1, 2},
		{12800, 2304, 2, 8}, {12800, 2304, 2, 1}, {100, 144, 1, 4},
	} {
		bytes := tc.rows * tc.rowBytes * tc.mats
		rp := chunkRows(tc.rows, bytes, tc.workers)
		n := chunks(tc.rows, rp)
		require.Zero(t, rp%packChunkAlign, "%+v: %d rows per chunk", tc, rp)
		require.GreaterOrEqual(t, rp, chunkMinRows, "%+v", tc)
		require.LessOrEqual(t, n, chunksMax*tc.workers, "%+v: %d chunks", tc, n)
		if tc.rows >= chunksPerWorker*tc.workers*chunkMinRows {
			// rounding up to 16 rows costs at most a quarter of the chunks
			require.GreaterOrEqual(t, 4*n, 3*chunksPerWorker*tc.workers, "%+v: %d chunks", tc, n)
		}
		// more bytes over the same rows never gives fewer chunks
		require.LessOrEqual(t, chunkRows(tc.rows, 4*bytes, tc.workers), rp, "%+v", tc)
	}
	// granite-8b's fused gate/up op (2 x 12800 rows of 2304 bytes), 2 workers
	n := chunks(12800, chunkRows(12800, 2*12800*2304, 2))
	require.True(t, n >= 40 && n <= 64, "granite-8b feed-forward op: %d chunks, want 40..64", n)
	// TinyLlama's (2 x 5632 rows of 1152 bytes) stays near 8 per worker
	n = chunks(5632, chunkRows(5632, 2*5632*1152, 2))
	require.True(t, n >= 16 && n <= 32, "TinyLlama feed-forward op: %d chunks, want 16..32", n)
}

// runChunksWait with no polling (the caller blocks at once, as on long
// ops) still returns only once every chunk has run, exactly once.
func TestPoolRunChunksWaitBlocks(t *testing.T) {
	p := newPool(2)
	defer p.close()
	for it := 0; it < 50; it++ {
		n := 2 + it%7
		var counts [8]atomic.Int32
		p.runChunksWait(n, 0, func(wk, c int) {
			if c%2 == 1 { // the worker's chunks outlast the caller's
				time.Sleep(time.Duration(50+it) * time.Microsecond)
			}
			counts[c].Add(1)
		})
		for c := 0; c < n; c++ {
			require.EqualValues(t, 1, counts[c].Load(), "job %d chunk %d", it, c)
		}
	}
	require.Equal(t, longOpWait, opWait(longOpBytes))
	require.Equal(t, spinFor, opWait(longOpBytes-1))
}

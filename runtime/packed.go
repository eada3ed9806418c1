package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"sync"
	"unsafe"

	"github.com/woolly-llm/woolly/kernels"
)

// Packed weights: at load, the matrices of the types the active kernel set
// packs (kernels.PackRows) are repacked into row-interleaved groups in an
// anonymous buffer, and their pages of the file mapping are dropped, so the
// resident size stays that of the file. The products read one sequential
// stream per worker and feed each activation load to a whole group of rows;
// the results are the same bits as on the unpacked rows.
//
// On arm64 it is on by default: the NEON dotprod packed kernels execute
// 2.6-3.7x fewer instructions than the unpacked ones per 256 weights of a
// generated token (scripts/apple-proxy.sh, M1 build: Q4_K 311.8 -> 84.1,
// Q5_K 364.3 -> 104.7, Q6_K 206.7 -> 102.4, Q8_0 140.8 -> 87.7; MXFP4, whose
// experts are packed one by one like the other types', 272.5 -> 117.7), which on an
// Apple core is the difference between compute-bound and memory-bound
// generation. On x86-64 it is off unless asked for (WOOLLY_PACK=1,
// LoadOptions.Pack = PackOn): there the packed kernels do less work (one thread, matrix in cache,
// MatVec thread-CPU GB/s packed / unpacked: Q4_K 1.73x AVX-512, 1.33x AVX2;
// Q6_K 1.00x / 1.05x; callgrind on AVX2, TinyLlama Q4_K_M, -t 1 -n 4:
// 3.61 -> 2.33 G instructions in the matrix-vector products), but
// generation streams weights from memory, and out of cache they were no
// faster (0.93-1.00x); end to end, TinyLlama Q4_K_M on a shared 2-core
// Xeon, packed / unpacked CPU seconds per generated token were 0.96-1.06x.
// packDefault is where a platform's measurements say otherwise.
const packDefault = goruntime.GOARCH == "arm64"

// packChunkAlign is the row granularity of every worker chunk (forward.go,
// moe.go): a packed group never straddles two chunks when its size divides it.
const packChunkAlign = 16

// packEnabled reports whether Load repacks weights.
func packEnabled(o LoadOptions) bool {
	switch o.Pack {
	case PackOn:
		return true
	case PackOff:
		return false
	}
	switch os.Getenv("WOOLLY_PACK") {
	case "1":
		return true
	case "0":
		return false
	}
	return packDefault
}

// packable lists the matrices of w that the active kernel set packs: every
// layer matrix and the output matrix unless it is the token embedding (its
// rows are read one by one by the embedding lookup), one Mat per distinct
// data, each with at least one whole group.
func packable(w *Weights) []*Mat {
	var mats []*Mat
	seen := map[*byte]bool{}
	add := func(m *Mat) {
		if len(m.Data) == 0 || seen[&m.Data[0]] {
			return
		}
		g := kernels.PackRows(m.Type)
		if g == 0 || packChunkAlign%g != 0 || m.Rows < g || len(m.Data) != m.Rows*m.RowBytes {
			return
		}
		seen[&m.Data[0]] = true
		mats = append(mats, m)
	}
	if len(w.Output.Data) > 0 && (len(w.TokEmbd.Data) == 0 || &w.Output.Data[0] != &w.TokEmbd.Data[0]) {
		add(&w.Output)
	}
	for i := range w.Layers {
		for _, m := range w.Layers[i].allMats() {
			add(m)
		}
	}
	return mats
}

// packWeights repacks the packable matrices of w into one anonymous buffer
// (threads goroutines, a matrix at a time each), drops each matrix's pages
// from the file mapping once it is copied, and points the matrices at the
// copies. It returns the function that releases the buffer (nil when
// nothing was packed) and the number of bytes packed.
// With huge, the buffer is backed by transparent huge pages where the
// system has them (the policy of moveToHugePages).
func packWeights(w *Weights, threads int, huge bool) (release func() error, bytes int64, err error) {
	mats := packable(w)
	if len(mats) == 0 {
		return nil, 0, nil
	}
	offs := make([]int, len(mats))
	total := 0
	for i, m := range mats {
		offs[i] = total
		total += (len(m.Data) + 63) &^ 63
	}
	buf, free, err := anonBuffer(total, huge)
	if err != nil {
		return nil, 0, fmt.Errorf("packed weights: %v", err)
	}
	var mu sync.Mutex
	var firstErr error
	next := 0
	var wg sync.WaitGroup
	for t := 0; t < max(1, threads); t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil
				mu.Unlock()
				if i >= len(mats) || stop {
					return
				}
				m := mats[i]
				dst := buf[offs[i] : offs[i]+len(m.Data) : offs[i]+len(m.Data)]
				p, err := kernels.Pack(m.Type, m.Cols, m.Data, m.RowBytes, m.Rows, dst)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("packing %s: %v", m.Name, err)
					}
					mu.Unlock()
					return
				}
				dropPages(m.Data)
				m.Data, m.Pack = dst, p
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		// Matrices already switched point into buf: keep it (the model
		// is not built on an error, and the caller closes the file).
		return free, 0, firstErr
	}
	for _, m := range mats {
		bytes += int64(len(m.Data))
	}
	return free, bytes, nil
}

// pageRange is the part of b made of whole pages: [lo, hi) offsets into b.
func pageRange(b []byte) (lo, hi int) {
	page := os.Getpagesize()
	p0 := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	lo = (page - p0%page) % page
	hi = (p0+len(b))/page*page - p0
	return lo, hi
}

//go:build linux

package runtime

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// moveToHugePages copies the matrices that every token streams through (all
// layer matrices and the output matrix) out of the file mapping into one
// anonymous mapping backed by transparent huge pages, and drops their pages
// from the file mapping so the resident size stays that of the file. With
// 4 KiB file pages the matrix products stall on TLB misses: generation
// streams every weight once per token, and a mixture-of-experts model reads
// a few scattered experts per token. It is on by default wherever the
// kernel offers transparent huge pages (madvise or always);
// WOOLLY_HUGEPAGES=0 turns it off. Measured on a 2-core Xeon (AVX-512),
// 3 interleaved pairs each: TinyLlama Q4_K_M `woolly bench -p 128 -n 64
// -t 2 -r 2` tg64 34.7/34.0/33.3 with it, 30.7/30.1/29.8 without (pp128
// unchanged); granite-8b Q4_K_M tg32 4.11/4.02 vs 3.74/3.66 (2 pairs);
// qwen3moe-7b-a1b (an earlier machine, -t 1) 25.8/22.5 vs 16.0/17.5.
// The bytes are unchanged. It returns the function that releases the copy,
// or nil (weights left in the file mapping) when it is not enabled or huge
// pages are unavailable.
// Matrices already repacked (packWeights) are in an anonymous buffer of
// their own, which follows the same policy (wantHugePages).
func moveToHugePages(w *Weights) func() error {
	if !wantHugePages() {
		return nil
	}
	var mats []*Mat
	for _, m := range append([]*Mat{&w.Output}, w.allLayerMats()...) {
		if m.Pack.Rows() == 0 {
			mats = append(mats, m)
		}
	}
	const huge = 2 << 20
	total := 0
	for _, m := range mats {
		total += (len(m.Data) + 63) &^ 63
	}
	if total < 4*huge || total > memAvailable()/2 {
		// Tiny models gain nothing; and anonymous memory, unlike file
		// pages, cannot simply be dropped under memory pressure, so a
		// model that does not fit comfortably stays in the file mapping.
		return nil
	}
	n := (total + huge - 1) &^ (huge - 1)
	b, err := unix.Mmap(-1, 0, n+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	off := (huge - int(uintptr(unsafe.Pointer(&b[0]))&(huge-1))) & (huge - 1)
	a := b[off : off+n]
	if unix.Madvise(a, unix.MADV_HUGEPAGE) != nil {
		unix.Munmap(b)
		return nil
	}
	page := os.Getpagesize()
	pos := 0
	for _, m := range mats {
		d := a[pos : pos+len(m.Data) : pos+len(m.Data)]
		copy(d, m.Data)
		// Drop the file pages wholly inside this matrix (they are read
		// back from the page cache if anything touches them again).
		p0 := int(uintptr(unsafe.Pointer(unsafe.SliceData(m.Data))))
		lo := (page - p0%page) % page
		hi := (p0+len(m.Data))/page*page - p0
		if hi > lo {
			unix.Madvise(m.Data[lo:hi], unix.MADV_DONTNEED)
		}
		m.Data = d
		pos += (len(d) + 63) &^ 63
	}
	return func() error { return unix.Munmap(b) }
}

// wantHugePages is the huge-page policy of moveToHugePages: on unless
// WOOLLY_HUGEPAGES=0, and only where transparent huge pages are enabled.
func wantHugePages() bool {
	if os.Getenv("WOOLLY_HUGEPAGES") == "0" {
		return false
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !strings.Contains(string(thp), "[never]")
}

// adviseHugePages asks for transparent huge pages on b (best effort).
func adviseHugePages(b []byte) { unix.Madvise(b, unix.MADV_HUGEPAGE) }

// memAvailable is MemAvailable from /proc/meminfo in bytes (0 if unknown).
func memAvailable() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.Atoi(f[0]); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

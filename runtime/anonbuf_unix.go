//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package runtime

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// anonBuffer maps n bytes of anonymous memory (pages are allocated when
// first written, so the copy costs resident memory only as it is made) and
// returns it with the function that unmaps it.
// With huge, it is aligned to 2 MiB and advised to use transparent huge
// pages (adviseHugePages; a no-op where there are none).
func anonBuffer(n int, huge bool) ([]byte, func() error, error) {
	const hp = 2 << 20
	extra := 0
	if huge {
		extra = hp
	}
	b, err := unix.Mmap(-1, 0, n+extra, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	a := b[:n:n]
	if huge {
		off := (hp - int(uintptr(unsafe.Pointer(&b[0])))&(hp-1)) & (hp - 1)
		a = b[off : off+n : off+n]
		adviseHugePages(a)
	}
	return a, func() error { return unix.Munmap(b) }, nil
}

// dropPages releases the resident pages wholly inside b, a slice of the
// read-only file mapping: they are read back from the page cache if
// anything touches them again.
func dropPages(b []byte) {
	if lo, hi := pageRange(b); hi > lo {
		unix.Madvise(b[lo:hi], unix.MADV_DONTNEED)
	}
}

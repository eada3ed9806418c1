//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package loader

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole file read-only.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, nil, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file too large to map (%d bytes)", size)
	}
	b, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return unix.Munmap(b) }, nil
}

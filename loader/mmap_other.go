//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package loader

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the whole file into memory where mmap is not available.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file too large to read (%d bytes)", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(fh, b); err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}

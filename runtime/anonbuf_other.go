//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package runtime

// anonBuffer allocates n bytes on the Go heap where anonymous mappings are
// not available.
func anonBuffer(n int, huge bool) ([]byte, func() error, error) {
	return make([]byte, n), func() error { return nil }, nil
}

// dropPages does nothing here: the file is read into memory (loader), and
// its bytes are freed with it.
func dropPages(b []byte) {}

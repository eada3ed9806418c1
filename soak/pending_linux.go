package soak

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending is the number of bytes that have arrived on c and wait in the
// kernel to be read (SIOCINQ), or -1 when it cannot tell.
func pending(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := raw.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	}); err != nil {
		return -1
	}
	return n
}

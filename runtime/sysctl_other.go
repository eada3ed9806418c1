//go:build !darwin

package runtime

import "errors"

// sysctlUint32: only macOS's sysctl names are asked for (see PhysicalCores).
func sysctlUint32(name string) (uint32, error) {
	return 0, errors.New("sysctl " + name + ": not macOS")
}

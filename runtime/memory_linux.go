package runtime

import "syscall"

// totalMemory is the machine's RAM in bytes (0: unknown).
func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

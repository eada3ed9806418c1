//go:build !linux

package runtime

// totalMemory is the machine's RAM in bytes (0: unknown; only Linux asks).
func totalMemory() uint64 { return 0 }

package runtime

import "golang.org/x/sys/unix"

// sysctlUint32 reads a numeric sysctl (see PhysicalCores).
func sysctlUint32(name string) (uint32, error) { return unix.SysctlUint32(name) }

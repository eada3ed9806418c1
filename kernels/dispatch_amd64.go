package kernels

import "golang.org/x/sys/cpu"

// archImpls: AVX2 needs AVX2, FMA and F16C (GODEBUG=cpu.avx2=off disables it).
func archImpls() []implInfo {
	var out []implInfo
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		out = append(out, implInfo{"avx2", 1})
	}
	return out
}

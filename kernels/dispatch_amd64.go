package kernels

import "golang.org/x/sys/cpu"

// archImpls: "avx2" needs AVX2, FMA and F16C; "avx512" additionally AVX-512
// F/BW/VL and VNNI (x/sys/cpu also checks that the OS saves the AVX-512
// state). GODEBUG=cpu.avx2=off or cpu.avx512f=off disables them.
func archImpls() []implInfo {
	var out []implInfo
	x := cpu.X86
	if x.HasAVX2 && x.HasFMA && x.HasF16C {
		out = append(out, implInfo{"avx2", 1})
		if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI {
			out = append(out, implInfo{"avx512", 4})
		}
	}
	return out
}

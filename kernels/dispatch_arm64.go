package kernels

import "golang.org/x/sys/cpu"

// archImpls lists the arm64 kernel sets this CPU can run, best last, with
// their K_IMPL_* ids:
//
//	neon          Advanced SIMD, part of every arm64 CPU Go runs on
//	neon-dotprod  neon with the integer dot products on SDOT (k_sdot, inline assembly);
//	              only when the CPU reports dotprod (ARMv8.2+ optional,
//	              ARMv8.4+ and every Apple M-series). GODEBUG=cpu.asimddp=off
//	              hides it (and neon-i8mm).
//	neon-i8mm     neon-dotprod with prompt tiles of the packed weights on
//	              USMMLA (k_usmmla, inline assembly); only when the CPU reports
//	              dotprod and i8mm (ARMv8.6+, Apple M2 and later).
//	              GODEBUG=cpu.i8mm=off hides it.
func archImpls() []implInfo {
	out := []implInfo{{"neon", 2}}
	if cpu.ARM64.HasASIMDDP {
		out = append(out, implInfo{"neon-dotprod", 3})
		if cpu.ARM64.HasI8MM {
			out = append(out, implInfo{"neon-i8mm", 5})
		}
	}
	return out
}

package kernels

import "golang.org/x/sys/cpu"

// archImpls lists the arm64 kernel sets this CPU can run, best last, with
// their K_IMPL_* ids:
//
//	neon          Advanced SIMD, part of every arm64 CPU Go runs on
//	neon-dotprod  neon with the integer dot products on SDOT (k_sdot, inline assembly);
//	              only when the CPU reports dotprod (ARMv8.2+ optional,
//	              ARMv8.4+ and every Apple M-series). GODEBUG=cpu.asimddp=off
//	              hides it.
func archImpls() []implInfo {
	out := []implInfo{{"neon", 2}}
	if cpu.ARM64.HasASIMDDP {
		out = append(out, implInfo{"neon-dotprod", 3})
	}
	return out
}

package kernels

import (
	"fmt"
	"os"
	"sync/atomic"
)

// implInfo names one kernel set and its C impl id (K_IMPL_* in kernels.h).
type implInfo struct {
	name string
	id   int
}

// impls holds "ref" followed by archImpls() (the SIMD sets this CPU can run,
// defined per architecture in dispatch_<arch>.go, best last).
var impls []implInfo

// active is the index into impls of the kernel set in use.
var active atomic.Int32

func init() {
	impls = append([]implInfo{{"ref", 0}}, archImpls()...)
	active.Store(int32(len(impls) - 1))
	if v := os.Getenv("WOOLLY_KERNELS"); v != "" {
		if err := Use(v); err != nil {
			fmt.Fprintf(os.Stderr, "woolly: WOOLLY_KERNELS=%s: %v; using %s\n", v, err, Impl())
		}
	}
}

func implID() int { return impls[active.Load()].id }

// Impl is the name of the active kernel set: "ref", "avx2", "avx512", "neon", "neon-dotprod",
// "neon-i8mm".
func Impl() string { return impls[active.Load()].name }

// Available lists every kernel set this CPU can run, "ref" first and the
// default (best) last.
func Available() []string {
	out := make([]string, len(impls))
	for i, im := range impls {
		out[i] = im.name
	}
	return out
}

// Use switches the active kernel set (tests and benchmarks). It is not meant
// to be called while other goroutines run kernels.
func Use(name string) error {
	for i, im := range impls {
		if im.name == name {
			active.Store(int32(i))
			return nil
		}
	}
	return fmt.Errorf("kernel set %q is not available on this CPU (have %v)", name, Available())
}

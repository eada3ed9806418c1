package kernels

// archImpls lists the arm64 kernel sets this CPU can run, best last, with
// their K_IMPL_* ids (owner: kernels-arm-build). Minimal version: none yet.
func archImpls() []implInfo { return nil }

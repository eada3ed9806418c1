//go:build !amd64 && !arm64

package kernels

// archImpls: no SIMD kernels on this architecture; "ref" only.
func archImpls() []implInfo { return nil }

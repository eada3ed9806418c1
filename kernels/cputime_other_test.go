//go:build !linux

package kernels

// threadCPU is unavailable here; the cpu-GB/s metric is then not reported.
func threadCPU() float64 { return 0 }

package kernels

import "golang.org/x/sys/unix"

// threadCPU is the CPU time of the calling OS thread in seconds (the
// benchmarks lock their goroutine to a thread). On a shared, loaded machine
// it excludes time spent descheduled, unlike b.Elapsed.
func threadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

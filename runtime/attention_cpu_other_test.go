//go:build !unix

package runtime

import "time"

// processCPU is not measured here (benchmarks then report 0 CPU time).
func processCPU() time.Duration { return 0 }

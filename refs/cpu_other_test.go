//go:build !unix

package refs

import "time"

// processCPU is not measured here: the benchmarks report no CPU metric.
func processCPU() time.Duration { return 0 }

//go:build !unix

package gzmember

import "time"

// processCPU is not measured here: the benchmarks report no CPU metric.
func processCPU() time.Duration { return 0 }

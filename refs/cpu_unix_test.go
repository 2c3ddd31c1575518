//go:build unix

package refs

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far: on
// a machine others share, what a benchmark costs rather than how long it
// waited for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

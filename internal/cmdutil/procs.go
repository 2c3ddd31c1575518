package cmdutil

import (
	"os"
	"runtime"

	"warcdedup/gzmulti"
)

// SpareProcForInflate gives Go's scheduler one P more than it has when the
// inflater runs in C (an ISA-L build) and jobs files inflated at once
// would take every P, unless GOMAXPROCS is set in the environment. The
// count starts from the runtime's own (which follows a CPU quota), not
// from jobs: -j 64 under a quota of 2 CPUs gets 3 Ps, not 65.
//
// Why: a goroutine in a C call keeps its P. When every P is so held, the
// runtime's monitor takes a P from a call that has run past one of its
// ticks (20 us to 10 ms; an inflate call runs that long) and wakes a
// thread to look for other work with it; the call, returning, must get a
// P back. With one P idle the monitor leaves calls shorter than 10 ms
// alone. Measured with warcsum -j 2 on two cores (30 KB records, SHA-1):
// 1.27 s with 2 Ps, 1.16 s with 3, half the context switches and 8% fewer
// CPU seconds. Only for commands whose workers spend most of their time
// in the inflater: warccollres, warcrefs and warcdedup, which do more in
// Go meanwhile, were slower with the spare P (measured the same way).
func SpareProcForInflate(jobs int) {
	if gzmulti.Inflater != "isal" || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	// Runner reads with one job at least.
	if p := runtime.GOMAXPROCS(0); max(jobs, 1) >= p {
		runtime.GOMAXPROCS(p + 1)
	}
}

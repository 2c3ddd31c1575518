package cmdutil

import (
	"os"
	"runtime"
	"testing"

	"warcdedup/gzmulti"
)

// TestSpareProcForInflate proves that a spare P is added only when the
// inflater runs in C, every P would be inflating, and the environment did
// not set GOMAXPROCS.
func TestSpareProcForInflate(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	tests := []struct {
		name  string
		procs int
		jobs  int
		env   string
		// the GOMAXPROCS after, in an ISA-L build and in a pure-Go one
		wantISAL, wantGo int
	}{
		{"as many jobs as Ps", 2, 2, "", 3, 2},
		{"more jobs than Ps: one P more, not jobs+1", 2, 4, "", 3, 2},
		{"no jobs given: the one the runner reads with", 1, 0, "", 2, 1},
		{"a P left idle already", 4, 2, "", 4, 4},
		{"one job, one P", 1, 1, "", 2, 1},
		{"GOMAXPROCS set by the user", 2, 2, "2", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("GOMAXPROCS", tt.env)
			} else if v, ok := os.LookupEnv("GOMAXPROCS"); ok && v != "" {
				t.Skip("GOMAXPROCS is set in this test's environment")
			}
			runtime.GOMAXPROCS(tt.procs)
			SpareProcForInflate(tt.jobs)
			want := tt.wantGo
			if gzmulti.Inflater == "isal" {
				want = tt.wantISAL
			}
			if got := runtime.GOMAXPROCS(0); got != want {
				t.Errorf("GOMAXPROCS %d, want %d (inflater %s)", got, want, gzmulti.Inflater)
			}
		})
	}
}

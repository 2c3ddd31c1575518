package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/stage"
)

// TestRunWACZSpaceThreshold: the smallest free space a run's check of
// free space accepts is enough for the run to finish: the check counts
// the members' new versions beside their packages at the members' size
// (they stay until the packages are written anew) and Jobs packages
// written at once, no copy of the members (they are read where they lie).
func TestRunWACZSpaceThreshold(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs int
	}{
		{"one at a time", 1},
		{"two packages at once", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSmallWACZ(t, false, fourTimes)
			files, err := filepath.Glob(filepath.Join(c.src, "*"))
			if err != nil {
				t.Fatal(err)
			}
			used := usedBytes(t, c.dir)
			work := t.TempDir()
			runWith := func(free int64) (*stage.Result, error) {
				remountTmpfs(t, c.dir, 4*c.size)
				entries, err := os.ReadDir(c.dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if err := os.RemoveAll(filepath.Join(c.dir, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
				copyFilesTo(t, c.dir, files...)
				if err := os.RemoveAll(work); err != nil {
					t.Fatal(err)
				}
				remountTmpfs(t, c.dir, used+free)
				return Run(context.Background(), Options{Collections: []string{c.dir}, WorkDir: filepath.Join(work, "w"), Jobs: tc.jobs})
			}
			const page = 4096
			lo, hi := int64(0), 4*c.size/page
			for lo < hi {
				mid := (lo + hi) / 2
				if _, err := runWith(mid * page); errors.Is(err, stage.ErrNoSpace) {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			if lo == 0 {
				t.Fatal("the check accepts a run with no free space: the test proves nothing")
			}
			r, err := runWith(lo * page)
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run with the %d bytes free its check accepts: %v %v", lo*page, err, r.Report.ExitReason)
			}
			if r.Report.Totals.RevisitsWritten == 0 {
				t.Fatal("the run wrote no revisit")
			}
			checkPackages(t, c.dir)
		})
	}
}

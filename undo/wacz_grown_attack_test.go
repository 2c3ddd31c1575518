package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoWACZSequences runs and undoes a collection of packages in the
// orders an operator may: two runs on a collection that grew between
// them (the second crawl's packages added, deduplicated against the
// first's), undone at once or the second crawl's packages first; an
// undo run twice; an undo, a run again and an undo. Each undo must exit
// 0, and at the end every package must be the file it was before the
// first run, bit for bit, with no stale requires entry on the way, no
// staged file left beside the packages and no metadata kept for undo.
func TestUndoWACZSequences(t *testing.T) {
	type step struct {
		undo  bool     // else run
		paths []string // package names, nil for the directory
		add   bool     // a run: the second crawl's packages added first
	}
	second := []string{"crawl-1-0.wacz", "crawl-1-1.wacz"}
	first := []string{"crawl-0-0.wacz", "crawl-0-1.wacz"}
	cases := []struct {
		name  string
		grown bool // the second crawl's packages aside until a step adds them
		steps []step
	}{
		{"grown, undone at once", true, []step{{}, {add: true}, {undo: true}}},
		{"grown, the second crawl undone first", true, []step{{}, {add: true}, {undo: true, paths: second}, {undo: true}}},
		{"grown, the first crawl undone first", true, []step{{}, {add: true}, {undo: true, paths: first}, {undo: true}}},
		{"undone twice", false, []step{{}, {undo: true}, {undo: true}}},
		{"undone, run again, undone", false, []step{{}, {undo: true}, {}, {undo: true}}},
		{"partly undone, run again, undone", false, []step{{}, {undo: true, paths: first}, {}, {undo: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			before := jobtest.HashTree(t, dir)
			aside := t.TempDir()
			move := func(from, to string) {
				for _, n := range second {
					if err := os.Rename(filepath.Join(from, n), filepath.Join(to, n)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.grown {
				move(dir, aside)
			}
			wd := filepath.Join(t.TempDir(), "work")
			for i, s := range tc.steps {
				if s.add {
					move(aside, dir)
				}
				if !s.undo {
					r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
					if err != nil || r.Report.Exit != 0 {
						t.Fatalf("step %d, run: %v %v", i+1, err, r.Report.ExitReason)
					}
				} else {
					paths := []string{dir}
					if s.paths != nil {
						paths = nil
						for _, n := range s.paths {
							paths = append(paths, filepath.Join(dir, n))
						}
					}
					u, err := Run(context.Background(), Options{Paths: paths, WorkDir: wd, Jobs: 2})
					if err != nil || u.Exit != 0 {
						t.Fatalf("step %d, undo %v: %v %v", i+1, s.paths, err, u.ExitReason)
					}
					if u.BytesDiffer > 0 {
						t.Fatalf("step %d: %d files restored with other bytes: the test needs every package back bit for bit", i+1, u.BytesDiffer)
					}
				}
				if st := jobtest.StaleRequires(t, dir); len(st) > 0 {
					t.Errorf("after step %d, stale entries: %v", i+1, st)
				}
				if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
					t.Errorf("after step %d, left beside the packages: %v", i+1, left)
				}
			}
			jobtest.SameTree(t, "at the end", jobtest.HashTree(t, dir), before)
			if kept, _ := filepath.Glob(filepath.Join(wd, "wacz-metadata", "*")); len(kept) > 0 {
				t.Errorf("metadata kept for undo left after every package came back: %v", kept)
			}
			jobtest.CheckPackages(t, dir)
		})
	}
}

package undo

import (
	"context"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoNamedWACZOutsideRequirerOfRequirer: a job on packages named,
// one of them (other-0) with no duplicate of its own requiring another
// of them (crawl-1-1) by hash; the run writes other-0 anew for its
// entry. A later job makes a package of the directory outside the job
// (other-1) require other-0 by its hash as the run left it. The undo of
// the job gives crawl-1-1 back, and so writes other-0 anew (its entry,
// or its metadata before the run): it must bring other-1's entry up to
// date too, or name it, rather than exit 0 with it stale. The rewrite
// log never names other-0 (none of its members changed).
func TestUndoNamedWACZOutsideRequirerOfRequirer(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	other := filepath.Join(dir, "other-0.wacz")
	uniquePackage(t, other)
	jobtest.RequireBy(t, other, filepath.Join(dir, "crawl-1-1.wacz"))
	jobtest.Backdate(t, other)
	var named []string
	for _, n := range []string{"crawl-0-0.wacz", "crawl-0-1.wacz", "crawl-1-0.wacz", "crawl-1-1.wacz", "other-0.wacz"} {
		named = append(named, filepath.Join(dir, n))
	}
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: named, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run %v: %v %v", named, err, r.Report.ExitReason)
	}
	outside := filepath.Join(dir, "other-1.wacz")
	uniquePackage(t, outside)
	jobtest.RequireBy(t, outside, other)
	rewritten := jobtest.HashTree(t, dir)
	u, err := Run(context.Background(), Options{Paths: named, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	if jobtest.HashTree(t, dir)["other-0.wacz"] == rewritten["other-0.wacz"] {
		t.Fatal("the undo did not write other-0.wacz anew: the test proves nothing")
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 && u.Exit == 0 {
		t.Errorf("the undo exited 0 with stale entries: %v", s)
	}
}

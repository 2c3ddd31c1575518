package undo

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// membersOf is the listing of the WARC members of one package of dir.
func membersOf(t *testing.T, dir, pkg string) []string {
	t.Helper()
	return jobtest.PackageLines(waczListing(t, dir), pkg)
}

// TestWACZRequirersKeptCurrent proves that no package is left naming a
// stale hash of a package it requires when a later job rewrites only the
// required package: an undo of that package alone, then a run on the
// whole directory that deduplicates it again. Each time the requirer's
// entry gets the required package's new SHA-256 and size, its WARC
// members untouched, and every package passes its check.
func TestWACZRequirersKeptCurrent(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	requirer, required := jobtest.RequiredByHash(t, dir)
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Fatalf("after the first run, stale entries: %v", s)
	}
	members := membersOf(t, dir, requirer)
	hashes := jobtest.HashTree(t, dir)

	u, err := Run(context.Background(), Options{Paths: []string{filepath.Join(dir, required)}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
		t.Fatalf("undo %s: %v %+v", required, err, u)
	}
	if jobtest.HashTree(t, dir)[required] == hashes[required] {
		t.Fatalf("the undo of %s did not change it: the test proves nothing", required)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo of %s alone, stale entries: %v", required, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the undo of %s changed the records of %s", required, requirer)
	}
	jobtest.CheckPackages(t, dir)

	hashes = jobtest.HashTree(t, dir)
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run again: %v %v", err, r.Report.ExitReason)
	}
	if jobtest.HashTree(t, dir)[required] == hashes[required] {
		t.Fatalf("the run again did not rewrite %s: the test proves nothing", required)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the run that rewrote %s again, stale entries: %v", required, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the run again changed the records of %s", requirer)
	}
	jobtest.CheckPackages(t, dir)
}

// TestUndoNamedWACZUpdatesOutsideRequirers proves that the undo of a job
// on packages named brings up to date the requires entries of a package
// of their directory outside that job which requires one it gives back
// (an entry a later job wrote, with the hash the first job left): the
// requirer gets the package's hash as undone, its records untouched.
// Without it the requirer is left naming the deduplicated package's hash.
func TestUndoNamedWACZUpdatesOutsideRequirers(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	required, requirer := "crawl-0-0.wacz", "crawl-1-1.wacz"
	named := []string{filepath.Join(dir, required), filepath.Join(dir, "crawl-1-0.wacz")}
	wd := filepath.Join(t.TempDir(), "work")
	before := jobtest.HashTree(t, dir)
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: named, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run %v: %v %v", named, err, r.Report.ExitReason)
	}
	if jobtest.HashTree(t, dir)[required] == before[required] {
		t.Fatalf("%s was not rewritten: the test proves nothing", required)
	}
	// A later job made the package outside the first one require it,
	// by its hash as deduplicated.
	jobtest.RequireBy(t, filepath.Join(dir, requirer), filepath.Join(dir, required))
	members := membersOf(t, dir, requirer)
	rewritten := jobtest.HashTree(t, dir)

	u, err := Run(context.Background(), Options{Paths: named, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
		t.Fatalf("undo: %v %+v", err, u)
	}
	if jobtest.HashTree(t, dir)[required] == rewritten[required] {
		t.Fatalf("the undo did not change %s: the test proves nothing", required)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo of the job on %v, stale entries: %v", named, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the undo changed the records of %s", requirer)
	}
	jobtest.CheckPackages(t, dir)
}

package undo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoWACZ undoes a run on packages and WARC files, one package
// first, then the rest, and proves that every record is back where it
// was (the listing of the members and files equals the one before the
// run), that every package passes its check, and that packages and
// files whose every gzip member was rebuilt bit for bit are the files
// they were before the run, datapackage.json, digest file and ZIP times
// included.
func TestUndoWACZ(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, true)
	beforeFiles := jobtest.HashTree(t, dir)
	beforeListing := waczListing(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	written := r.Report.Totals.RevisitsWritten
	deduplicated := jobtest.HashTree(t, dir)
	members := membersOf(t, dir, "crawl-1-0.wacz")
	one := filepath.Join(dir, "crawl-0-1.wacz")
	if deduplicated["crawl-0-1.wacz"] == beforeFiles["crawl-0-1.wacz"] {
		t.Fatal("crawl-0-1.wacz was not rewritten: the test proves nothing")
	}
	u1, err := Run(context.Background(), Options{Paths: []string{one}, WorkDir: wd, Jobs: 2})
	if err != nil || u1.Exit != 0 || u1.Stats.Restored == 0 {
		t.Fatalf("undo %s: %v, %+v", one, err, u1)
	}
	// Another package keeps its records; where it requires the package
	// given back, its entry gets the package's hash now
	// (TestWACZRequirersKeptCurrent).
	if got := membersOf(t, dir, "crawl-1-0.wacz"); !slices.Equal(got, members) {
		t.Errorf("the undo of %s changed the records of crawl-1-0.wacz", one)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo of %s, stale entries: %v", one, s)
	}
	u2, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u2.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u2)
	}
	if got := u1.Stats.Records + u2.Stats.Records; got != written {
		t.Errorf("restored %d records; the run wrote %d revisits", got, written)
	}
	if u1.Checked == 0 || u2.Checked == 0 {
		t.Errorf("undo checked %d and %d files", u1.Checked, u2.Checked)
	}
	jobtest.CheckPackages(t, dir)
	if got := waczListing(t, dir); string(got) != string(beforeListing) {
		t.Errorf("the records after undo are not those before the run")
	}
	if u1.BytesDiffer+u2.BytesDiffer == 0 {
		jobtest.SameTree(t, "after undo", jobtest.HashTree(t, dir), beforeFiles)
	} else {
		t.Logf("%d files restored with records equal and other bytes", u1.BytesDiffer+u2.BytesDiffer)
	}
	// Deduplicated again: the same packages as the first time but for
	// "modified" and the ZIP times; the same revisits written.
	again, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Report.Exit != 0 || again.Report.Totals.RevisitsWritten != written {
		t.Errorf("a run after undo: %v, %d revisits written, the first run %d", err, again.Report.Totals.RevisitsWritten, written)
	}
	jobtest.CheckPackages(t, dir)
}

// TestUndoIndexWACZFinishesStoppedRebuild puts a package of a crawl run
// with an index in the state a stop between logging its rewritten
// members and renaming its new version over it leaves (the package as
// before, the members' logged versions staged beside it), and proves
// that the next undo of the crawl (the log names the members
// CRAWL/PATH.wacz#archive/NAME) first finishes the package from the
// staged versions the log names, then restores every record: the
// packages are back as they were before the crawl's run.
func TestUndoIndexWACZFinishesStoppedRebuild(t *testing.T) {
	dir, byDir, ops := jobtest.WACZCrawls(t, "directories")
	index := filepath.Join(t.TempDir(), "index")
	for i, crawl := range []string{"crawl-0", "crawl-1"} {
		if i == 1 {
			break
		}
		if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[i]}, Crawl: crawl, Index: index, Jobs: 2}); err != nil || r.Report.Exit != 0 {
			t.Fatalf("%s: %v", crawl, err)
		}
	}
	before := jobtest.HashTree(t, dir)
	pkg := filepath.Join(byDir["crawl-1-1.wacz"], "crawl-1-1.wacz")
	original, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[1]}, Crawl: "crawl-1", Index: index, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1: %v", err)
	}
	if _, err := dedup.RemoveCrawl(context.Background(), dedup.RemoveOptions{Index: index, Crawl: "crawl-1", Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	staged := jobtest.StopRebuild(t, pkg, original)
	if staged == 0 {
		t.Fatal("crawl-1-1.wacz has no rewritten member: the test proves nothing")
	}
	u, err := Run(context.Background(), Options{Paths: []string{ops[1]}, WorkDir: filepath.Join(index, "work", "crawl-1"), Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Records != r.Report.Totals.RevisitsWritten {
		t.Fatalf("undo: %v, %+v (the run wrote %d revisits)", err, u, r.Report.Totals.RevisitsWritten)
	}
	jobtest.SameTree(t, "after undo", jobtest.HashTree(t, dir), before)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(pkg), ".*")); len(left) > 0 {
		t.Errorf("left beside the packages: %v", left)
	}
}

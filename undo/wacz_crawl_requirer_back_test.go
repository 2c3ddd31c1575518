package undo

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// crawlRequirerCase is a crawl of WACZ packages (crawl-1, its own
// directory) run with a crawl index, holding a package with no
// duplicate of its own (other-0.wacz) that requires the crawl's other
// packages by hash: the crawl's run writes it anew for its requires
// entries alone, keeping its metadata in the crawl's work directory.
type crawlRequirerCase struct {
	dir, index, wd, op string
	byDir              map[string]string
	requirer           string
	before             map[string]string // the tree before crawl-1's run
}

// setUpCrawlRequirer runs crawl-1 (signed: its requirer signed, the run
// with Unsign) with an index that holds crawl-0 (committed before
// crawl-1's run) unless importAfter, and takes crawl-1 out of the index.
// With importAfter crawl-0 is imported after crawl-1's removal, its
// crawl-0-1.wacz made first to require the requirer by the hash the run
// gave it (as a job on its directory writes the entry).
func setUpCrawlRequirer(t *testing.T, signed, importAfter bool) *crawlRequirerCase {
	t.Helper()
	return setUpCrawlRequirerOf(t, signed, importAfter, false)
}

// setUpCrawlRequirerOf is setUpCrawlRequirer with the requirer made to
// require crawl-0's crawl-0-0.wacz by hash too (committed, in its own
// directory) if requireCommitted.
func setUpCrawlRequirerOf(t *testing.T, signed, importAfter, requireCommitted bool) *crawlRequirerCase {
	t.Helper()
	dir, byDir, ops := jobtest.WACZCrawls(t, "directories")
	c := &crawlRequirerCase{dir: dir, index: filepath.Join(t.TempDir(), "index"), op: ops[1], byDir: byDir}
	c.wd = filepath.Join(c.index, "work", "crawl-1")
	if !importAfter {
		if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[0]}, Crawl: "crawl-0", Index: c.index, Jobs: 2}); err != nil || r.Report.Exit != 0 {
			t.Fatalf("crawl-0: %v %v", err, r)
		}
	}
	c.requirer = filepath.Join(ops[1], "other-0.wacz")
	uniquePackage(t, c.requirer)
	required := []string{"crawl-1-0.wacz", "crawl-1-1.wacz"}
	if requireCommitted {
		required = append(required, "crawl-0-0.wacz")
	}
	for _, p := range required {
		jobtest.RequireBy(t, c.requirer, filepath.Join(byDir[p], p))
	}
	jobtest.Backdate(t, c.requirer)
	if signed {
		signDigest(t, c.requirer)
	}
	c.before = jobtest.HashTree(t, dir)
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[1]}, Crawl: "crawl-1", Index: c.index, Jobs: 2, Unsign: signed})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1: %v %v", err, r.Report.ExitReason)
	}
	after := jobtest.HashTree(t, dir)
	rel := filepath.Join("crawl-1", "other-0.wacz")
	if after[rel] == c.before[rel] {
		t.Fatal("crawl-1's run did not write the requirer anew: the test proves nothing")
	}
	if left, _ := filepath.Glob(filepath.Join(c.wd, "wacz-metadata", "*")); len(left) == 0 {
		t.Fatal("crawl-1's run kept no metadata: the test proves nothing")
	}
	if _, err := dedup.RemoveCrawl(context.Background(), dedup.RemoveOptions{Index: c.index, Crawl: "crawl-1", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-1: %v", err)
	}
	if importAfter {
		outside := filepath.Join(byDir["crawl-0-1.wacz"], "crawl-0-1.wacz")
		jobtest.RequireBy(t, outside, c.requirer)
		var crawl0 []string
		for _, p := range []string{"crawl-0-0.wacz", "crawl-0-1.wacz"} {
			crawl0 = append(crawl0, filepath.Join(byDir[p], p))
		}
		if _, err := dedup.ImportCrawl(context.Background(), dedup.ImportOptions{Index: c.index, Crawl: "crawl-0", CDX: crawl0}); err != nil {
			t.Fatalf("index import crawl-0: %v", err)
		}
		if !slices.Contains(jobtest.RequiresOf(t, outside), "other-0.wacz") {
			t.Fatal("crawl-0-1.wacz does not require the requirer: the test proves nothing")
		}
	}
	return c
}

// TestUndoIndexWACZGivesRefreshedRequirerBack is
// TestUndoWACZGivesRefreshedRequirerBack for a crawl run with a crawl
// index: crawl-1's run writes its requirer-only package anew (removing
// its signature, with Unsign), crawl-1 is taken out of the index and
// undone. Once every package it requires is back bit for bit, the
// requirer, whose members never changed, must be the file it was before
// the crawl's run too (its datapackage.json, digest file and signature),
// and its kept metadata must not outlive the undo. Where a committed
// crawl's package requires the requirer by the hash the run gave it,
// that entry must name the requirer as it is after the undo, and the
// index must record that package as it is. Before, the undo of a crawl
// never gave such a package its metadata back: it kept the run's
// modified, entries and removedSignatures, and a signed package stayed
// unsigned.
func TestUndoIndexWACZGivesRefreshedRequirerBack(t *testing.T) {
	for _, tc := range []struct {
		name                                  string
		signed, importAfter, requireCommitted bool
	}{
		{"requirer unsigned", false, false, false},
		{"requirer signed, run with unsign", true, false, false},
		{"requirer required by a committed crawl's package", false, true, false},
		{"requirer requiring a committed crawl's package too", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setUpCrawlRequirerOf(t, tc.signed, tc.importAfter, tc.requireCommitted)
			u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo crawl-1: %v, %v %v", err, u.ExitReason, u.StaleRequirers)
			}
			c.check(t, u, tc.signed, tc.importAfter)
		})
	}
}

// check checks what the undo of crawl-1 (u) left: crawl-1's packages the
// files they were before its run, the requirer signed again if it was,
// no metadata kept, no stale entry, the index recording crawl-0's
// packages as they are (one of which, with importAfter, requires the
// requirer), every package passing its check.
func (c *crawlRequirerCase) check(t *testing.T, u *Result, signed, importAfter bool) {
	t.Helper()
	if u.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
	}
	dirs := []string{c.byDir["crawl-0-0.wacz"], c.byDir["crawl-1-0.wacz"]}
	if s := jobtest.StaleRequires(t, dirs...); len(s) > 0 {
		t.Errorf("after the undo, stale entries: %v", s)
	}
	now := jobtest.HashTree(t, c.dir)
	for name, sum := range c.before {
		if strings.HasPrefix(name, "crawl-1"+string(filepath.Separator)) && now[name] != sum {
			t.Errorf("%s: not the file it was before crawl-1's run", name)
		}
	}
	p, err := wacz.Open(c.requirer)
	if err != nil {
		t.Fatal(err)
	}
	if signed && (!p.Signed() || strings.Contains(string(p.DatapackageRaw), wacz.RemovedSignaturesKey)) {
		t.Errorf("after the undo the requirer is not signed as before the run (signed %v):\n%s", p.Signed(), p.DatapackageRaw)
	}
	p.Close()
	if left, _ := filepath.Glob(filepath.Join(c.wd, "wacz-metadata", "*")); len(left) > 0 {
		t.Errorf("metadata kept for undo left after the undo gave every package back: %v", left)
	}
	if importAfter {
		if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) > 0 {
			t.Errorf("after the undo, the index disagrees on %v", d)
		}
		if len(u.StaleRequirers) > 0 {
			t.Errorf("after the undo, stale requirers: %v", u.StaleRequirers)
		}
	}
	for _, d := range dirs {
		jobtest.CheckPackages(t, d)
	}
}

// TestUndoIndexWACZStoppedAfterRequirerGivenBack stops the undo of
// TestUndoIndexWACZGivesRefreshedRequirerBack's crawl whose requirer a
// committed crawl's package requires by hash right after the requirer
// got its metadata back, before the packages outside the crawl were
// brought up to date: the rewrite log names no member of the requirer,
// so only its metadata, still kept, tells the next undo that the
// committed package's entry naming it is to be brought up to date. That
// undo must finish: exit 0, nothing stale, the index recording the
// committed package as it is, the metadata gone.
func TestUndoIndexWACZStoppedAfterRequirerGivenBack(t *testing.T) {
	c := setUpCrawlRequirer(t, false, true)
	stop := errors.New("stopped before the packages outside the crawl")
	_, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2, outsideStop: func() error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("undo crawl-1, stopped: %v", err)
	}
	if rel := filepath.Join("crawl-1", "other-0.wacz"); jobtest.HashTree(t, c.dir)[rel] != c.before[rel] {
		t.Fatal("the stopped undo did not give the requirer its metadata back: the test proves nothing")
	}
	if s := jobtest.StaleRequires(t, c.byDir["crawl-0-0.wacz"], c.byDir["crawl-1-0.wacz"]); len(s) == 0 {
		t.Fatal("the stopped undo left no stale entry: the test proves nothing")
	}
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo crawl-1 again: %v, %v %v", err, u.ExitReason, u.StaleRequirers)
	}
	c.check(t, u, false, true)
}

// TestUndoIndexWACZGivesCommittedRequirerItsMetadataBack: crawl-0's
// crawl-0-1.wacz requires both packages of crawl-1 by hash (as
// Browsertrix writes the entries) when crawl-0 is run and committed;
// crawl-1's run rewrites them, so it writes that committed package anew
// for its entries alone (its WARC members where they were, the index
// recording it again), keeping its metadata in crawl-1's work
// directory. Crawl-1 taken out of the index and undone, every package
// must be the file it was after crawl-0's run, before crawl-1's: the
// committed package too (its datapackage.json as crawl-0's run left it,
// not before crawl-0's run), the index recording it as it is, no entry
// stale, no metadata left. Before, the undo only brought its entries up
// to date: it kept the modified of the undo.
func TestUndoIndexWACZGivesCommittedRequirerItsMetadataBack(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		t.Run(map[bool]string{false: "one undo", true: "stopped before the index recorded it, undone again"}[stopped], func(t *testing.T) {
			dir, byDir, ops := jobtest.WACZCrawls(t, "directories")
			index := filepath.Join(t.TempDir(), "index")
			wd := filepath.Join(index, "work", "crawl-1")
			committed := filepath.Join(byDir["crawl-0-1.wacz"], "crawl-0-1.wacz")
			for _, p := range []string{"crawl-1-0.wacz", "crawl-1-1.wacz"} {
				jobtest.RequireBy(t, committed, filepath.Join(byDir[p], p))
			}
			jobtest.Backdate(t, committed)
			if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[0]}, Crawl: "crawl-0", Index: index, Jobs: 2}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("crawl-0: %v %v", err, r)
			}
			before := jobtest.HashTree(t, dir)
			places := jobtest.WARCPlaces(t, committed)

			r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[1]}, Crawl: "crawl-1", Index: index, Jobs: 2})
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("crawl-1: %v %v", err, r.Report.ExitReason)
			}
			rel := filepath.Join("crawl-0", "crawl-0-1.wacz")
			if jobtest.HashTree(t, dir)[rel] == before[rel] {
				t.Fatal("crawl-1's run did not write crawl-0's requirer anew: the test proves nothing")
			}
			if _, err := dedup.RemoveCrawl(context.Background(), dedup.RemoveOptions{Index: index, Crawl: "crawl-1", Jobs: 2}); err != nil {
				t.Fatalf("index remove crawl-1: %v", err)
			}
			opt := Options{Paths: []string{ops[1]}, WorkDir: wd, Jobs: 2}
			if stopped {
				stop := errors.New("stopped before the index records the packages written anew")
				opt.refileStop = func() error { return stop }
				if _, err := Run(context.Background(), opt); !errors.Is(err, stop) {
					t.Fatalf("undo crawl-1, stopped: %v", err)
				}
				opt.refileStop = nil
			}
			u, err := Run(context.Background(), opt)
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo crawl-1: %v, %v %v", err, u.ExitReason, u.StaleRequirers)
			}
			if u.BytesDiffer > 0 {
				t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
			}

			jobtest.SameTree(t, "after crawl-1's run and undo", jobtest.HashTree(t, dir), before)
			if s := jobtest.StaleRequires(t, ops[0], ops[1]); len(s) > 0 {
				t.Errorf("after the undo, stale entries: %v", s)
			}
			if d := jobtest.IndexDisagrees(t, index, "crawl-0"); len(d) > 0 {
				t.Errorf("after the undo, the index disagrees on %v", d)
			}
			if got := jobtest.WARCPlaces(t, committed); !slices.Equal(got, places) {
				t.Errorf("%s: its WARC members moved or changed: %v, were %v", committed, got, places)
			}
			if left, _ := filepath.Glob(filepath.Join(wd, "wacz-metadata", "*")); len(left) > 0 {
				t.Errorf("metadata kept for undo left after the undo gave every package back: %v", left)
			}
			for _, d := range ops {
				jobtest.CheckPackages(t, d)
			}
		})
	}
}

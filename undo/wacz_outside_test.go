package undo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// outsideCase is the undo of a crawl of WACZ packages run with an index
// (crawl-1, taken out of the index) one of whose packages (required)
// packages outside the crawl's collection require by the SHA-256 and
// size the run gave it: crawl-0's crawl-0-1.wacz (a crawl imported into
// the index after it, as Browsertrix wrote it) and, where the crawls
// share a directory, a package of no crawl (other.wacz, written by an
// earlier job).
type outsideCase struct {
	index, wd, op     string
	json              string // crawl-0's multi-WACZ JSON, if crawl-0 was run from it
	requirers         []string
	required          string
	dirs              []string
	revisits          int64
	placesOfRequirers map[string][]string
}

// setUpOutsideRequirers runs crawl-1 of waczCrawls' form, takes it out
// of the index, makes the packages outside it require the package it
// rewrote, and imports crawl-0.
func setUpOutsideRequirers(t *testing.T, form string) *outsideCase {
	t.Helper()
	return setUpOutsideRequirersThen(t, form, nil)
}

// setUpOutsideRequirersThen is setUpOutsideRequirers calling then (if
// not nil) on crawl-0's requirer before crawl-0 is imported.
func setUpOutsideRequirersThen(t *testing.T, form string, then func(requirer string)) *outsideCase {
	t.Helper()
	return setUpOutsideRequirersOf(t, form, then, false)
}

// setUpOutsideRequirersOf is setUpOutsideRequirersThen with crawl-0,
// if run, committed by a run from its multi-WACZ JSON (form "multi-WACZ
// JSON": the index records the JSON as the crawl's, c.json) rather than
// imported.
func setUpOutsideRequirersOf(t *testing.T, form string, then func(requirer string), run bool) *outsideCase {
	t.Helper()
	dir, byDir, ops := jobtest.WACZCrawls(t, form)
	c := &outsideCase{index: filepath.Join(t.TempDir(), "index"), op: ops[1]}
	c.wd = filepath.Join(c.index, "work", "crawl-1")
	before := jobtest.HashTree(t, dir)
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{ops[1]}, Crawl: map[bool]string{true: "crawl-1"}[form == "directories"], Index: c.index, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1: %v %v", err, r.Report.ExitReason)
	}
	c.revisits = r.Report.Totals.RevisitsWritten
	after := jobtest.HashTree(t, dir)
	for _, p := range []string{"crawl-1-0.wacz", "crawl-1-1.wacz"} {
		rel, _ := filepath.Rel(dir, filepath.Join(byDir[p], p))
		if before[rel] != after[rel] {
			c.required = filepath.Join(byDir[p], p)
			break
		}
	}
	if c.required == "" {
		t.Fatal("crawl-1's run rewrote no package: the test proves nothing")
	}
	if _, err := dedup.RemoveCrawl(context.Background(), dedup.RemoveOptions{Index: c.index, Crawl: "crawl-1", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-1: %v", err)
	}
	requirer := filepath.Join(byDir["crawl-0-1.wacz"], "crawl-0-1.wacz")
	jobtest.RequireBy(t, requirer, c.required)
	c.requirers = append(c.requirers, requirer)
	if then != nil {
		then(requirer)
	}
	if form != "directories" {
		other := filepath.Join(dir, "other.wacz")
		jobtest.CopyFile(t, filepath.Join(dir, "crawl-0-0.wacz"), other)
		jobtest.RequireBy(t, other, c.required)
		c.requirers = append(c.requirers, other)
	}
	var crawl0 []string
	for _, p := range []string{"crawl-0-0.wacz", "crawl-0-1.wacz"} {
		crawl0 = append(crawl0, filepath.Join(byDir[p], p))
	}
	if run {
		// The JSON, written before the entry, brought up to date as an
		// operator would; crawl-0 is its resources' crawlId.
		c.json = ops[0]
		jobtest.UpdateJSONEntry(t, c.json, requirer)
		r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{c.json}, Index: c.index, Jobs: 2})
		if err != nil || r.Report.Exit != 0 {
			t.Fatalf("crawl-0: %v %v", err, r.Report.ExitReason)
		}
		if !slices.Contains(jobtest.RequiresOf(t, requirer), filepath.Base(c.required)) {
			t.Fatalf("%s does not require %s after crawl-0's run: the test proves nothing", requirer, c.required)
		}
		if s := jobtest.StaleInJSON(t, c.json); len(s) > 0 {
			t.Fatalf("after crawl-0's run, %s names stale hashes or sizes for %v", c.json, s)
		}
	} else if _, err := dedup.ImportCrawl(context.Background(), dedup.ImportOptions{Index: c.index, Crawl: "crawl-0", CDX: crawl0}); err != nil {
		t.Fatalf("index import crawl-0: %v", err)
	}
	for d := range map[string]bool{byDir["crawl-0-0.wacz"]: true, byDir["crawl-1-0.wacz"]: true} {
		c.dirs = append(c.dirs, d)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("before the undo, stale entries: %v", s)
	}
	if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) > 0 {
		t.Fatalf("before the undo, the index disagrees on %v", d)
	}
	c.placesOfRequirers = map[string][]string{}
	for _, p := range c.requirers {
		c.placesOfRequirers[p] = jobtest.WARCPlaces(t, p)
	}
	return c
}

// after checks what the undo of the case left: every requirer names the
// required package's hash and size now, its WARC members where they
// were; the index records crawl-0's files as they are; every package
// passes its check.
func (c *outsideCase) after(t *testing.T, required string) {
	t.Helper()
	if jobtest.HashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)] == required {
		t.Fatalf("the undo did not change %s: the test proves nothing", c.required)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Errorf("after the undo, stale entries: %v", s)
	}
	if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) > 0 {
		t.Errorf("after the undo, the index disagrees on %v", d)
	}
	for _, p := range c.requirers {
		if got := jobtest.WARCPlaces(t, p); !slices.Equal(got, c.placesOfRequirers[p]) {
			t.Errorf("%s: its WARC members moved or changed: %v, were %v", p, got, c.placesOfRequirers[p])
		}
	}
	for _, d := range c.dirs {
		jobtest.CheckPackages(t, d)
	}
}

// TestUndoIndexWACZUpdatesOutsideRequirers proves that the undo of a
// crawl of WACZ packages run with a crawl index brings up to date the
// requires entries of packages outside the crawl's collection that
// require a package it gives back: a package of a crawl committed to
// the index (which the index then records as it is) and, where the
// crawls share a directory, a package of no crawl. Without it they are
// left naming the deduplicated package's hash, which breaks replay
// (Browsertrix crawler #1004).
func TestUndoIndexWACZUpdatesOutsideRequirers(t *testing.T) {
	for _, form := range []string{"directories", "multi-WACZ JSON"} {
		t.Run(form, func(t *testing.T) {
			c := setUpOutsideRequirers(t, form)
			required := jobtest.HashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
			u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
			if err != nil || u.Exit != 0 || u.Stats.Records != c.revisits {
				t.Fatalf("undo crawl-1: %v %+v (the run wrote %d revisits)", err, u, c.revisits)
			}
			c.after(t, required)
		})
	}
}

// TestUndoIndexWACZOutsideRequirersAfterStop stops the undo of
// TestUndoIndexWACZUpdatesOutsideRequirers's crawl after it wrote the
// outside requirers anew and before the index recorded them (as a kill
// there leaves them), and proves that the undo run again finishes: it
// records them in the index (their records where they were), leaves no
// entry stale, and exits 0.
func TestUndoIndexWACZOutsideRequirersAfterStop(t *testing.T) {
	c := setUpOutsideRequirers(t, "multi-WACZ JSON")
	required := jobtest.HashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	stop := errors.New("stopped after writing the requirers anew")
	_, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2, refileStop: func() error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("the undo stopped: %v", err)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("the stopped undo did not write the requirers anew (stale: %v): the test proves nothing", s)
	}
	if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) == 0 {
		t.Fatal("the index records the requirers as they are after the stop: the test proves nothing")
	}
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 || len(u.StaleRequirers) > 0 {
		t.Fatalf("the undo run again: %v %+v", err, u)
	}
	c.after(t, required)
}

// TestUndoIndexWACZUnreadableOutsidePackageNamed damages a package of a
// committed crawl (crawl-0-0.wacz: its ZIP's end cut off) before the
// undo of TestUndoIndexWACZUpdatesOutsideRequirers's crawl, and proves
// that the undo names it and exits 1: it cannot tell whether that
// package requires one it gave back, so an exit 0 would promise every
// requirer up to date while one may be left stale.
func TestUndoIndexWACZUnreadableOutsidePackageNamed(t *testing.T) {
	c := setUpOutsideRequirers(t, "directories")
	damaged := filepath.Join(filepath.Dir(c.requirers[0]), "crawl-0-0.wacz")
	fi, err := os.Stat(damaged)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(damaged, fi.Size()-30); err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Open(damaged); err == nil {
		t.Fatalf("%s still reads: the test proves nothing", damaged)
	}
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo crawl-1: %v", err)
	}
	named := slices.ContainsFunc(u.StaleRequirers, func(s string) bool { return strings.Contains(s, damaged) })
	if u.Exit == 0 || !named {
		t.Fatalf("undo crawl-1 with %s unreadable: exit %d, stale requirers %v; want exit 1 naming it", damaged, u.Exit, u.StaleRequirers)
	}
	// The readable requirer was still brought up to date.
	if err := os.WriteFile(damaged, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); slices.Contains(s, "crawl-0-1.wacz -> "+filepath.Base(c.required)) {
		t.Errorf("stale entries: %v", s)
	}
}

// TestUndoIndexWACZOutsideRequirerWithDescriptorsKeepsRecords gives
// crawl-0's requirer data descriptors (as every package Browsertrix
// streams has) and proves that the undo brings its requires entry up to
// date without moving its WARC members: the index has crawl-0's
// originals at their offsets in the package file, and a rewrite that
// dropped the descriptors would move every member after the first by
// their length (the rebuild keeps them, wacz/zipwrite.go). The index
// records it as it is; exit 0.
func TestUndoIndexWACZOutsideRequirerWithDescriptorsKeepsRecords(t *testing.T) {
	c := setUpOutsideRequirersThen(t, "directories", func(requirer string) { jobtest.WithDescriptors(t, requirer) })
	requirer := c.requirers[0]
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 || len(u.StaleRequirers) > 0 {
		t.Fatalf("undo crawl-1: %v exit %d, stale requirers %v", err, u.Exit, u.StaleRequirers)
	}
	if got := jobtest.WARCPlaces(t, requirer); !slices.Equal(got, c.placesOfRequirers[requirer]) {
		t.Errorf("%s: its WARC members moved: %v, were %v (the index has its records at the old offsets)", requirer, got, c.placesOfRequirers[requirer])
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Errorf("after the undo, stale entries: %v", s)
	}
	if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) > 0 {
		t.Errorf("after the undo, the index disagrees on %v", d)
	}
	jobtest.CheckPackages(t, filepath.Dir(requirer))
}

// TestUndoIndexWACZOutsideRequirerKeepsOwner gives crawl-0's requirer
// another owner, group and mode (a crawler's user's files, an undo run
// by an operator) and proves that the undo's writing it anew keeps
// them, as every replacement of a file in place does: the crawl's user
// must still own (and may delete or move) its files.
func TestUndoIndexWACZOutsideRequirerKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file another owner needs root")
	}
	c := setUpOutsideRequirersThen(t, "directories", func(requirer string) {
		if err := os.Chown(requirer, 12345, 23456); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(requirer, 0o640); err != nil {
			t.Fatal(err)
		}
	})
	requirer := c.requirers[0]
	before, _ := os.Stat(requirer)
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo crawl-1: %v %+v", err, u)
	}
	after, err := os.Stat(requirer)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatalf("%s was not written anew: the test proves nothing", requirer)
	}
	st := after.Sys().(*syscall.Stat_t)
	if st.Uid != 12345 || st.Gid != 23456 || after.Mode().Perm() != 0o640 {
		t.Errorf("%s: owner %d, group %d, mode %v after the undo; was 12345, 23456, 0640", requirer, st.Uid, st.Gid, after.Mode().Perm())
	}
}

// TestUndoIndexWACZUpdatesCommittedCrawlsJSON is
// TestUndoIndexWACZUpdatesOutsideRequirers with crawl-0 committed by a
// run from its multi-WACZ JSON (which the index records as the crawl's):
// it proves that the undo, which writes crawl-0's requirer anew, brings
// its hash and size in crawl-0's JSON up to date too, as a run does, in
// one undo and in an undo stopped before the JSON was written or after
// it and before the index recorded the requirer, then run again.
// Without it the JSON names the requirer's former hash and size, and
// Browsertrix's indexer, or a ReplayWeb.page collection loaded from it,
// finds a package that is not what the JSON says.
func TestUndoIndexWACZUpdatesCommittedCrawlsJSON(t *testing.T) {
	stop := errors.New("stopped")
	for _, tc := range []struct {
		name            string
		opt             Options
		jsonBeforeRerun bool // crawl-0's JSON up to date after the stop
	}{
		{name: "one undo"},
		{name: "stopped before the JSON, run again", opt: Options{refileStop: func() error { return stop }}},
		{name: "stopped after the JSON, before the index, run again", opt: Options{sourcesStop: func() error { return stop }}, jsonBeforeRerun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setUpOutsideRequirersOf(t, "multi-WACZ JSON", nil, true)
			required := jobtest.HashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
			requirer := filepath.Base(c.requirers[0])
			opt := tc.opt
			opt.Paths, opt.WorkDir, opt.Jobs = []string{c.op}, c.wd, 2
			if opt.refileStop != nil || opt.sourcesStop != nil {
				if _, err := Run(context.Background(), opt); !errors.Is(err, stop) {
					t.Fatalf("the undo stopped: %v", err)
				}
				if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) == 0 {
					t.Fatal("the index records the requirers as they are after the stop: the test proves nothing")
				}
				if s := jobtest.StaleInJSON(t, c.json); slices.Contains(s, requirer) == tc.jsonBeforeRerun {
					t.Fatalf("after the stop, %s names stale hashes or sizes for %v: not where the test means to stop", c.json, s)
				}
				opt.refileStop, opt.sourcesStop = nil, nil
			}
			u, err := Run(context.Background(), opt)
			if err != nil || u.Exit != 0 || len(u.StaleRequirers) > 0 {
				t.Fatalf("undo crawl-1: %v %+v", err, u)
			}
			c.after(t, required)
			if s := jobtest.StaleInJSON(t, c.json); len(s) > 0 {
				t.Errorf("after the undo, %s names stale hashes or sizes for %v", c.json, s)
			}
		})
	}
}

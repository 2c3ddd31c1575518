package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// committedRequirerCase is crawl-1 of waczCrawls' directories, run with
// an index, taken out of it and undone, while crawl-0's package
// crawl-0-1.wacz, committed by its own run, requires one of crawl-1's
// packages (required) by its SHA-256 and size: as an earlier job, or
// Browsertrix, wrote the entry.
type committedRequirerCase struct {
	index, wd, op, required, requirer string
	json                              string // crawl-0's multi-WACZ JSON, if it was run from one
	crawl                             string // crawl-1's --crawl
	dirs                              []string
}

// setUpCommittedRequirer runs crawl-1, removes it from the index, makes
// crawl-0-1.wacz require the package of crawl-1 the run rewrote, runs
// crawl-0 (committed), and undoes crawl-1 (whose undo brings crawl-0's
// entry up to date).
func setUpCommittedRequirer(t *testing.T) *committedRequirerCase {
	t.Helper()
	return setUpCommittedRequirerOf(t, nil, "directories")
}

// setUpCommittedRequirerThen is setUpCommittedRequirer calling then (if
// not nil) on crawl-0's requirer before crawl-0's run.
func setUpCommittedRequirerThen(t *testing.T, then func(requirer string)) *committedRequirerCase {
	t.Helper()
	return setUpCommittedRequirerOf(t, then, "directories")
}

// setUpCommittedRequirerOf is setUpCommittedRequirerThen with the
// crawls laid out as layout says: "directories" (a directory each, run
// as such), "JSON beside" (crawl-0 run from a multi-WACZ JSON in its
// directory, c.json), "one directory" (both crawls' packages in one
// directory, each crawl run from its JSON, as Browsertrix exports them).
func setUpCommittedRequirerOf(t *testing.T, then func(requirer string), layout string) *committedRequirerCase {
	t.Helper()
	form, crawl1 := "directories", "crawl-1"
	if layout == "one directory" {
		form, crawl1 = "multi-WACZ JSON", "" // the crawl its resources' crawlId
	}
	dir, byDir, ops := waczCrawls(t, form)
	c := &committedRequirerCase{index: filepath.Join(t.TempDir(), "index"), op: ops[1], crawl: crawl1}
	c.wd = filepath.Join(c.index, "work", "crawl-1")
	before := hashTree(t, dir)
	r, err := Run(context.Background(), Options{Collections: []string{ops[1]}, Crawl: crawl1, Index: c.index, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1: %v %v", err, r.Report.ExitReason)
	}
	after := hashTree(t, dir)
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
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: c.index, Crawl: "crawl-1", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-1: %v", err)
	}
	c.requirer = filepath.Join(byDir["crawl-0-1.wacz"], "crawl-0-1.wacz")
	jobtest.RequireBy(t, c.requirer, c.required)
	if then != nil {
		then(c.requirer)
	}
	op0, crawl0 := ops[0], "crawl-0"
	switch layout {
	case "JSON beside":
		c.json = writeCrawlJSON(t, byDir, "crawl-0", "crawl-0-0.wacz", "crawl-0-1.wacz")
		op0, crawl0 = c.json, ""
	case "one directory":
		c.json, crawl0 = ops[0], ""
		// The JSON written before crawl-1's run and requireAcross:
		// brought up to date as an operator would.
		jobtest.UpdateJSONEntry(t, c.json, c.requirer)
	}
	r, err = Run(context.Background(), Options{Collections: []string{op0}, Crawl: crawl0, Index: c.index, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-0: %v %v", err, r.Report.ExitReason)
	}
	c.dirs = []string{byDir["crawl-0-0.wacz"]}
	if d := byDir["crawl-1-0.wacz"]; d != c.dirs[0] {
		c.dirs = append(c.dirs, d)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("after crawl-0's run, stale entries: %v", s)
	}
	if !slices.ContainsFunc(jobtest.RequiresOf(t, c.requirer), func(name string) bool { return name == filepath.Base(c.required) }) {
		t.Fatalf("%s does not require %s after crawl-0's run: the test proves nothing", c.requirer, c.required)
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo crawl-1: %v %+v", err, u)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("after the undo, stale entries: %v", s)
	}
	return c
}

// TestRunIndexWACZRefreshesCommittedRequirers runs crawl-1 again with
// the index after its undo (setUpCommittedRequirer: crawl-0, committed,
// has a package that requires one of crawl-1's by the SHA-256 and size
// the undo gave it back with), and proves that the run, which rewrites
// that package, brings the committed crawl's requires entry up to date:
// no entry names a stale hash or size, the requirer's WARC members are
// where the index has crawl-0's originals, the index records both
// crawls' files as they are, every package passes its check. Without
// it crawl-0's package is left naming a package that is no longer
// there, which breaks replay (Browsertrix crawler #1004).
func TestRunIndexWACZRefreshesCommittedRequirers(t *testing.T) {
	c := setUpCommittedRequirer(t)
	places := jobtest.WARCPlaces(t, c.requirer)
	required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	r, err := Run(context.Background(), Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1 run again: %v %+v", err, r.Report.ExitReason)
	}
	c.check(t, required, places)
}

// TestRunIndexWACZCommittedRequirersAfterStop stops the run of
// TestRunIndexWACZRefreshesCommittedRequirers as its commit starts
// (after it wrote crawl-0's requirer anew, before the index recorded
// it: as a kill there leaves it), and proves that the run again
// finishes: its commit records the requirer in the index as it is,
// with the crawl, and nothing is left stale.
func TestRunIndexWACZCommittedRequirersAfterStop(t *testing.T) {
	c := setUpCommittedRequirer(t)
	places := jobtest.WARCPlaces(t, c.requirer)
	required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	stop := errors.New("stopped before the commit")
	opt := Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true}
	opt.beforeCommit = func() error { return stop }
	if _, err := Run(context.Background(), opt); !errors.Is(err, stop) {
		t.Fatalf("crawl-1 run again, stopped: %v", err)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("the stopped run did not write the requirer anew (stale: %v): the test proves nothing", s)
	}
	if d := jobtest.IndexDisagrees(t, c.index, "crawl-0"); len(d) == 0 {
		t.Fatal("the index records the requirer as it is after the stop: the test proves nothing")
	}
	opt.beforeCommit = nil
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1 run once more: %v %+v", err, r.Report.ExitReason)
	}
	c.check(t, required, places)
}

// TestRunIndexWACZRefreshesStreamedCommittedRequirer is
// TestRunIndexWACZRefreshesCommittedRequirers with crawl-0's requirer
// streamed (a data descriptor after every member, as Browsertrix and
// ArchiveWeb.page write packages): it proves that the run brings its
// entry up to date with its WARC members where they were and its
// descriptors kept (exit 0), where before it could only be refused.
func TestRunIndexWACZRefreshesStreamedCommittedRequirer(t *testing.T) {
	c := setUpCommittedRequirerThen(t, func(requirer string) { jobtest.WithDescriptors(t, requirer) })
	if n := descriptorsOf(t, c.requirer); n == 0 {
		t.Fatalf("%s has no data descriptors after crawl-0's run: the test proves nothing", c.requirer)
	}
	places := jobtest.WARCPlaces(t, c.requirer)
	required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	r, err := Run(context.Background(), Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1 run again: %v %+v", err, r.Report.ExitReason)
	}
	c.check(t, required, places)
	if n := descriptorsOf(t, c.requirer); n == 0 {
		t.Errorf("%s lost its data descriptors", c.requirer)
	}
}

// descriptorsOf counts the members of the package at path that have a
// data descriptor.
func descriptorsOf(t *testing.T, path string) int {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := 0
	for _, m := range p.Members {
		if m.Flags&0x8 != 0 {
			n++
		}
	}
	return n
}

// check checks what the run of crawl-1 left: the package required
// changed (required: its hash before), no entry stale, the requirer's
// WARC members where they were (places), the index recording both
// crawls' files as they are, every package passing its check.
func (c *committedRequirerCase) check(t *testing.T, required string, places []string) {
	t.Helper()
	if hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)] == required {
		t.Fatalf("the run did not change %s: the test proves nothing", c.required)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Errorf("after the run, stale entries: %v", s)
	}
	if got := jobtest.WARCPlaces(t, c.requirer); !slices.Equal(got, places) {
		t.Errorf("%s: its WARC members moved or changed: %v, were %v", c.requirer, got, places)
	}
	for _, k := range []string{"crawl-0", "crawl-1"} {
		if d := jobtest.IndexDisagrees(t, c.index, k); len(d) > 0 {
			t.Errorf("the index disagrees on crawl %s's %v", k, d)
		}
	}
	for _, d := range c.dirs {
		checkPackages(t, d)
	}
	// Every original of the index (crawl-0's in the requirer written
	// anew too) read at its place, with its digest.
	ix, err := crawlindex.Open(c.index)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	st, err := VerifyOriginals(context.Background(), ix, "", func(p string) { problems = append(problems, p) })
	if err != nil || len(problems) > 0 || st.Originals == 0 {
		t.Errorf("the index's originals at their places: %d read, problems %v, %v", st.Originals, problems, err)
	}
}

// writeCrawlJSON writes a multi-WACZ JSON of the packages (file names,
// in the directories byDir gives) of crawl beside them, as Browsertrix
// exports one, and returns its path.
func writeCrawlJSON(t *testing.T, byDir map[string]string, crawl string, packages ...string) string {
	t.Helper()
	var entries []wacz.CollectionEntry
	for _, p := range packages {
		sum, size, err := packageFixity(filepath.Join(byDir[p], p))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, wacz.CollectionEntry{Name: p, Path: p, Hash: sum, Size: size, CrawlID: crawl})
	}
	name := filepath.Join(byDir[packages[0]], crawl+".json")
	out, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := wacz.WriteCollection(out, entries); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestRunIndexWACZUpdatesCommittedCrawlsJSON is
// TestRunIndexWACZRefreshesCommittedRequirers with crawl-0 run from a
// multi-WACZ JSON: it proves that the run, which writes crawl-0's
// requirer anew, brings the hash and size of it in crawl-0's JSON up to
// date too, and that a run stopped before
// its commit, run again, does. Without it the JSON names the
// requirer's former hash and size, and Browsertrix's indexer, or a
// ReplayWeb.page collection loaded from it, finds a package that is not
// what the JSON says.
func TestRunIndexWACZUpdatesCommittedCrawlsJSON(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		t.Run(map[bool]string{false: "one run", true: "stopped before its commit, run again"}[stopped], func(t *testing.T) {
			c := setUpCommittedRequirerOf(t, nil, "JSON beside")
			places := jobtest.WARCPlaces(t, c.requirer)
			required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
			opt := Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true}
			if stopped {
				stop := errors.New("stopped before the commit")
				opt.beforeCommit = func() error { return stop }
				if _, err := Run(context.Background(), opt); !errors.Is(err, stop) {
					t.Fatalf("crawl-1 run again, stopped: %v", err)
				}
				opt.beforeCommit = nil
			}
			r, err := Run(context.Background(), opt)
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("crawl-1 run again: %v %+v", err, r.Report.ExitReason)
			}
			c.check(t, required, places)
			if s := jobtest.StaleInJSON(t, c.json); len(s) > 0 {
				t.Errorf("after the run, %s names stale hashes or sizes for %v", c.json, s)
			}
		})
	}
}

// TestRunIndexWACZRefreshesCommittedRequirersInOneDirectory is
// TestRunIndexWACZRefreshesCommittedRequirers with both crawls'
// packages in one directory, each crawl run from its multi-WACZ JSON (as
// Browsertrix exports them): it proves that the run does not refuse
// crawl-0's package, another job's package of its directory that
// requires one it rewrites, as it refuses a package of no crawl, but
// brings it up to date as a committed crawl's, its crawl's JSON too.
func TestRunIndexWACZRefreshesCommittedRequirersInOneDirectory(t *testing.T) {
	c := setUpCommittedRequirerOf(t, nil, "one directory")
	places := jobtest.WARCPlaces(t, c.requirer)
	required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	r, err := Run(context.Background(), Options{Collections: []string{c.op}, Crawl: c.crawl, Index: c.index, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("crawl-1 run again: %v %+v", err, r.Report.ExitReason)
	}
	c.check(t, required, places)
	if s := jobtest.StaleInJSON(t, c.json); slices.Contains(s, filepath.Base(c.requirer)) {
		t.Errorf("after the run, %s names a stale hash or size for %s", c.json, filepath.Base(c.requirer))
	}
}

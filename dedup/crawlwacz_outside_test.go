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
	c.runAgain(t, c.rerun())
}

// TestRunIndexWACZCommittedRequirersAfterStop stops the run of
// TestRunIndexWACZRefreshesCommittedRequirers as its commit starts
// (after it wrote crawl-0's requirer anew, before the index recorded
// it: as a kill there leaves it), and proves that the run again
// finishes: its commit records the requirer in the index as it is,
// with the crawl, and nothing is left stale.
func TestRunIndexWACZCommittedRequirersAfterStop(t *testing.T) {
	c := setUpCommittedRequirer(t)
	stop := errors.New("stopped before the commit")
	opt := c.rerun()
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
	c.runAgain(t, opt)
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
	c.runAgain(t, c.rerun())
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
// changed (from c.requiredWas), no entry stale, the requirer's WARC
// members where they were (c.places), the index recording both crawls'
// files as they are, every package passing its check.
func (c *committedRequirerCase) check(t *testing.T) {
	t.Helper()
	if hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)] == c.requiredWas {
		t.Fatalf("the run did not change %s: the test proves nothing", c.required)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Errorf("after the run, stale entries: %v", s)
	}
	if got := jobtest.WARCPlaces(t, c.requirer); !slices.Equal(got, c.places) {
		t.Errorf("%s: its WARC members moved or changed: %v, were %v", c.requirer, got, c.places)
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
	st, err := VerifyOriginals(context.Background(), ix, "", func(p string) { problems = append(problems, p) }, nil)
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
			opt := c.rerun()
			if stopped {
				stop := errors.New("stopped before the commit")
				opt.beforeCommit = func() error { return stop }
				if _, err := Run(context.Background(), opt); !errors.Is(err, stop) {
					t.Fatalf("crawl-1 run again, stopped: %v", err)
				}
				opt.beforeCommit = nil
			}
			c.runAgain(t, opt)
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
	c.runAgain(t, c.rerun())
	if s := jobtest.StaleInJSON(t, c.json); slices.Contains(s, filepath.Base(c.requirer)) {
		t.Errorf("after the run, %s names a stale hash or size for %s", c.json, filepath.Base(c.requirer))
	}
}

package dedup

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/stage"
)

// The set-up the tests of crawls of WACZ packages with a crawl index
// share (crawlwacz*_test.go): the two crawls and their runs
// (crawlsWithIndex), the committed requirer most of them start from
// (setUpCommittedRequirer), and the checks of a run that must refuse
// before rewriting anything (mustRefuse, dirsSnapshot).

// crawlsWithIndex is jobtest.WACZCrawls' two crawls of WACZ packages,
// crawl-0 (earlier) and crawl-1, to be run one after the other with a
// crawl index: each crawl's own directory, or each crawl's multi-WACZ
// JSON beside the other's in one directory (form).
type crawlsWithIndex struct {
	dir   string            // the directory every package is in at the end
	byDir map[string]string // each package's directory, by file name
	ops   [2]string         // each crawl's operand
	// Each crawl's --crawl: none when run from its multi-WACZ JSON,
	// whose resources' crawlId names it.
	crawl [2]string
	index string
}

func newCrawlsWithIndex(t *testing.T, form string) *crawlsWithIndex {
	t.Helper()
	k := &crawlsWithIndex{index: filepath.Join(t.TempDir(), "index")}
	k.dir, k.byDir, k.ops = jobtest.WACZCrawls(t, form)
	if form == "directories" {
		k.crawl = [2]string{"crawl-0", "crawl-1"}
	}
	return k
}

// options are those of the run of crawl i (0 or 1) with the index.
func (k *crawlsWithIndex) options(i int) Options {
	return Options{Collections: []string{k.ops[i]}, Crawl: k.crawl[i], Index: k.index, Jobs: 2}
}

// keepingWork is opt keeping the run's work directory: for an undo, or
// a run again that resumes it.
func keepingWork(opt Options) Options {
	opt.KeepWork = true
	return opt
}

// workDir is the work directory in the index of crawl i's run.
func (k *crawlsWithIndex) workDir(i int) string {
	return filepath.Join(k.index, "work", "crawl-"+strconv.Itoa(i))
}

// runOK runs opt; the test fails, naming the run (what), unless it
// finishes with exit status 0.
func runOK(t *testing.T, what string, opt Options) *stage.Result {
	t.Helper()
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("%s: %v %+v", what, err, r.Report.ExitReason)
	}
	return r
}

// committedRequirerCase is crawl-1 of crawlsWithIndex, run with the
// index, taken out of it and undone, while crawl-0's package
// crawl-0-1.wacz, committed by its own run, requires one of crawl-1's
// packages (required) by its SHA-256 and size: as an earlier job, or
// Browsertrix, wrote the entry.
type committedRequirerCase struct {
	*crawlsWithIndex
	wd, required, requirer string
	json                   string // crawl-0's multi-WACZ JSON, if it was run from one
	dirs                   []string
	// As the set-up left them, for check: the hash of the package
	// required (the undo gave it back), the requirer's WARC members.
	requiredWas string
	places      []string
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
	form := "directories"
	if layout == "one directory" {
		form = "multi-WACZ JSON"
	}
	c := &committedRequirerCase{crawlsWithIndex: newCrawlsWithIndex(t, form)}
	c.wd = c.workDir(1)
	before := hashTree(t, c.dir)
	runOK(t, "crawl-1", c.rerun())
	after := hashTree(t, c.dir)
	for _, p := range []string{"crawl-1-0.wacz", "crawl-1-1.wacz"} {
		rel, _ := filepath.Rel(c.dir, filepath.Join(c.byDir[p], p))
		if before[rel] != after[rel] {
			c.required = filepath.Join(c.byDir[p], p)
			break
		}
	}
	if c.required == "" {
		t.Fatal("crawl-1's run rewrote no package: the test proves nothing")
	}
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: c.index, Crawl: "crawl-1", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-1: %v", err)
	}
	c.requirer = filepath.Join(c.byDir["crawl-0-1.wacz"], "crawl-0-1.wacz")
	jobtest.RequireBy(t, c.requirer, c.required)
	if then != nil {
		then(c.requirer)
	}
	crawl0 := c.options(0)
	switch layout {
	case "JSON beside":
		c.json = writeCrawlJSON(t, c.byDir, "crawl-0", "crawl-0-0.wacz", "crawl-0-1.wacz")
		crawl0.Collections, crawl0.Crawl = []string{c.json}, ""
	case "one directory":
		c.json = c.ops[0]
		// The JSON written before crawl-1's run and requireAcross:
		// brought up to date as an operator would.
		jobtest.UpdateJSONEntry(t, c.json, c.requirer)
	}
	runOK(t, "crawl-0", crawl0)
	c.dirs = []string{c.byDir["crawl-0-0.wacz"]}
	if d := c.byDir["crawl-1-0.wacz"]; d != c.dirs[0] {
		c.dirs = append(c.dirs, d)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("after crawl-0's run, stale entries: %v", s)
	}
	if !slices.ContainsFunc(jobtest.RequiresOf(t, c.requirer), func(name string) bool { return name == filepath.Base(c.required) }) {
		t.Fatalf("%s does not require %s after crawl-0's run: the test proves nothing", c.requirer, c.required)
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{c.ops[1]}, WorkDir: c.wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo crawl-1: %v %+v", err, u)
	}
	if s := jobtest.StaleRequires(t, c.dirs...); len(s) > 0 {
		t.Fatalf("after the undo, stale entries: %v", s)
	}
	c.requiredWas = hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	c.places = jobtest.WARCPlaces(t, c.requirer)
	return c
}

// rerun are the options of crawl-1's run again after its undo, which
// rewrites the package crawl-0's requirer requires.
func (c *committedRequirerCase) rerun() Options {
	return keepingWork(c.options(1))
}

// runAgain runs crawl-1 again (opt: c.rerun(), with the test's hooks),
// which must finish, and checks what it left (check).
func (c *committedRequirerCase) runAgain(t *testing.T, opt Options) {
	t.Helper()
	runOK(t, "crawl-1 run again", opt)
	c.check(t)
}

// noteRequirer is crawl-0's requirer as a stopped attempt of crawl-1's
// run notes it (a crawlindex refile entry), as it is now.
func (c *committedRequirerCase) noteRequirer(t *testing.T) crawlindex.RefileEntry {
	t.Helper()
	e, err := crawlindex.NotePackage("crawl-0", filepath.Base(c.requirer), c.requirer)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// writeNote writes the refile note of crawl-1's work directory, as a
// stopped attempt leaves it.
func (c *committedRequirerCase) writeNote(t *testing.T, entries ...crawlindex.RefileEntry) {
	t.Helper()
	if err := crawlindex.WriteRefileNote(filepath.Join(c.wd, crawlRefileNote), entries); err != nil {
		t.Fatal(err)
	}
}

// dirsSnapshot is every file of the crawls' directories, hashed, at one
// moment: what a run that refuses must leave them as.
type dirsSnapshot map[string]map[string]string

// snapshot hashes every file of c.dirs as it is now.
func (c *committedRequirerCase) snapshot(t *testing.T) dirsSnapshot {
	t.Helper()
	s := dirsSnapshot{}
	for _, d := range c.dirs {
		s[d] = hashTree(t, d)
	}
	return s
}

// changed are the paths of the files of the directories that are not
// as they were (or were not there). A snapshot never taken (a hook of
// the run that took it was not called) fails the test: it compares
// nothing, and a run stopped before the hook would pass.
func (s dirsSnapshot) changed(t *testing.T) []string {
	t.Helper()
	if s == nil {
		t.Fatal("the directories were never snapshot (the run's hook was not called): the test proves nothing")
	}
	var out []string
	for d, was := range s {
		for name, h := range hashTree(t, d) {
			if was[name] != h {
				out = append(out, filepath.Join(d, name))
			}
		}
	}
	slices.Sort(out)
	return out
}

// failure is the message of a run that failed (its error, or its exit
// reasons), and whether it failed.
func failure(r *stage.Result, err error) (msg string, failed bool) {
	if err != nil {
		return err.Error(), true
	}
	return strings.Join(r.Report.ExitReason, "; "), r.Report.Exit != 0
}

// mustRefuse runs opt, which must refuse before rewriting anything: the
// test fails if the run succeeds (with succeeded(), saying what the run
// left) or if a file of the directories is not as *before has it (taken
// before the run, or by a hook of opt as the run goes). It returns the
// refusal's message, for the test to check that it names why.
func mustRefuse(t *testing.T, opt Options, before *dirsSnapshot, succeeded func() string) string {
	t.Helper()
	r, err := Run(context.Background(), opt)
	msg, failed := failure(r, err)
	if !failed {
		t.Fatal(succeeded())
	}
	for _, p := range before.changed(t) {
		t.Errorf("%s changed (the run should have refused before rewriting anything: %s)", p, msg)
	}
	return msg
}

package dedup

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/warctest"
	"warcdedup/record"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// threeWACZCrawls are three monthly crawls of WACZ packages, crawl-0,
// crawl-1 and crawl-2, each in its own directory, committed in turn to
// one crawl index: crawl-1's revisits need crawl-0's packages, crawl-2's
// those of crawl-0 and crawl-1.
type threeWACZCrawls struct {
	dirs  []string
	index string
}

func newThreeWACZCrawls(t *testing.T) *threeWACZCrawls {
	t.Helper()
	k := newWACZCrawls(t, 3, 3)
	ix, err := crawlindex.Open(k.index)
	if err != nil {
		t.Fatal(err)
	}
	need := map[string]bool{}
	for _, n := range ix.Registry.Crawl("crawl-2").Requires {
		need[n.Crawl] = true
	}
	if c1 := ix.Registry.Crawl("crawl-1"); len(c1.Requires) == 0 || !need["crawl-0"] || !need["crawl-1"] {
		t.Fatalf("crawl-1 requires %+v, crawl-2 %v: the test proves nothing", c1.Requires, need)
	}
	k.check(t, "after the three commits", true)
	return k
}

// newWACZCrawls generates n monthly crawls of WACZ packages (two
// packages each), each in its own directory, and commits the first
// committed of them in turn.
func newWACZCrawls(t *testing.T, n, committed int) *threeWACZCrawls {
	t.Helper()
	cfg := gen.Config{Files: 2 * n, Records: 120 * n, DupRate: 0.5, Seed: 23, MeanPayload: 2 << 10, NonCandidates: true,
		Sequential: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}}
	dir, res := jobtest.Generated(t, cfg)
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 2 * n, Crawls: n, Index: "mixed"})
	if err != nil {
		t.Fatal(err)
	}
	k := &threeWACZCrawls{index: filepath.Join(t.TempDir(), "index"), dirs: make([]string, n)}
	for i := range k.dirs {
		k.dirs[i] = filepath.Join(dir, fmt.Sprintf("crawl-%d", i))
		if err := os.Mkdir(k.dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range coll.Packages {
		var i int
		if _, err := fmt.Sscanf(p.CrawlID, "crawl-%d", &i); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, p.Name), filepath.Join(k.dirs[i], p.Name)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range committed {
		runOK(t, fmt.Sprintf("crawl-%d", i), k.options(i))
	}
	return k
}

func (k *threeWACZCrawls) options(i int) Options {
	return Options{Collections: []string{k.dirs[i]}, Crawl: fmt.Sprintf("crawl-%d", i), Index: k.index, Jobs: 2, KeepWork: true}
}

func (k *threeWACZCrawls) workDir(i int) string {
	return filepath.Join(k.index, "work", fmt.Sprintf("crawl-%d", i))
}

// check proves what must hold whatever was done: every revisit's
// original is in the package its WARC-Refers-To-Container names (or in
// its own package), every requires entry names an existing package with
// its SHA-256 and size now; with verified, index verify --deep (the
// files and every original at its place) finds nothing wrong.
func (k *threeWACZCrawls) check(t *testing.T, when string, verified bool) {
	t.Helper()
	for _, p := range revisitsWithoutOriginal(t, k.dirs...) {
		t.Errorf("%s: %s", when, p)
	}
	for _, s := range jobtest.StaleRequires(t, k.dirs...) {
		t.Errorf("%s: stale requires entry %s", when, s)
	}
	if !verified {
		return
	}
	for _, p := range verifyDeep(t, k.index) {
		t.Errorf("%s: index verify --deep: %s", when, p)
	}
}

// verifyDeep is what index verify --deep finds wrong with the index.
func verifyDeep(t *testing.T, index string) []string {
	t.Helper()
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	report := func(p string) { problems = append(problems, p) }
	if _, err := ix.Verify(true, report); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyOriginals(context.Background(), ix, "", report, nil); err != nil {
		t.Fatal(err)
	}
	return problems
}

// revisitsWithoutOriginal reads every record of every package of dirs:
// a revisit whose WARC-Refers-To-Container names a package must find
// there (a package of that name in dirs) a response of its target URI,
// date and payload digest; one without, in its own package. It returns
// those that do not, and fails the test if no revisit refers to a
// container.
func revisitsWithoutOriginal(t *testing.T, dirs ...string) []string {
	t.Helper()
	type revisit struct{ pkg, container, key string }
	responses := map[string]map[string]bool{} // package -> URI date digest
	var revisits []revisit
	for _, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.wacz"))
		for _, name := range names {
			base := filepath.Base(name)
			if responses[base] != nil {
				t.Fatalf("two packages named %s", base)
			}
			responses[base] = map[string]bool{}
		}
		eachRecord(t, d, func(pkg string, rec *record.Record, _ *record.Reader) {
			digest := rec.Header.Get("WARC-Payload-Digest")
			switch rec.Type {
			case "response", "resource":
				responses[pkg][rec.URI+" "+rec.Date+" "+digest] = true
			case "revisit":
				c, _ := rec.Header.Lookup(wacz.RefersToContainer)
				other := pkg
				if c != "" {
					other, _ = wacz.ParseContainerURI(c)
				}
				revisits = append(revisits, revisit{pkg, other, rec.Header.Get("WARC-Refers-To-Target-URI") + " " + rec.Header.Get("WARC-Refers-To-Date") + " " + digest})
			}
		})
	}
	var out []string
	across := 0
	for _, v := range revisits {
		if v.container != v.pkg {
			across++
		}
		if !responses[v.container][v.key] {
			out = append(out, fmt.Sprintf("%s: a revisit of %s has no original in %s", v.pkg, v.key, v.container))
		}
	}
	if across == 0 {
		t.Fatal("no revisit refers to another package: the test proves nothing")
	}
	return out
}

// TestThreeWACZCrawlsTakenOutAndUndone commits three monthly crawls of
// WACZ packages in turn, then takes one out of the index and undoes it:
// the last (nothing needs it), the first with --restore (refused, as
// packages are not rewritten, nothing changed), the middle (with
// --force, its revisits undone while the last crawl's need its
// responses). It proves that every revisit left has its original where
// its WARC-Refers-To-Container says, that every requires entry names
// its package as it is, and that the index verifies deep once what was
// taken out is committed again by a rerun.
func TestThreeWACZCrawlsTakenOutAndUndone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crawl   int
		restore bool
		force   bool
		refused bool // the removal is refused, nothing changed
	}{
		{"the last taken out and undone", 2, false, false, false},
		{"the first taken out with --restore", 0, true, false, true},
		{"the middle taken out with --force and undone", 1, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newThreeWACZCrawls(t)
			before := map[int]map[string]string{}
			for i, d := range k.dirs {
				before[i] = hashTree(t, d)
			}
			name := fmt.Sprintf("crawl-%d", tc.crawl)
			res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: k.index, Crawl: name, Restore: tc.restore, Force: tc.force, Jobs: 2})
			if tc.refused {
				if err == nil && res.Removed {
					t.Fatalf("index remove %s: removed (%+v)", name, res)
				}
				for i, d := range k.dirs {
					sameTree(t, fmt.Sprintf("crawl-%d after the refused removal", i), hashTree(t, d), before[i])
				}
				k.check(t, "after the refused removal", true)
				return
			}
			if err != nil || !res.Removed {
				t.Fatalf("index remove %s: %v %+v", name, err, res)
			}
			u, err := Undo(context.Background(), UndoOptions{Paths: []string{k.dirs[tc.crawl]}, WorkDir: k.workDir(tc.crawl), Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo %s: %v %+v", name, err, u)
			}
			k.check(t, "after the undo", false)
			if tc.force {
				// Removed by force while crawl-2's revisits needed it:
				// the index says so, and nothing else is wrong (crawl-2's
				// packages written anew by the undo recorded again); a
				// run of it again is refused
				// (TestRunIndexRefusesFilesForcedOutWhileNeeded).
				for _, p := range verifyDeep(t, k.index) {
					if !strings.Contains(p, "revisits need crawl crawl-1, which is no longer committed") || strings.Contains(p, "is gone") {
						t.Errorf("after the undo: index verify --deep: %s", p)
					}
				}
				return
			}
			// Committed again: a rerun of the crawl undone.
			runOK(t, name+" run again", k.options(tc.crawl))
			k.check(t, "after the crawl undone was committed again", true)
			for i := range k.dirs {
				r, err := Run(context.Background(), k.options(i))
				if err != nil || !r.NothingToDo {
					t.Errorf("crawl-%d run again at the end: %v, nothing to do %v", i, err, r != nil && r.NothingToDo)
				}
			}
		})
	}
}

// TestRunIndexRefusesFilesForcedOutWhileNeeded commits three monthly
// crawls of WACZ packages, takes the middle one out of the index with
// --force (crawl-2's revisits need its packages), and commits crawl-3, a
// WARC file holding a response of another URI with the block of a
// response of crawl-1 that a revisit of crawl-2 refers to. A run of
// crawl-1's packages again, under its name or another, after its undo or
// not, must refuse before anything is rewritten: the index no longer
// holds crawl-1's originals, and the run made that response a revisit of
// crawl-3's (exit 0), crawl-2's revisit left with no original in the
// package its WARC-Refers-To-Container names.
func TestRunIndexRefusesFilesForcedOutWhileNeeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crawl string // the run's --crawl
		undo  bool   // crawl-1 undone after its removal
	}{
		{"under its name", "crawl-1", false},
		{"under its name after its undo", "crawl-1", true},
		{"under another name", "crawl-1b", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newThreeWACZCrawls(t)
			if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: k.index, Crawl: "crawl-1", Force: true, Jobs: 2}); err != nil {
				t.Fatal(err)
			}
			if tc.undo {
				u, err := Undo(context.Background(), UndoOptions{Paths: []string{k.dirs[1]}, WorkDir: k.workDir(1), Jobs: 2})
				if err != nil || u.Exit != 0 {
					t.Fatalf("undo crawl-1: %v %+v", err, u)
				}
			}
			block := neededBlock(t, k.dirs[2], k.dirs[1])
			d3 := filepath.Join(filepath.Dir(k.dirs[0]), "crawl-3")
			warctest.WriteFile(t, d3, "a.warc.gz", warctest.Gzip(warctest.Record("response", "http://other.example/same", "2000-01-01T00:00:00Z", string(block), "Content-Type: application/http; msgtype=response")))
			runOK(t, "crawl-3", Options{Collections: []string{d3}, Crawl: "crawl-3", Index: k.index, Jobs: 2})
			before := hashTree(t, k.dirs[1])
			opt := k.options(1)
			opt.Crawl = tc.crawl
			r, err := Run(context.Background(), opt)
			msg, failed := failure(r, err)
			if !failed || !strings.Contains(msg, "with --force") {
				t.Errorf("run of crawl-1's packages as %s: failed %v (%s), %d revisits written", tc.crawl, failed, msg, r.Report.Totals.RevisitsWritten)
			}
			sameTree(t, "crawl-1's packages", hashTree(t, k.dirs[1]), before)
			for _, p := range revisitsWithoutOriginal(t, k.dirs...) {
				t.Error(p)
			}
		})
	}
}

// neededBlock is the block of a response in a package of dir whose
// original a revisit of a package of by refers to by container.
func neededBlock(t *testing.T, by, dir string) []byte {
	t.Helper()
	want := map[string]string{} // URI date -> container
	eachRecord(t, by, func(pkg string, rec *record.Record, rr *record.Reader) {
		if c, ok := rec.Header.Lookup(wacz.RefersToContainer); ok && rec.Type == "revisit" {
			other, _ := wacz.ParseContainerURI(c)
			want[rec.Header.Get("WARC-Refers-To-Target-URI")+" "+rec.Header.Get("WARC-Refers-To-Date")] = other
		}
	})
	var block []byte
	eachRecord(t, dir, func(pkg string, rec *record.Record, rr *record.Reader) {
		if block == nil && rec.Type == "response" && want[rec.URI+" "+rec.Date] == pkg {
			b, err := io.ReadAll(rr)
			if err != nil {
				t.Fatal(err)
			}
			block = b
		}
	})
	if block == nil {
		t.Fatal("no original found")
	}
	return block
}

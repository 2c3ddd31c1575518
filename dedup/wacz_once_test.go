package dedup

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/record"
	"warcdedup/report"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// packageCaptures reads every record of the WARC members of the packages
// under dir, by URI.
func packageCaptures(t *testing.T, dir string) map[string]readCapture {
	t.Helper()
	out := map[string]readCapture{}
	eachRecord(t, dir, func(_ string, rec *record.Record, rr *record.Reader) {
		c := readCapture{typ: rec.Type}
		if rec.Type == "revisit" {
			c.refers = revisit.RefersURI(rec)
		}
		out[rec.Header.Get("WARC-Target-URI")] = c
		if err := rr.Finish(); err != nil {
			t.Fatal(err)
		}
	})
	return out
}

// writePackage packages WARC files (name -> bytes, in name order) as the
// WACZ file name of dir.
func writePackage(t *testing.T, dir, name string, warcs map[string]string) {
	t.Helper()
	src := t.TempDir()
	var paths []string
	for _, n := range slices.Sorted(maps.Keys(warcs)) {
		warctest.WriteFile(t, src, n, []byte(warcs[n]))
		paths = append(paths, filepath.Join(src, n))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: paths, TempDir: src}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWACZComparedOnce runs the job on WACZ packages whose copies
// resolve, numbering them without reading, cannot tell apart (a SHA-1
// collision pair), once comparing in resolve and once comparing each
// duplicate once (the default): both must number every record alike,
// give the same totals, write the same records and rewrite logs that
// compose alike, every package passing its check with current requires
// entries. The collisions' rewrite must rewrite, again, a package the
// first rewrite wrote anew, reading records of its second WARC member,
// which the first rewrite moved in the package (its first member
// shrank): the stages after a rewrite find members where they now are.
func TestWACZComparedOnce(t *testing.T) {
	build := comparedOnceCollection(t)
	type result struct {
		totals   report.Totals
		numbered []string
		log      []string
		records  map[string]readCapture
	}
	var got [2]result
	for i, once := range []bool{false, true} {
		base := t.TempDir()
		dir, work := filepath.Join(base, "coll"), filepath.Join(base, "work")
		build(t, dir)
		r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2, KeepWork: true, CompareInResolve: !once})
		if err != nil {
			t.Fatal(err)
		}
		if rep := r.Report; rep.Exit != 0 || rep.Totals.Violations != 0 {
			t.Fatalf("compare once %v: exit %d %v, totals %+v", once, rep.Exit, rep.ExitReason, rep.Totals)
		}
		ran := slices.ContainsFunc(r.Report.Stages, func(s report.Stage) bool {
			return s.Name == stage.RewriteCollisionName && !s.Skipped && !s.NotRun
		})
		if ran != once {
			t.Errorf("compare once %v: the collisions' rewrite ran: %v", once, ran)
		}
		checkPackages(t, dir)
		if stale := staleRequires(t, dir); len(stale) > 0 {
			t.Errorf("compare once %v: stale requires entries: %v", once, stale)
		}
		got[i] = result{r.Report.Totals, numberedLines(t, work), rewritetest.ComposedLog(t, filepath.Join(work, workdir.LogFile)), packageCaptures(t, dir)}
	}
	want := map[string]readCapture{
		"http://a.example/":  {typ: "response"},
		"http://b.example/":  {typ: "response"},
		"http://p.example/":  {typ: "response"},
		"http://p2.example/": {typ: "revisit", refers: "http://p.example/"},
		"http://a2.example/": {typ: "revisit", refers: "http://a.example/"},
		"http://b2.example/": {typ: "revisit", refers: "http://b.example/"},
		"http://b3.example/": {typ: "revisit", refers: "http://b.example/"},
	}
	cmp, once := got[0], got[1]
	for uri, w := range want {
		if once.records[uri] != w || cmp.records[uri] != w {
			t.Errorf("%s: compare once %+v, comparing %+v, want %+v", uri, once.records[uri], cmp.records[uri], w)
		}
	}
	if cmp.totals != once.totals {
		t.Errorf("totals differ:\ncomparing    %+v\ncompare once %+v", cmp.totals, once.totals)
	}
	if !slices.Equal(cmp.numbered, once.numbered) {
		t.Errorf("numbered manifests differ:\ncomparing\n  %s\ncompare once\n  %s", strings.Join(cmp.numbered, "\n  "), strings.Join(once.numbered, "\n  "))
	}
	if !slices.Equal(cmp.log, once.log) {
		t.Errorf("rewrite logs differ, composed:\ncomparing\n  %s\ncompare once\n  %s", strings.Join(cmp.log, "\n  "), strings.Join(once.log, "\n  "))
	}
}

// TestWACZLogScans proves that the one-pass readings of the rewrite log
// that the WACZ code does instead of loading it whole (scanLog,
// loggedVersions, jobPackages, rewrittenPackages) give what the loaded
// log gives: every file's version, the packages it names, and from a
// byte offset on only those logged since. The log is a run's, then an
// undo's and a second run's appended to it.
func TestWACZLogScans(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	work := filepath.Join(t.TempDir(), "work")
	wd := &workdir.Dir{Path: work}
	var sizes []int64
	for i, step := range []func() error{
		func() error {
			_, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2})
			return err
		},
		func() error {
			_, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: work})
			return err
		},
		func() error {
			_, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2})
			return err
		},
	} {
		fi, err := os.Stat(wd.File(workdir.LogFile))
		if err == nil {
			sizes = append(sizes, fi.Size())
		} else if i > 0 {
			t.Fatal(err)
		}
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	for _, from := range sizes {
		moves, err := rewritelog.LoadFileFrom(wd.File(workdir.LogFile), from)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		all := map[string]bool{}
		for _, f := range moves.Files() {
			all[f.Name] = true
			if pkg, _, ok := wacz.SplitName(f.Name); ok && !slices.Contains(want, pkg) {
				want = append(want, pkg)
			}
		}
		slices.Sort(want)
		if len(want) == 0 {
			t.Fatalf("from byte %d the log names no package: the test proves nothing", from)
		}
		got, err := jobPackages(wd, from)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("from byte %d: jobPackages %v %v, the loaded log names %v", from, got, err, want)
		}
		if from > 0 {
			continue
		}
		rewritten, err := rewrittenPackages(wd)
		if err != nil || !slices.Equal(slices.Sorted(maps.Keys(rewritten)), want) {
			t.Errorf("rewrittenPackages %v %v, the loaded log names %v", rewritten, err, want)
		}
		versions, err := loggedVersions(wd.File(workdir.LogFile), all)
		if err != nil {
			t.Fatal(err)
		}
		for name := range all {
			w, ok := moves.Version(name)
			if g, gok := versions[name]; g != w || gok != ok {
				t.Errorf("%s: version %+v %v, the loaded log's %+v %v", name, g, gok, w, ok)
			}
		}
		// Only the files asked for are kept.
		some := map[string]bool{}
		for name := range all {
			some[name] = true
			break
		}
		if v, _ := loggedVersions(wd.File(workdir.LogFile), some); len(v) > 1 {
			t.Errorf("asked for one file, kept %d", len(v))
		}
	}
}

// TestWACZPackagesWrittenAtOnce writes anew, four at a time, packages of
// four crawls that require one another in a chain (each crawl's
// duplicates have originals in the crawls before): each package must be
// written only once those it requires by hash are, so that every
// requires entry gives the required package's SHA-256 and size as it
// now is, and every package passes its check.
func TestWACZPackagesWrittenAtOnce(t *testing.T) {
	cfg := gen.Config{Files: 8, Records: 320, DupRate: 0.4, Seed: 13, MeanPayload: 4 << 10, NonCandidates: true,
		Sequential: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz}}
	dir, res := generated(t, cfg)
	if _, err := waczgen.Write(dir, res, waczgen.Config{Packages: 4, Crawls: 4, Index: "mixed"}); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep := r.Report; rep.Exit != 0 || rep.Totals.Violations != 0 || rep.Totals.RevisitsWritten == 0 {
		t.Fatalf("exit %d %v, totals %+v", rep.Exit, rep.ExitReason, rep.Totals)
	}
	// Each package written once: a requirer written before the package
	// it requires would be written again, its entry refreshed.
	log, err := os.ReadFile(filepath.Join(work, workdir.RunLog))
	if err != nil {
		t.Fatal(err)
	}
	if want := "4 WACZ packages written anew around their rewritten members"; !strings.Contains(string(log), want) {
		t.Errorf("the run log does not say %q:\n%s", want, log)
	}
	checkPackages(t, dir)
	if stale := staleRequires(t, dir); len(stale) > 0 {
		t.Errorf("requires entries naming a package as it no longer is: %v", stale)
	}
	byHash := 0
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _ := p.Datapackage.Requires()
		p.Close()
		for _, q := range reqs {
			if q.Hash != "" {
				byHash++
			}
		}
	}
	if byHash < 3 {
		t.Errorf("%d requires entries with a hash: the chain the test needs is not there", byHash)
	}
}

// comparedOnceCollection returns the maker of the collection of
// TestWACZComparedOnce and TestWACZComparedOnceResumed: two packages
// whose copies a SHA-1 collision pair keeps resolve from telling apart,
// the second package's first member shrinking in the first rewrite so
// that its second moves.
func comparedOnceCollection(t *testing.T) func(t *testing.T, dir string) {
	x, y := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin")
	a, b := httpWith(200, "application/octet-stream", x), httpWith(200, "application/octet-stream", y)
	// A page that does not compress to less than its revisit.
	var body strings.Builder
	for i, v := 0, uint32(1); i < 4000; i++ {
		v = v*1664525 + 1013904223
		body.WriteByte(byte('a' + v>>24%26))
	}
	page := httpWith(200, "text/html", body.String())
	return func(t *testing.T, dir string) {
		writePackage(t, dir, "one.wacz", map[string]string{
			"one.warc.gz": string(warctest.Gzip(
				warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", a),
				warctest.Record("response", "http://b.example/", "2024-01-01T00:00:02Z", b))),
		})
		writePackage(t, dir, "two.wacz", map[string]string{
			// A duplicate rewritten by the first rewrite: the member
			// shrinks, and the next moves in the package.
			"two-a.warc.gz": string(warctest.Gzip(
				warctest.Record("response", "http://p.example/", "2024-01-02T00:00:01Z", page),
				warctest.Record("response", "http://p2.example/", "2024-01-02T00:00:02Z", page))),
			// A revisit of a in the first rewrite; b2 and b3, numbered
			// duplicates of a, kept apart, revisits of b in the
			// collisions' rewrite.
			"two-b.warc.gz": string(warctest.Gzip(
				warctest.Record("response", "http://a2.example/", "2024-01-02T00:00:03Z", a),
				warctest.Record("response", "http://b2.example/", "2024-01-02T00:00:04Z", b),
				warctest.Record("response", "http://b3.example/", "2024-01-02T00:00:05Z", b))),
		})
	}
}

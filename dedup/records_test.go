package dedup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/policy"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// depsLines are a deps.tsv's lines, its header left out.
func depsLines(t *testing.T, name string) []string {
	t.Helper()
	return readLines(t, name)[1:]
}

// fixityFiles are the files a fixity.tsv lists.
func fixityFiles(t *testing.T, name string) []string {
	t.Helper()
	var files []string
	for _, l := range readLines(t, name)[1:] {
		f, _, _ := strings.Cut(l, " ")
		files = append(files, f)
	}
	return files
}

// TestRecordsAccumulate proves that the work directory's fixity list,
// dependencies and report cover every run of the collection, each run's
// own kept beside them: a run after a file was added, and a run with
// another policy that writes nothing, leave the earlier runs'
// dependencies and replaced files listed; an undo takes out what it
// restored.
func TestRecordsAccumulate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	wd := filepath.Join(t.TempDir(), "work")
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
		warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/page.html", "2024-01-01T00:00:00Z", page)))
	first := runOn(t, dir, wd)
	if first.Report.Totals.RevisitsWritten != 1 {
		t.Fatalf("first run: %d revisits written", first.Report.Totals.RevisitsWritten)
	}
	c := warctest.WriteFile(t, dir, "c.warc", []byte(warctest.Response("http://example.com/page.html", "2024-02-01T00:00:00Z", page)))
	second := runOn(t, dir, wd)
	if second.Report.Totals.RevisitsWritten != 1 || second.RunDir == first.RunDir {
		t.Fatalf("second run: %d revisits written, run directory %q (the first's %q)", second.Report.Totals.RevisitsWritten, second.RunDir, first.RunDir)
	}
	both := []string{"a.warc a.warc 1", "c.warc b.warc 1"}
	check := func(when string, deps, fixity []string, revisits, restored int64, runs int) {
		t.Helper()
		if got := depsLines(t, filepath.Join(wd, workdir.DepsFile)); !slices.Equal(got, deps) {
			t.Errorf("%s: deps.tsv %q, want %q", when, got, deps)
		}
		if got := fixityFiles(t, filepath.Join(wd, workdir.FixityFile)); !slices.Equal(got, fixity) {
			t.Errorf("%s: fixity.tsv lists %q, want %q", when, got, fixity)
		}
		rep, err := stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Collection == nil || rep.Collection.RevisitsWritten != revisits || rep.Collection.RecordsRestored != restored ||
			rep.Collection.FilesReplaced != int64(len(fixity)) || len(rep.Runs) != runs {
			t.Errorf("%s: stats.json: collection %+v, %d runs; want %d revisits written, %d restored, %d files, %d runs", when, rep.Collection, len(rep.Runs), revisits, restored, len(fixity), runs)
		}
		page, _ := os.ReadFile(filepath.Join(wd, workdir.ReportFile))
		for _, r := range rep.Runs {
			if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(r.Dir))); err != nil || !strings.Contains(string(page), r.Dir) {
				t.Errorf("%s: run %s: %v, or report.html does not name it", when, r.Dir, err)
			}
		}
	}
	check("after a file was added", both, []string{"a.warc", "c.warc"}, 2, 0, 2)
	// Each run's own: what it wrote.
	for _, tt := range []struct {
		r    *stage.Result
		deps string
	}{{first, "a.warc a.warc 1"}, {second, "c.warc b.warc 1"}} {
		if got := depsLines(t, filepath.Join(wd, tt.r.RunDir, workdir.DepsFile)); !slices.Equal(got, []string{tt.deps}) {
			t.Errorf("%s: deps.tsv %q, want %q", tt.r.RunDir, got, tt.deps)
		}
		if got := fixityFiles(t, filepath.Join(wd, tt.r.RunDir, workdir.FixityFile)); len(got) != 1 || got[0] != strings.Fields(tt.deps)[0] {
			t.Errorf("%s: fixity.tsv lists %q", tt.r.RunDir, got)
		}
	}

	// Another policy: another job, which finds nothing more to write.
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Policy: policy.Payload})
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten != 0 {
		t.Fatalf("run with --policy payload: %v, exit %d %v, %d revisits written", err, r.Report.Exit, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	check("after a run with another policy", both, []string{"a.warc", "c.warc"}, 2, 0, 3)

	// Undo c.warc: its dependency goes, its replacement stays listed.
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{c}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Records != 1 {
		t.Fatalf("undo: %v, exit %d %v, %d records restored", err, u.Exit, u.ExitReason, u.Stats.Records)
	}
	check("after an undo", []string{"a.warc a.warc 1"}, []string{"a.warc", "c.warc"}, 2, 1, 4)
}

// TestFoldLog proves that the work directory's fixity list and totals fold
// the rewrite log incrementally and give what folding the whole log gives:
// each file's size and SHA-256 before its first replacement and after its
// last; that a line being appended waits for the next fold; and that a
// log that is not the one folded is folded anew.
func TestFoldLog(t *testing.T) {
	wd := &workdir.Dir{Path: t.TempDir()}
	os.MkdirAll(wd.File(workdir.TmpDir), 0o755)
	const digest = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	run1 := "# run 2024-01-01T00:00:00Z\n" +
		"# file a.warc 50 a0 40 a1\n" +
		"a.warc 0 30 0 20 revisit " + digest + " http://x/ 2024-01-01T00:00:00Z\n" +
		"# file b.warc 100 b0 80 b1\n" +
		"b.warc 10 40 10 20 revisit " + digest + " http://y/ 2024-01-01T00:00:00Z\n"
	run2 := "# run 2024-02-01T00:00:00Z\n" +
		"# file b.warc 80 b1 100 b2\n" +
		"b.warc 10 20 10 40 restored - - -\n" +
		"# file c%20d.warc 10 c0 5 c1\n" +
		"c%20d.warc 0 10 0 5 revisit " + digest + " http://z/ 2024-01-01T00:00:00Z\n"
	fold := func(log string) (*report.Collection, []string) {
		t.Helper()
		if err := os.WriteFile(wd.File(workdir.LogFile), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := updateRecords(context.Background(), wd)
		if err != nil {
			t.Fatal(err)
		}
		return c, readLines(t, wd.File(workdir.FixityFile))[1:]
	}
	c, fixity := fold(run1)
	if want := []string{"a.warc 50 a0 40 a1", "b.warc 100 b0 80 b1"}; !slices.Equal(fixity, want) || c.RevisitsWritten != 2 || c.BytesSaved != 30 || c.FilesReplaced != 2 {
		t.Errorf("run 1: %q, %+v", fixity, c)
	}
	want := []string{"a.warc 50 a0 40 a1", "b.warc 100 b0 100 b2", "c%20d.warc 10 c0 5 c1"}
	c, fixity = fold(run1 + run2 + "d.warc 0 1") // the last line is being appended
	if !slices.Equal(fixity, want) || c.RevisitsWritten != 3 || c.RecordsRestored != 1 || c.BytesSaved != 15 || c.FilesReplaced != 3 {
		t.Errorf("run 2, folded on: %q, %+v", fixity, c)
	}
	os.Remove(wd.File(foldFile))
	if c2, fixity2 := fold(run1 + run2); !slices.Equal(fixity2, want) || *c2 != *c {
		t.Errorf("the whole log folded at once: %q, %+v; folded on: %+v", fixity2, c2, c)
	}
	// Another log where the one folded was: folded anew.
	other := strings.Replace(run1, "a.warc 50 a0", "a.warc 50 A0", 1) + run2
	if _, fixity = fold(other); fixity[0] != "a.warc 50 A0 40 a1" {
		t.Errorf("another log: %q", fixity)
	}
}

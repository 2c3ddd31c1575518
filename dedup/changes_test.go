package dedup

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// The payloads of the change tests: each at least 10 kB, so that a
// revisit of it is smaller.
var (
	logo  = strings.Repeat("logo ", 2000)
	page  = strings.Repeat("page ", 2000)
	style = strings.Repeat("style ", 2000)
)

// assess runs a dry run (warcdedup assess) on dir.
func assess(t *testing.T, dir, wd string) *stage.Result {
	t.Helper()
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true})
	if err != nil {
		t.Fatalf("assess: %v", err)
	}
	return r
}

// TestRunAfterAssessTakesAddedFile proves that a file added between
// assess and run is deduplicated by the run (the collection is checked
// again and what changed hashed), and that the run after it has nothing
// to do.
func TestRunAfterAssessTakesAddedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	wd := filepath.Join(t.TempDir(), "work")
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
		warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/page.html", "2024-01-01T00:00:00Z", page)))
	if r := assess(t, dir, wd); r.Report.Totals.RevisitsWritten != 1 {
		t.Fatalf("assess: %d revisits to write, want 1", r.Report.Totals.RevisitsWritten)
	}
	warctest.WriteFile(t, dir, "c.warc", []byte(warctest.Response("http://example.com/page.html", "2024-02-01T00:00:00Z", page)))
	r := runOn(t, dir, wd)
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.Files != 3 || tot.RevisitsWritten != 2 || tot.Violations != 0 {
		t.Fatalf("run after a file was added: exit %d %v; %d files, %d revisits written, want 3 files and 2 revisits",
			r.Report.Exit, r.Report.ExitReason, tot.Files, tot.RevisitsWritten)
	}
	// Only the new file was read: the others came from the cache.
	for _, st := range r.Report.Stages {
		if st.Name == stage.HashName && (st.Skipped || !strings.Contains(st.Note, "2 files known unchanged")) {
			t.Errorf("hash stage: skipped %v, %q; want it run, with the 2 files assess read known unchanged", st.Skipped, st.Note)
		}
	}
	if again := runOn(t, dir, wd); !again.NothingToDo {
		t.Errorf("the run after it: not nothing to do")
	}
}

// TestRunAfterAssessTakesReplacedFile proves that a file replaced between
// assess and run is hashed again, not reported as records lost.
func TestRunAfterAssessTakesReplacedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	wd := filepath.Join(t.TempDir(), "work")
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
		warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/page.html", "2024-01-01T00:00:00Z", page)+
		warctest.Response("http://example.com/style.css", "2024-01-01T00:00:00Z", style)))
	assess(t, dir, wd)
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/other.html", "2024-01-05T00:00:00Z", page)+
		warctest.Response("http://example.com/logo.png", "2024-01-06T00:00:00Z", logo)))
	r := runOn(t, dir, wd)
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.Violations != 0 || tot.RevisitsWritten != 2 {
		t.Fatalf("run after a file was replaced: exit %d %v; %d violations, %d revisits written, want 0 and 2",
			r.Report.Exit, r.Report.ExitReason, tot.Violations, tot.RevisitsWritten)
	}
}

// stopAfter is a display that cancels the run once a stage is done: an
// interrupted run, at a known point.
func stopAfter(stage string) (*progress.Display, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	w := writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), stage+": done") {
			once.Do(cancel)
		}
		return len(p), nil
	})
	return progress.NewPlain(w, "warcdedup"), ctx
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

// TestResumeAfterCollectionChanged proves that a run resumed after the
// collection changed under an interrupted one (a file added, one another
// process replaced) does not report the changed file's records as lost
// nor ignore the added file: it finishes its job, says which files
// changed and were added (exit status 1), and the next run deduplicates
// the collection as it is now.
func TestResumeAfterCollectionChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	wd := filepath.Join(t.TempDir(), "work")
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
		warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/page.html", "2024-01-01T00:00:00Z", page)+
		warctest.Response("http://example.com/style.css", "2024-01-01T00:00:00Z", style)))
	show, ctx := stopAfter(stage.RewriteName)
	if _, err := Run(ctx, Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Display: show}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted run: %v", err)
	}
	// Meanwhile another process replaces b.warc, and a file is added.
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/other.html", "2024-01-05T00:00:00Z", page)+
		warctest.Response("http://example.com/logo.png", "2024-01-06T00:00:00Z", logo)))
	warctest.WriteFile(t, dir, "c.warc", []byte(warctest.Response("http://example.com/page.html", "2024-02-01T00:00:00Z", page)))

	r := runOn(t, dir, wd)
	reasons := strings.Join(r.Report.ExitReason, "\n")
	if tot := r.Report.Totals; r.Report.Exit != 1 || tot.Violations != 0 ||
		!strings.Contains(reasons, "1 files changed since") || !strings.Contains(reasons, "b.warc") ||
		!strings.Contains(reasons, "1 files added since") || !strings.Contains(reasons, "c.warc") {
		t.Fatalf("the resumed run: exit %d, %d violations; want 1, none, naming b.warc changed and c.warc added:\n%s", r.Report.Exit, tot.Violations, reasons)
	}
	r = runOn(t, dir, wd)
	if tot := r.Report.Totals; r.NothingToDo || r.Report.Exit != 0 || tot.Files != 3 || tot.RevisitsWritten != 2 {
		t.Fatalf("the run after it: nothing to do %v, exit %d %v; %d files, %d revisits written, want 3 files and 2 revisits (b.warc's logo, c.warc's page)",
			r.NothingToDo, r.Report.Exit, r.Report.ExitReason, tot.Files, tot.RevisitsWritten)
	}
	if _, err := os.Stat(filepath.Join(wd, workdir.StateFile)); err != nil {
		t.Fatal(err)
	}
}

// TestResumeAfterCrawlChanged proves that a crawl whose files another
// process changed under an interrupted run is not committed as verified
// (its verification left them out): the resumed run says so (exit status
// 1), and the next run deduplicates the crawl as it is and commits it.
func TestResumeAfterCrawlChanged(t *testing.T) {
	top := t.TempDir()
	crawl, index := filepath.Join(top, "2024-01"), filepath.Join(top, "index")
	warctest.WriteFile(t, crawl, "a.warc", []byte(warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
		warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)))
	warctest.WriteFile(t, crawl, "b.warc", []byte(warctest.Response("http://example.com/page.html", "2024-01-01T00:00:00Z", page)))
	show, ctx := stopAfter(stage.RewriteName)
	if _, err := Run(ctx, Options{Collections: []string{crawl}, Index: index, Jobs: 2, Display: show}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted run: %v", err)
	}
	warctest.WriteFile(t, crawl, "b.warc", []byte(warctest.Response("http://example.com/other.html", "2024-01-05T00:00:00Z", page)+
		warctest.Response("http://example.com/logo.png", "2024-01-06T00:00:00Z", logo)))
	committed := func() bool {
		ix, err := crawlindex.Open(index)
		return err == nil && ix.Registry.Crawl("2024-01") != nil
	}
	r, err := Run(context.Background(), Options{Collections: []string{crawl}, Index: index, Jobs: 2})
	if err != nil || r.Report.Exit != 1 || r.Report.Totals.Violations != 0 || committed() ||
		!strings.Contains(strings.Join(r.Report.ExitReason, "\n"), "not committed") {
		t.Fatalf("the resumed run: %v, exit %d, %d violations, committed %v; want 1, none, not committed:\n%s",
			err, r.Report.Exit, r.Report.Totals.Violations, committed(), strings.Join(r.Report.ExitReason, "\n"))
	}
	r, err = Run(context.Background(), Options{Collections: []string{crawl}, Index: index, Jobs: 2})
	if err != nil || r.Report.Exit != 0 || !committed() || r.Report.Totals.RevisitsWritten != 1 {
		t.Fatalf("the run after it: %v, exit %d %v, committed %v, %d revisits written (want b.warc's logo)",
			err, r.Report.Exit, r.Report.ExitReason, committed(), r.Report.Totals.RevisitsWritten)
	}
}

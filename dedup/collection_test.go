package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
)

// twoCaptures is a WARC file holding the same payload twice: one
// duplicate, whose revisit is smaller than the record.
func twoCaptures(uri string) []byte {
	body := strings.Repeat("logo ", 2000)
	return []byte(warctest.Response(uri, "2024-01-01T00:00:00Z", body) + warctest.Response(uri, "2024-01-02T00:00:00Z", body))
}

// run runs the job on dir with the work directory wd and fails the test
// if it stopped.
func run(t *testing.T, dir, wd string) *Result {
	t.Helper()
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

// TestBackslashInName proves that a file whose name holds a backslash (an
// ordinary byte of a POSIX file name) is deduplicated like any other,
// not refused as a name that leaves its root.
func TestBackslashInName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, dir, `crawl\2024.warc`, twoCaptures("http://example.com/logo.png"))
	r := run(t, dir, filepath.Join(t.TempDir(), "work"))
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.RevisitsWritten != 1 || tot.FilesRefused != 0 {
		t.Fatalf("exit %d %v; %d revisits written, %d files refused", r.Report.Exit, r.Report.ExitReason, tot.RevisitsWritten, tot.FilesRefused)
	}
	if _, err := os.Stat(filepath.Join(dir, `crawl\2024.warc`)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFileSkipped proves that a file a crawler is still writing
// (Heritrix's x.warc.gz.open) is never read as part of the collection:
// it is left as it is, counted, and named in the run log.
func TestOpenFileSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	open := warctest.WriteFile(t, dir, "b.warc.gz.open", warctest.Gzip(string(twoCaptures("http://example.com/b.png"))))
	before, _ := os.ReadFile(open)
	wd := filepath.Join(t.TempDir(), "work")
	r := run(t, dir, wd)
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.Files != 1 || tot.RevisitsWritten != 1 || tot.FilesInProgress != 1 {
		t.Errorf("exit %d %v; %d files, %d in progress, %d revisits written", r.Report.Exit, r.Report.ExitReason, tot.Files, tot.FilesInProgress, tot.RevisitsWritten)
	}
	if after, _ := os.ReadFile(open); string(after) != string(before) {
		t.Errorf("%s changed", open)
	}
	log, _ := os.ReadFile(filepath.Join(wd, RunLog))
	if !strings.Contains(string(log), open+": skipped: still being written") {
		t.Errorf("run.log does not name %s:\n%s", open, log)
	}
}

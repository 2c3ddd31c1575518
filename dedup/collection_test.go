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

package dedup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/warcsum"
)

// TestRemoveRestoreRefusesDamagedIndex proves that remove --restore
// refuses an index that does not verify before it changes anything (issue
// 20, item 3: with a partition missing it exited 0, said the crawl could
// be deleted, and after that revisits resolved to nothing).
func TestRemoveRestoreRefusesDamagedIndex(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir(), "crawl-0", "crawl-1", "crawl-2")
	before := hashTree(t, crawls)
	os.Remove(largestPartition(t, index))
	current, _ := os.ReadFile(filepath.Join(index, "CURRENT"))
	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err == nil || res != nil && res.Removed {
		t.Errorf("remove --restore on an index with a partition missing: %v %+v", err, res)
	}
	sameTree(t, "the crawls after the refused removal", hashTree(t, crawls), before)
	if now, _ := os.ReadFile(filepath.Join(index, "CURRENT")); !bytes.Equal(now, current) {
		t.Errorf("CURRENT moved from %q to %q", current, now)
	}
}

// cdxOf writes a CDX index of a directory's responses (as a crawler's
// index names them, relative to it).
func cdxOf(t *testing.T, dir, name string) string {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if _, err := (&warcsum.Runner{}).Run(inputs, &lines); err != nil {
		t.Fatal(err)
	}
	var cdx strings.Builder
	cdx.WriteString(" CDX N b a m s k r M S V g\n")
	r := manifest.NewReader(&lines, dir)
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.IsRevisit() {
			continue
		}
		ts := strings.NewReplacer("-", "", "T", "", ":", "", "Z", "").Replace(l.Date)
		fmt.Fprintf(&cdx, "key %s %s application/octet-stream 200 %s - - %d %d %s\n", ts, l.URI,
			strings.TrimPrefix(l.Digest, "sha1:"), l.Length, l.Offset, l.File)
	}
	if err := os.WriteFile(name, []byte(cdx.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestRemoveRestoreNeverForward proves that remove --restore re-points a
// revisit only at a capture no later than the revisit itself (issue 20,
// item 3: a revisit of 2024-06-05 re-pointed at a capture of 2024-06-06):
// with the only other copy later, the revisit is made whole again.
func TestRemoveRestoreNeverForward(t *testing.T) {
	top := t.TempDir()
	index := filepath.Join(top, "index")
	body := strings.Repeat("the same payload ", 400)
	write := func(crawl, date string) string {
		dir := filepath.Join(top, crawl)
		warctest.WriteFile(t, dir, crawl+".warc", []byte(warctest.Response("http://example.com/a", date, body)))
		return dir
	}
	for _, c := range []struct{ crawl, date string }{{"may", "2024-06-01T00:00:00Z"}, {"june", "2024-06-05T00:00:00Z"}} {
		r, err := Run(context.Background(), Options{Collections: []string{write(c.crawl, c.date)}, Index: index})
		if err != nil || r.Report.Exit != 0 {
			t.Fatalf("%s: %v", c.crawl, err)
		}
	}
	if ix, _ := crawlindex.Open(index); ix == nil || ix.Registry.Crawl("june") == nil || ix.Registry.Crawl("june").RevisitsWritten != 1 {
		t.Fatalf("june wrote no revisit of may")
	}
	// A later copy of the payload, imported: the only one once may goes.
	late := write("late", "2024-06-06T00:00:00Z")
	if _, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "late", Location: late, CDX: []string{cdxOf(t, late, filepath.Join(top, "late.cdx"))}}); err != nil {
		t.Fatal(err)
	}
	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "may", Restore: true, Jobs: 1})
	if err != nil || !res.Removed {
		t.Fatalf("remove --restore: %v %+v", err, res)
	}
	if res.Repointed != 0 || res.Restored != 1 {
		t.Errorf("%d re-pointed, %d restored; want the revisit restored, not re-pointed forward in time", res.Repointed, res.Restored)
	}
	r := manifest.NewReader(bytes.NewReader(listing(t, filepath.Join(top, "june"))), "june")
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.IsRevisit() && l.RefDate > l.Date {
			t.Errorf("%s: a revisit of %s refers to a capture of %s", l.File, l.Date, l.RefDate)
		}
	}
}

// TestRemoveTwice proves that removing a crawl the index removed already
// says so and exits 0 (issue 20, item 12: it said "not committed").
func TestRemoveTwice(t *testing.T) {
	_, index := indexedCrawls(t, t.TempDir(), "crawl-0", "crawl-1", "crawl-2")
	for i := range 2 {
		res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-2"})
		if err != nil || !res.Removed {
			t.Fatalf("removal %d: %v %+v", i+1, err, res)
		}
		var out strings.Builder
		RemoveSummary(&out, res)
		t.Logf("removal %d: %s", i+1, out.String())
		if i == 1 && !strings.Contains(out.String(), "already") {
			t.Errorf("the second removal says %q", out.String())
		}
	}
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "never"}); err == nil {
		t.Errorf("removing a crawl never committed: no error")
	}
}

// TestImportDamagedLine proves that index import refuses a CDX index with
// a damaged line, naming it, and commits nothing (issue 20, item 12: it
// exited 0).
func TestImportDamagedLine(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir())
	jan := filepath.Join(crawls, "crawl-0")
	cdx := cdxOf(t, jan, filepath.Join(t.TempDir(), "jan.cdx"))
	data, err := os.ReadFile(cdx)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// The third line cut short: a damaged line, not a capture left out.
	lines[2] = lines[2][:len(lines[2])/3] + "\n"
	if err := os.WriteFile(cdx, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "jan", Location: jan, CDX: []string{cdx}, Warn: func(error) {}})
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("import of a CDX with a damaged line: %v", err)
	}
	if ix, err := crawlindex.Open(index); err == nil && ix.Exists() {
		t.Errorf("the import committed %+v", ix.Registry.Crawls)
	}
}

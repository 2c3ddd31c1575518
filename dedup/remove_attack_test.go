package dedup

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/collock"
	"warcdedup/internal/warctest"
)

// TestRemoveRestoreRefusedByLockLeavesNoClaim proves that an index remove
// --restore refused because another job holds a dependent crawl's
// directory leaves the index as it was: no record of a removal in
// progress, which would refuse every later run of a crawl of the index
// as "interrupted".
func TestRemoveRestoreRefusedByLockLeavesNoClaim(t *testing.T) {
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
	held, err := collock.Lock([]string{filepath.Join(top, "june")}) // another job on june's files
	if err != nil {
		t.Fatal(err)
	}
	_, err = RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "may", Restore: true, Jobs: 1})
	held.Release()
	var busy *collock.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("remove --restore with june held: %v, want it refused (a BusyError)", err)
	}
	r, err := Run(context.Background(), Options{Collections: []string{write("july", "2024-06-09T00:00:00Z")}, Index: index})
	if err != nil || r.Report.Exit != 0 {
		t.Errorf("a crawl run after the removal was refused: %v", err)
	}
}

package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
)

// TestRunIndexWACZCommittedPackageNewStamp commits crawl-0 of
// crawlsWithIndex, then changes one of its packages as the case says,
// and runs crawl-0 again and crawl-1 (whose revisits need crawl-0's
// packages). A package whose stamp changed and whose bytes did not (its
// mode, its times, the same bytes copied over it) is crawl-0's as
// committed: the rerun has nothing to do, crawl-1's run commits, its
// requires entries name the package as it is, and index verify --deep
// passes. A package whose bytes changed, its size kept, is refused by
// the rerun (committed crawls are never rewritten).
func TestRunIndexWACZCommittedPackageNewStamp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		same   bool // the bytes are those committed
	}{
		{"mode changed", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"times changed", func(t *testing.T, path string) {
			if err := os.Chtimes(path, time.Now(), time.Now().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"the same bytes copied over it", func(t *testing.T, path string) {
			copyTestFile(t, path, path+".copy")
			if err := os.Rename(path+".copy", path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a byte of its warcinfo changed, the size kept", func(t *testing.T, path string) {
			flipMemberByte(t, path, 0, 100)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCrawlsWithIndex(t, "directories")
			runOK(t, "crawl-0", k.options(0))
			pkg := filepath.Join(k.byDir["crawl-0-0.wacz"], "crawl-0-0.wacz")
			tc.change(t, pkg)
			r, err := Run(context.Background(), k.options(0))
			if tc.same {
				if err != nil || !r.NothingToDo {
					t.Fatalf("crawl-0 run again: %v, nothing to do %v", err, r != nil && r.NothingToDo)
				}
			} else if err == nil || !strings.Contains(err.Error(), "SHA-256") {
				t.Fatalf("crawl-0 run again, a package's bytes changed: %v", err)
			}
			dirs := []string{k.byDir["crawl-0-0.wacz"], k.byDir["crawl-1-0.wacz"]}
			staleBefore := map[string]bool{}
			for _, e := range jobtest.StaleRequires(t, dirs...) {
				staleBefore[e] = true // crawl-0's own entries for the package changed here
			}
			r, err = Run(context.Background(), k.options(1))
			msg, failed := failure(r, err)
			for _, e := range jobtest.StaleRequires(t, dirs...) {
				if !staleBefore[e] {
					t.Errorf("stale requires entry left by crawl-1's run: %s", e)
				}
			}
			if !tc.same {
				t.Logf("crawl-1: %s", msg)
				// Its originals' file is not the one the index records:
				// a commit that requires it would leave an index that
				// does not verify, crawl-1's revisits needing a file the
				// index knows by other bytes.
				if !failed || !strings.Contains(msg, "crawl-0-0.wacz") {
					t.Errorf("crawl-1, whose revisits need crawl-0-0.wacz, changed since its commit: failed %v: %s", failed, msg)
				}
				ix, err := crawlindex.Open(k.index)
				if err != nil {
					t.Fatal(err)
				}
				if ix.Registry.Crawl("crawl-1") != nil {
					t.Errorf("crawl-1 committed requiring %+v, which is not the file the index records: index verify --deep finds %v", ix.Registry.Crawl("crawl-1").Requires, verifyDeep(t, k.index))
				}
				return
			}
			if failed {
				t.Fatalf("crawl-1: %s", msg)
			}
			if problems := verifyDeep(t, k.index); len(problems) > 0 {
				t.Errorf("index verify --deep: %v", problems)
			}
		})
	}
}

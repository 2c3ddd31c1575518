package dedup

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/crawlindex"
)

// TestImportWACZCrawlsKeepsWhatTheyNeed runs crawl-0 and crawl-1 of
// crawlsWithIndex with one index (crawl-1's revisits need crawl-0's
// packages, which its packages require by crawlId), then imports both
// crawls' packages into a fresh index, crawl-0 then crawl-1, from their
// multi-WACZ JSON or as WACZ files. The fresh index must know that
// crawl-1's revisits need crawl-0's packages, as a run's commit records
// it: index remove of crawl-0 is refused, where it exited 0 saying its
// files may be deleted, and the index verifies with the files required.
func TestImportWACZCrawlsKeepsWhatTheyNeed(t *testing.T) {
	for _, form := range []string{"multi-WACZ JSON", "directories"} {
		t.Run(form, func(t *testing.T) {
			k := newCrawlsWithIndex(t, form)
			runOK(t, "crawl-0", k.options(0))
			runOK(t, "crawl-1", k.options(1))
			fresh := filepath.Join(t.TempDir(), "fresh")
			for i := range 2 {
				opt := ImportOptions{Index: fresh, Crawl: k.crawl[i], CDX: []string{k.ops[i]}}
				if form == "directories" {
					opt.CDX, _ = filepath.Glob(filepath.Join(k.ops[i], "*.wacz"))
				}
				if _, err := ImportCrawl(context.Background(), opt); err != nil {
					t.Fatalf("import crawl-%d: %v", i, err)
				}
			}
			ix, err := crawlindex.Open(fresh)
			if err != nil {
				t.Fatal(err)
			}
			if deps := ix.Registry.Dependents("crawl-0"); len(deps) != 1 || deps[0].Name != "crawl-1" {
				t.Errorf("crawl-0's dependents in the fresh index: %d, want crawl-1", len(deps))
			}
			res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: fresh, Crawl: "crawl-0", Jobs: 2})
			if err == nil || res.Removed || !slices.Equal(res.Dependents, []string{"crawl-1"}) {
				t.Errorf("index remove crawl-0, whose packages the imported crawl-1's revisits need: %v %+v", err, res)
			}
			// The index, the files (what crawl-1 requires among them) and
			// every original at its place, as index verify --deep reads
			// them: the generated packages' responses cut short
			// (WARC-Truncated), which their CDXJ lists as originals, are
			// noted, not problems.
			for _, p := range verifyDeep(t, fresh) {
				t.Errorf("index verify --deep: %s", p)
			}
		})
	}
}

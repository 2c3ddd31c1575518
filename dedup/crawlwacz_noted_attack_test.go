package dedup

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/crawlindex"
)

// TestRunIndexWACZNotedRequirerGoneAttack resumes a stopped attempt
// whose refile note names crawl-0's requirer, after crawl-0 was taken
// out of the index and its requirer deleted: nothing of the index rests
// on it any more, and the run must finish (or refuse before rewriting
// anything), not rewrite crawl-1's packages and then fail.
func TestRunIndexWACZNotedRequirerGoneAttack(t *testing.T) {
	c := setUpCommittedRequirer(t)
	before := map[string]map[string]string{}
	opt := Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true}
	// Noted by the stopped attempt; since, crawl-0 was taken out of the
	// index and its requirer deleted.
	e, err := crawlindex.NotePackage("crawl-0", filepath.Base(c.requirer), c.requirer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: c.index, Crawl: "crawl-0", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-0: %v", err)
	}
	if err := os.Remove(c.requirer); err != nil {
		t.Fatal(err)
	}
	opt.afterHash = func() {
		if err := crawlindex.WriteRefileNote(filepath.Join(c.wd, crawlRefileNote), []crawlindex.RefileEntry{e}); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.dirs {
			before[d] = hashTree(t, d)
		}
	}
	r, err := Run(context.Background(), opt)
	if err == nil && r.Report.Exit == 0 {
		return
	}
	t.Logf("run: %v %v", err, r.Report.ExitReason)
	for _, d := range c.dirs {
		for name, h := range hashTree(t, d) {
			if before[d][name] != h {
				t.Errorf("%s rewritten, and the run failed: %v %v", filepath.Join(d, name), err, r.Report.ExitReason)
			}
		}
	}
}

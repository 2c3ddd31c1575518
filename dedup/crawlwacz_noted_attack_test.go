package dedup

import (
	"context"
	"os"
	"testing"
)

// TestRunIndexWACZNotedRequirerGoneAttack resumes a stopped attempt
// whose refile note names crawl-0's requirer, after crawl-0 was taken
// out of the index and its requirer deleted: nothing of the index rests
// on it any more, and the run must finish (or refuse before rewriting
// anything), not rewrite crawl-1's packages and then fail.
func TestRunIndexWACZNotedRequirerGoneAttack(t *testing.T) {
	c := setUpCommittedRequirer(t)
	var before dirsSnapshot
	opt := c.rerun()
	// Noted by the stopped attempt; since, crawl-0 was taken out of the
	// index and its requirer deleted.
	e := c.noteRequirer(t)
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: c.index, Crawl: "crawl-0", Jobs: 2}); err != nil {
		t.Fatalf("index remove crawl-0: %v", err)
	}
	if err := os.Remove(c.requirer); err != nil {
		t.Fatal(err)
	}
	opt.afterHash = func() {
		c.writeNote(t, e)
		before = c.snapshot(t)
	}
	r, err := Run(context.Background(), opt)
	msg, failed := failure(r, err)
	if !failed {
		return
	}
	t.Logf("run: %s", msg)
	for _, p := range before.changed(t) {
		t.Errorf("%s rewritten, and the run failed: %s", p, msg)
	}
}

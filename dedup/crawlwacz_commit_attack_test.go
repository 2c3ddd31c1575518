package dedup

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"warcdedup/crawlindex"
)

// committedCrawls are the names of the crawls the index at dir records.
func committedCrawls(t *testing.T, dir string) []string {
	t.Helper()
	ix, err := crawlindex.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range ix.Registry.Crawls {
		names = append(names, k.Name)
	}
	return names
}

// TestRunIndexWACZRequirerRefusedCommitsLaterAttack: crawl-1's run
// rewrites the package crawl-0's committed requirer requires, and the
// requirer cannot be written anew (immutable, chattr +i: its refresh is
// refused, its entry left stale). The run exits 1 without committing.
// Once the requirer can be written again, a few runs again must commit
// crawl-1; a refusal that leaves no member's new version beside a
// package must not keep the crawl uncommitted for ever.
func TestRunIndexWACZRequirerRefusedCommitsLaterAttack(t *testing.T) {
	if err := exec.Command("chattr", "-i", t.TempDir()).Run(); err != nil {
		t.Skipf("chattr: %v", err)
	}
	c := setUpCommittedRequirer(t)
	opt := c.rerun()
	locked := false
	opt.afterHash = func() {
		if out, err := exec.Command("chattr", "+i", c.requirer).CombinedOutput(); err != nil {
			t.Skipf("chattr +i: %v %s", err, out)
		}
		locked = true
	}
	defer exec.Command("chattr", "-i", c.requirer).Run()
	r, err := Run(context.Background(), opt)
	msg, failed := failure(r, err)
	if !locked || !failed {
		t.Fatalf("the run with the requirer immutable: failed %v (%s): the test proves nothing", failed, msg)
	}
	t.Logf("first run: %s", msg)
	if out, err := exec.Command("chattr", "-i", c.requirer).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v %s", err, out)
	}
	opt.afterHash = nil
	for i := 1; i <= 3; i++ {
		if slices.Contains(committedCrawls(t, c.index), "crawl-1") {
			return
		}
		r, err := Run(context.Background(), opt)
		msg, failed := failure(r, err)
		t.Logf("run again %d: failed %v: %s", i, failed, msg)
	}
	if !slices.Contains(committedCrawls(t, c.index), "crawl-1") {
		t.Fatalf("three runs after the requirer's refusal, crawl-1 is still not committed (index has %v)", committedCrawls(t, c.index))
	}
}

package dedup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"warcdedup/stage"
)

// TestRemoveRestoreAfterUndoOfInterruptedRun: a run --index of crawl-2
// interrupted after its rewrite holds crawl-0 and crawl-1, which it
// joined. Undone, with no revisit of it left, it must let go: before the
// fix remove --restore crawl-0 stayed refused, and the --force it advised
// dropped the originals of crawl-1's committed revisits once the files
// were deleted.
func TestRemoveRestoreAfterUndoOfInterruptedRun(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir(), "crawl-0", "crawl-1")
	show, ctx := stopAfter(stage.RewriteName)
	if _, err := Run(ctx, Options{Collections: []string{filepath.Join(crawls, "crawl-2")}, Index: index, Jobs: 2, Display: show}); err == nil {
		t.Fatal("the run of crawl-2 was not interrupted after its rewrite")
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{filepath.Join(crawls, "crawl-2")}, Index: index, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo of the interrupted crawl-2: %v %+v", err, u)
	}
	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err == nil && res.Removed {
		if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
			t.Fatal(err)
		}
		checkRevisitsResolve(t, crawls)
		return
	}
	t.Errorf("remove --restore crawl-0 after the interrupted run was undone: refused: %v", err)
	// What the refusal advises.
	if res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Force: true}); err == nil && res.Removed {
		if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
			t.Fatal(err)
		}
		t.Logf("remove --force, as advised: removed, %d dependents named; crawl-0 deleted:", len(res.Dependents))
		checkRevisitsResolve(t, crawls)
	}
}

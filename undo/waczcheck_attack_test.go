package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoChecksMembersItDidNotRestore puts a package back as the run
// left it (deduplicated, from a copy) after an undo gave it back, and
// proves that the next undo, which has nothing to restore, reads its
// members and names them, exit status 1, as it names a WARC file put back
// so: it read no member it had not restored itself and exited 0 with the
// package's revisits there.
func TestUndoChecksMembersItDidNotRestore(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	pkg := filepath.Join(dir, "crawl-1-0.wacz")
	deduplicated, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u)
	}
	restored, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if string(restored) == string(deduplicated) {
		t.Fatal("the undo did not change crawl-1-0.wacz: the test proves nothing")
	}
	if err := os.WriteFile(pkg, deduplicated, 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo again: %v", err)
	}
	if u.Exit == 0 || len(u.Unrestored) == 0 {
		t.Errorf("undo with crawl-1-0.wacz deduplicated again: exit %d, unrestored %v; want it named, exit status 1", u.Exit, u.Unrestored)
	}
}

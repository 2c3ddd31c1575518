package undo

import (
	"context"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoAfterDryRunOfRevisitsFromBefore proves that an undo after a job
// that replaced nothing (a dry run; a first run killed before its rewrite
// is the same) exits 0 with every file as it was, on a collection whose
// files hold revisits in the form this toolchain writes from before the
// work directory (an earlier deduplication, here the generator's): they
// are unchanged since the job's hash stage read them, so no run of this
// work directory wrote them. The undo exited 1 naming each such file, and
// so did every undo after it: only --all, which rewrites those revisits,
// got past it.
func TestUndoAfterDryRunOfRevisitsFromBefore(t *testing.T) {
	dir, _ := jobtest.Generated(t, jobtest.AttackCfg)
	before := jobtest.HashTree(t, dir)
	if n := countWrittenForm(t, dir); n == 0 {
		t.Fatal("no revisit in the form this toolchain writes in the collection: the test proves nothing")
	}
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("dry run: %v", err)
	}
	for _, step := range []string{"undo", "undo again"} {
		u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
		if err != nil || u.Exit != 0 {
			t.Fatalf("%s after the dry run: %v, %+v", step, err, u)
		}
	}
	jobtest.SameTree(t, "after undo", jobtest.HashTree(t, dir), before)
}

// countWrittenForm counts the revisits in the form this toolchain writes
// in the files of dir.
func countWrittenForm(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.warc*"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		n, _, err := countWrittenRevisits(f, filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

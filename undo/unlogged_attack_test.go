package undo

import (
	"context"
	"path/filepath"
	"strings"
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

// TestUndoNamesPackageWithRevisitsTheLogDoesNotName copies a package a
// run deduplicated into the collection under another name, and proves
// that the undo names its members, exit status 1, as it names a WARC
// file copied so: it looked for the members as files, found none, and
// exited 0 with revisits no run of its log wrote.
func TestUndoNamesPackageWithRevisitsTheLogDoesNotName(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	jobtest.CopyFile(t, filepath.Join(dir, "crawl-1-0.wacz"), filepath.Join(dir, "copied.wacz"))
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	named := false
	for _, f := range u.Unlogged {
		named = named || strings.HasPrefix(f, "copied.wacz#")
	}
	if u.Exit == 0 || !named {
		t.Errorf("undo with a deduplicated package copied in: exit %d, unlogged %v; want copied.wacz's members named, exit status 1", u.Exit, u.Unlogged)
	}
}

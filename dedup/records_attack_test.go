package dedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"warcdedup/workdir"
)

// TestRecordsAfterFullDiskBroughtUpToDate: a run (after a run and an
// undo) whose fold of the work directory's records ran out of room on the
// disk completed its job, exit 1, naming the records not brought up to
// date. Before the fix every rerun said nothing to do, exit 1 with the old
// error, and deps.tsv kept the dependencies of before the run (none of its
// revisits'), fixity.tsv its undo's state, until the collection changed: a
// user choosing from deps.tsv which files may move breaks replay. The same
// command with room again brings them to what an uninterrupted run writes,
// exit 0.
func TestRecordsAfterFullDiskBroughtUpToDate(t *testing.T) {
	src, _ := generated(t, attackCfg)
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, src, ref)
	refWd := filepath.Join(t.TempDir(), "refwork")
	if r := runOn(t, ref, refWd); r.Report.Exit != 0 {
		t.Fatalf("reference run: exit %d %v", r.Report.Exit, r.Report.ExitReason)
	}
	undone := filepath.Join(t.TempDir(), "coll")
	copyTree(t, src, undone)
	undoneWd := undone + ".work"
	runOn(t, undone, undoneWd)
	if _, err := Undo(context.Background(), UndoOptions{Paths: []string{undone}, WorkDir: undoneWd, Jobs: 2}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	// The work directory's temporary files on a small file system: the
	// smallest size at which the run gets to its fold, and the fold runs
	// out of room.
	var dir, wd string
	for _, size := range []string{"8k", "16k", "32k", "48k", "64k", "96k", "128k", "192k", "256k", "384k", "512k"} {
		try := t.TempDir()
		dir, wd = filepath.Join(try, "coll"), filepath.Join(try, "coll.work")
		copyTree(t, undone, dir)
		copyTree(t, undoneWd, wd)
		mountSmallTmpfs(t, filepath.Join(wd, workdir.TmpDir), size)
		res, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
		if err != nil {
			continue // stopped before the fold: more room
		}
		if res.Report.Exit == 1 && len(res.Report.ExitReason) > 0 && strings.Contains(strings.Join(res.Report.ExitReason, " "), "not brought up to date") {
			t.Logf("with %s for temporary files: exit 1, %v", size, res.Report.ExitReason)
			break
		}
		if res.Report.Exit == 0 {
			t.Fatalf("no size made the fold alone run out of room (%s was enough)", size)
		}
	}
	// Room again: the temporary files' file system is taken away.
	if err := syscall.Unmount(filepath.Join(wd, workdir.TmpDir), syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	// The same command again.
	res := runOn(t, dir, wd)
	for _, f := range []string{workdir.DepsFile, workdir.FixityFile} {
		got, _ := os.ReadFile(filepath.Join(wd, f))
		want, _ := os.ReadFile(filepath.Join(refWd, f))
		if !bytes.Equal(got, want) {
			t.Errorf("%s after the rerun: %d lines, an uninterrupted run's %d", f, bytes.Count(got, []byte("\n")), bytes.Count(want, []byte("\n")))
		}
	}
	if res.Report.Exit != 0 {
		t.Errorf("the rerun with room on the disk: exit %d (nothing to do: %v) %v", res.Report.Exit, res.NothingToDo, res.Report.ExitReason)
	}
}

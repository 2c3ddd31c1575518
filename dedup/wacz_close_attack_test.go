package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// collectionFilesOpen are the files under dir this process has open (a
// name removed shows as " (deleted)").
func collectionFilesOpen(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}

// TestRunUndoWACZClosesPackagesAttack: the packages a run or an undo
// wrote anew are closed on other goroutines (packageRebuild.close); once
// Run or Undo returns, none of the collection's files is open, the
// versions replaced (their names gone) included: nothing a caller then
// reads, removes or renames is held by the job, and the blocks of the
// versions replaced are free. An undo after the run, on the same
// packages, reopens every name the run's closes had open.
func TestRunUndoWACZClosesPackagesAttack(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("run: exit %d %v, %d revisits written", r.Report.Exit, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	if open := collectionFilesOpen(t, dir); len(open) > 0 {
		t.Fatalf("open after the run: %v", open)
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u.Exit != 0 {
		t.Fatalf("undo: exit %d %v", u.Exit, u.ExitReason)
	}
	if open := collectionFilesOpen(t, dir); len(open) > 0 {
		t.Fatalf("open after the undo: %v", open)
	}
}

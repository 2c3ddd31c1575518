package dedup

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUndoWACZRefusedForSpace: an undo of a WACZ job on a file system
// that cannot hold the copies of the members it restores at their
// restored size (larger than they are: the revisits become whole records
// again) and the packages written anew around them is refused before
// anything is copied (exit status 2 as a run's refusal, naming the file
// system; every package bit for bit as the run left it, no copy or
// temporary file left), and the same undo finishes once there is room,
// every package given back as it was before the run.
func TestUndoWACZRefusedForSpace(t *testing.T) {
	c := newSmallWACZ(t, false, fourTimes)
	dir, size := c.dir, c.size
	before := hashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if r := runOK(t, "run with room", Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); r.Report.Totals.RevisitsWritten == 0 {
		t.Fatal("the run wrote no revisit: the undo has nothing to give back")
	}
	deduplicated := hashTree(t, dir)
	now, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	after := sizeOf(t, now...)
	if after >= size {
		t.Fatalf("the run left %d bytes of %d: the undo needs no more room, the test proves nothing", after, size)
	}
	// Room beside the packages for a copy of every member as it is now,
	// and a tenth more: not for those copies once restored, larger by
	// what the run saved (without the check, the undo copies them all
	// and the disk fills in the restore).
	remountTmpfs(t, dir, usedBytes(t, dir)+after+after/10)

	undo := exec.Command(binPath, "undo", "-q", "-j", "2", "--work-dir", wd, dir)
	out, err := undo.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not enough free space") || !strings.Contains(string(out), dir) ||
		!strings.Contains(string(out), "members to restore") {
		t.Fatalf("undo on a file system too small: %v, want exit status 2 saying there is not enough free space in %s:\n%s", err, dir, out)
	}
	t.Logf("refused: %s", out)
	sameTree(t, "after the refused undo", hashTree(t, dir), deduplicated)
	if left, err := filepath.Glob(filepath.Join(dir, ".*")); err != nil || len(left) > 0 {
		t.Errorf("left beside the packages after the refused undo: %v %v", left, err)
	}

	remountTmpfs(t, dir, 4*size)
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
		t.Fatalf("undo with room: %v, %+v", err, u)
	}
	if u.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: undo promises them bit for bit here", u.BytesDiffer)
	}
	sameTree(t, "after the undo with room", hashTree(t, dir), before)
	if left, err := filepath.Glob(filepath.Join(dir, ".*")); err != nil || len(left) > 0 {
		t.Errorf("left beside the packages after the undo: %v %v", left, err)
	}
}

// usedBytes is what the files on the file system of dir take.
func usedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Blocks-fs.Bfree) * fs.Bsize
}

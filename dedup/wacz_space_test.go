package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warcdedup/stage"
)

// TestRunWACZRefusedForSpace: a WACZ job on a file system that cannot
// hold the copies of the members with duplicates and the packages
// written at once is refused before anything is copied (every package
// as it was, no copy left), and the same command finishes the job once
// there is room.
func TestRunWACZRefusedForSpace(t *testing.T) {
	// Room for the collection and a tenth more: not for a copy of its
	// members.
	c := newSmallWACZ(t, false, func(size int64) int64 { return size + size/10 + 64<<10 })
	dir, size := c.dir, c.size
	opt := Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2}
	refusedForSpace(t, "run on a file system too small", opt, dir, dir)
	remountTmpfs(t, dir, 4*size)
	if r := runOK(t, "rerun with room", opt); r.Report.Totals.RevisitsWritten == 0 {
		t.Fatal("the rerun with room wrote no revisit")
	}
}

// sizeOf is the bytes of the files.
func sizeOf(t *testing.T, files ...string) int64 {
	t.Helper()
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	return size
}

// copyFilesTo copies the files into dir, by their base names.
func copyFilesTo(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// refusedForSpace runs opt, which must be refused for want of space
// before anything changes: stage.ErrNoSpace naming root (where the file
// system is short), every file under root as it was, no hidden file
// (a copy, a temporary file) left in any of dirs.
func refusedForSpace(t *testing.T, what string, opt Options, root string, dirs ...string) {
	t.Helper()
	before := hashTree(t, root)
	r, err := Run(context.Background(), opt)
	if !errors.Is(err, stage.ErrNoSpace) || !strings.Contains(err.Error(), root) {
		msg, _ := failure(r, err)
		t.Fatalf("%s: %s, want %v naming %s", what, msg, stage.ErrNoSpace, root)
	}
	sameTree(t, "after the refusal", hashTree(t, root), before)
	for _, d := range dirs {
		left, err := filepath.Glob(filepath.Join(d, ".*"))
		if err != nil || len(left) > 0 {
			t.Errorf("left beside the packages: %v %v", left, err)
		}
	}
}

// smallWACZ is a generated WACZ collection (generatedWACZ) copied onto
// a tmpfs of its own (mountSmallTmpfs): the set-up of the tests of what
// a job does when the disk is too small.
type smallWACZ struct {
	src  string // the generated collection
	dir  string // its copy, on the tmpfs
	size int64  // the bytes of its files
}

// newSmallWACZ generates a WACZ collection (loose as generatedWACZ takes
// it) and copies it onto a new tmpfs of room(size) bytes.
func newSmallWACZ(t *testing.T, loose bool, room func(size int64) int64) smallWACZ {
	t.Helper()
	src, _ := generatedWACZ(t, loose)
	files, err := filepath.Glob(filepath.Join(src, "*"))
	if err != nil {
		t.Fatal(err)
	}
	c := smallWACZ{src: src, dir: filepath.Join(t.TempDir(), "small"), size: sizeOf(t, files...)}
	mountSmallTmpfs(t, c.dir, fmt.Sprint(room(c.size)))
	copyFilesTo(t, c.dir, files...)
	return c
}

// fourTimes is room for a collection, its staged copies and a new
// version of each package: a job that fits.
func fourTimes(size int64) int64 { return 4 * size }

// remountTmpfs gives the tmpfs at dir (mountSmallTmpfs) size bytes.
func remountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprint("size=", size)); err != nil {
		t.Fatalf("remounting with room: %v", err)
	}
}

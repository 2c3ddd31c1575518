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
	src, _ := generatedWACZ(t, false)
	dir := filepath.Join(t.TempDir(), "small")
	var size int64
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	// Room for the collection and a tenth more: not for a copy of its
	// members.
	mountSmallTmpfs(t, dir, fmt.Sprint(size+size/10+64<<10))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}
	_, err = Run(context.Background(), opt)
	if !errors.Is(err, stage.ErrNoSpace) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("run on a file system too small: %v, want %v naming %s", err, stage.ErrNoSpace, dir)
	}
	sameTree(t, "after the refusal", hashTree(t, dir), before)
	left, err := filepath.Glob(filepath.Join(dir, ".*"))
	if err != nil || len(left) > 0 {
		t.Errorf("left beside the packages: %v %v", left, err)
	}

	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprint("size=", 4*size)); err != nil {
		t.Fatalf("remounting with room: %v", err)
	}
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("rerun with room: %v, %+v", err, r)
	}
}

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

	"warcdedup/scripts/gen"
	"warcdedup/stage"
)

// TestRunWACZWithWARCRefusedForSpaceAttack: a collection of small WACZ
// packages beside a large WARC file with duplicates, on a file system
// with room for the packages' copies and rebuilds but not for the WARC
// file's new version, which the rewrite writes while the copies are
// there. The check counted the new versions of members alone: it let the
// job begin, the members were copied, and the disk filled part-way in
// the rewrite of the WARC file. The job must be refused before anything
// is copied (every file as it was, nothing left beside them), and finish
// once there is room.
func TestRunWACZWithWARCRefusedForSpaceAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	big, _ := generated(t, gen.Config{Files: 1, Records: 300, DupRate: 0.4, Seed: 5, MeanPayload: 64 << 10,
		Formats: []gen.Format{gen.WARC10Gz}, Prefix: "big", NonCandidates: true})
	dir := filepath.Join(t.TempDir(), "small")
	var packages, warcs int64
	var files []string
	for _, d := range []string{src, big} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(e.Name(), ".wacz") {
				packages += fi.Size()
			} else {
				warcs += fi.Size()
			}
			files = append(files, filepath.Join(d, e.Name()))
		}
	}
	// Room for the collection, and for the packages four times over
	// (their copies, new versions and rebuilds): not for the new version
	// of the WARC file, which keeps more than half of it.
	room := 4*packages + 64<<10
	if warcs/2 <= room {
		t.Fatalf("the WARC file (%d bytes) is not large enough beside the packages (%d bytes): the test proves nothing", warcs, packages)
	}
	mountSmallTmpfs(t, dir, fmt.Sprint(packages+warcs+room))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, dir)
	opt := Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2}
	_, err := Run(context.Background(), opt)
	if !errors.Is(err, stage.ErrNoSpace) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("run on a file system too small for the WARC file's new version: %v, want %v naming %s", err, stage.ErrNoSpace, dir)
	}
	sameTree(t, "after the refusal", hashTree(t, dir), before)
	left, err := filepath.Glob(filepath.Join(dir, ".*"))
	if err != nil || len(left) > 0 {
		t.Errorf("left beside the packages: %v %v", left, err)
	}

	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprint("size=", 4*(packages+warcs))); err != nil {
		t.Fatalf("remounting with room: %v", err)
	}
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("rerun with room: %v, %+v", err, r)
	}
}

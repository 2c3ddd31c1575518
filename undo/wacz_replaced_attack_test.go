//go:build linux

package undo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/progress"
)

// TestUndoWACZReplacedWhileStagedSaysWhatToRemove makes an undo leave a
// package's restored members staged beside it (its new version could not
// be put in place: immutable), then puts another package in its place
// (none of its members has their names), and proves that the next undo,
// which refuses to finish the package, names the staged copy to remove
// to keep it as it is, as it does for a member changed meanwhile: it said
// only that the package no longer has the member, and every run and undo
// after stopped there (exit status 2) with nothing saying what to do.
func TestUndoWACZReplacedWhileStagedSaysWhatToRemove(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	pkg := filepath.Join(dir, "crawl-1-0.wacz")
	if out, err := exec.Command("chattr", "+i", pkg).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable (not root, or the file system does not allow it): %v %s", pkg, err, out)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if out, cerr := exec.Command("chattr", "-i", pkg).CombinedOutput(); cerr != nil {
		t.Fatalf("chattr -i %s: %v %s", pkg, cerr, out)
	}
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with %s immutable", pkg)
	}
	staged, err := filepath.Glob(filepath.Join(dir, ".crawl-1-0.wacz#*.warcdedup-member"))
	if err != nil || len(staged) == 0 {
		t.Fatalf("no staged copy of crawl-1-0.wacz's members kept (%v): the test proves nothing", err)
	}
	other, err := os.ReadFile(filepath.Join(dir, "crawl-0-0.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pkg, other, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2, Display: progress.NewPlain(&out, "test")})
	if err == nil && again.Exit == 0 {
		t.Fatalf("undo exited 0 with %s replaced while its restored members were staged", pkg)
	}
	named := false
	for _, s := range staged {
		if _, err := os.Stat(s); err != nil {
			t.Errorf("the staged copy %s is gone: %v", s, err)
		}
		named = named || strings.Contains(out.String(), "remove "+s)
	}
	if !named {
		t.Errorf("the undo's refusal names no staged copy to remove to keep the package as it is (%v); it said:\n%s", staged, out.String())
	}
}

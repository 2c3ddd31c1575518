//go:build linux

package undo

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoWACZPackageNotPutFinishedNextTime makes the rebuild of one
// package fail where the new version is put in place of it (the package
// immutable: the exchange is refused, as a full disk refuses writing the
// new version), after the undo restored and logged its members, and
// proves that the undo says so (exit status not 0) and that the next undo
// finishes the package from its members' logged versions, left staged
// beside it: every package is then the file it was. The undo removed the
// staged versions; the log named them, the package held the deduplicated
// members, and the next undo found nothing to restore and exited 0 with
// every revisit of the package still there.
func TestUndoWACZPackageNotPutFinishedNextTime(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	before := jobtest.HashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	pkg := filepath.Join(dir, "crawl-1-0.wacz")
	if jobtest.HashTree(t, dir)["crawl-1-0.wacz"] == before["crawl-1-0.wacz"] {
		t.Fatal("crawl-1-0.wacz was not rewritten: the test proves nothing")
	}
	if out, err := exec.Command("chattr", "+i", pkg).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable (not root, or the file system does not allow it): %v %s", pkg, err, out)
	}
	mutable := func() {
		if out, err := exec.Command("chattr", "-i", pkg).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v %s", pkg, err, out)
		}
	}
	t.Cleanup(mutable)
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with %s immutable", pkg)
	}
	mutable()
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo again: %v, %+v", err, again)
	}
	if u.BytesDiffer+again.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer+again.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo refused and the next", jobtest.HashTree(t, dir), before)
}

// TestUndoWACZRequirerNotPutAroundItsMembers makes the rebuild of a
// package around its restored members fail (the metadata kept of it
// before the run damaged, so that neither its datapackage.json nor its
// fallback can be written: refused), while the package requires another
// the undo wrote anew, so that the undo then writes it anew to bring its
// requires entry up to date, copying its deduplicated members. It proves
// that the staged versions the log names stay (that rebuild is no rebuild
// around them) and that the next undo, the metadata mended, finishes the
// package: every package is then the file it was.
func TestUndoWACZRequirerNotPutAroundItsMembers(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	before := jobtest.HashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	requirer, _ := jobtest.RequiredByHash(t, dir)
	saved := filepath.Join(wd, "wacz-metadata", url.PathEscape(requirer)+".json")
	good, err := os.ReadFile(saved)
	if err != nil {
		t.Fatalf("the metadata kept of %s: %v", requirer, err)
	}
	if err := os.WriteFile(saved, []byte(`{"package":"`+requirer+`","datapackage":"bm90IEpTT04=","digest":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with the metadata of %s damaged", requirer)
	}
	if err := os.WriteFile(saved, good, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo again: %v, %+v", err, again)
	}
	if u.BytesDiffer+again.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer+again.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo refused and the next", jobtest.HashTree(t, dir), before)
}

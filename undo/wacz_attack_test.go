package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
)

// TestUndoWACZStoppedBeforeRenameGivesMetadataBack puts each package in
// the state an undo killed between logging its restored members and
// renaming the package's new version over it leaves (the deduplicated
// package in place, its members as before the run staged beside it, the
// log naming them restored, the metadata before the run still kept), and
// proves that the next undo gives every package back bit for bit,
// datapackage.json, digest file and ZIP times included, as an undo that
// was not stopped does: the members are then restored already, so the
// finishing of the stopped package is the only time its metadata can
// come back, and an exit status 0 with the run's datapackage.json (its
// requires entries, new hashes and times) would break the promise.
func TestUndoWACZStoppedBeforeRenameGivesMetadataBack(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	before := jobtest.HashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	packages, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil || len(packages) == 0 {
		t.Fatalf("no packages: %v", err)
	}
	deduplicated := map[string][]byte{}
	for _, p := range packages {
		if deduplicated[p], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	metadata := filepath.Join(t.TempDir(), "wacz-metadata")
	jobtest.CopyTree(t, filepath.Join(wd, "wacz-metadata"), metadata)
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u)
	}
	if u.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo", jobtest.HashTree(t, dir), before)
	// Stopped before each package's rename: the undo's staged members
	// beside the deduplicated package, the metadata kept as the undo
	// found it.
	staged := 0
	for _, p := range packages {
		staged += jobtest.StopRebuild(t, p, deduplicated[p])
	}
	if staged == 0 {
		t.Fatal("no member was restored: the test proves nothing")
	}
	if err := os.RemoveAll(filepath.Join(wd, "wacz-metadata")); err != nil {
		t.Fatal(err)
	}
	jobtest.CopyTree(t, metadata, filepath.Join(wd, "wacz-metadata"))
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo after the stop: %v, %+v", err, again)
	}
	jobtest.SameTree(t, "after the undo stopped before its renames and the next undo", jobtest.HashTree(t, dir), before)
	jobtest.CheckPackages(t, dir)
}

// TestUndoStoppedBeforeRenameBringsRequirersUpToDate puts a package that
// another requires by hash in the state an undo of it alone leaves when
// killed between logging its restored members and renaming the package's
// new version over it (the requirer not yet brought up to date), and
// proves that the next undo, which finishes the package from its staged
// members and then has nothing left to restore, brings the requirer's
// entry up to date: it exited 0 with the entry naming the package's
// deduplicated SHA-256.
func TestUndoStoppedBeforeRenameBringsRequirersUpToDate(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	requirer, required := jobtest.RequiredByHash(t, dir)
	pkg, req := filepath.Join(dir, required), filepath.Join(dir, requirer)
	deduplicated, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	requiring, err := os.ReadFile(req)
	if err != nil {
		t.Fatal(err)
	}
	metadata := filepath.Join(t.TempDir(), "wacz-metadata")
	jobtest.CopyTree(t, filepath.Join(wd, "wacz-metadata"), metadata)
	if u, err := Run(context.Background(), Options{Paths: []string{pkg}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
		t.Fatalf("undo %s: %v, %+v", required, err, u)
	}
	// Stopped before the rename: the requirer as the run left it.
	if jobtest.StopRebuild(t, pkg, deduplicated) == 0 {
		t.Fatalf("no member of %s was restored: the test proves nothing", required)
	}
	if err := os.WriteFile(req, requiring, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(wd, "wacz-metadata")); err != nil {
		t.Fatal(err)
	}
	jobtest.CopyTree(t, metadata, filepath.Join(wd, "wacz-metadata"))
	u, err := Run(context.Background(), Options{Paths: []string{pkg}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo %s after the stop: %v, %+v", required, err, u)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo stopped and the next: stale entries %v", s)
	}
	jobtest.CheckPackages(t, dir)
}

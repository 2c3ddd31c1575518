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

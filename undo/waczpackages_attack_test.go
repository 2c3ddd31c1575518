package undo

import (
	"context"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// TestUndoCheckOpensEachPackageOnce proves that the undo's reads of WACZ
// members from their packages (the check of the members it did not
// restore, the stamps of those the log does not name) open each package
// once, however many members it has: one open per member parsed the
// package's directory and datapackage.json, which lists every member, for
// each, so that an undo of a package of M members cost M*M (1,200 members:
// 8 s, where the undo before those reads took 0.06 s).
func TestUndoCheckOpensEachPackageOnce(t *testing.T) {
	cfg := gen.Config{Files: 16, Records: 320, DupRate: 0.4, Seed: 5, MeanPayload: 2 << 10, Sequential: true,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10}}
	dir, res := jobtest.Generated(t, cfg)
	if _, err := waczgen.Write(dir, res, waczgen.Config{Packages: 1}); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	if u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 1}); err != nil || u.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u)
	}
	// The undo again has nothing to restore: it reads every member the
	// log names from the package, and stamps the others.
	u, files, err := openUndo(Options{Paths: []string{dir}, WorkDir: wd, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer u.close()
	if err := u.run(context.Background(), files); err != nil {
		t.Fatalf("undo again: %v", err)
	}
	if u.res.Checked < 4 {
		t.Fatalf("undo again read %d members from the package: the test proves nothing", u.res.Checked)
	}
	// One open for the check of the members, one for their stamps.
	if u.packagesOpened > 2 {
		t.Errorf("undo again of one package of %d members (%d read for the check) opened it %d times; want at most 2 (once per pass)", len(files), u.res.Checked, u.packagesOpened)
	}
}

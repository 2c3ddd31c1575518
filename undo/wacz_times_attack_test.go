package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// TestUndoWACZInTwoStepsGivesTimesBack undoes a run while one package is
// away, so that some packages get only some of their members back (the
// others' originals are in the package away), puts the package back and
// undoes again, and proves that every package is then the file it was,
// bit for bit: the members the first undo gave back keep the ZIP times
// they had before the run, which the second undo's rebuild, putting the
// metadata back, copies as they are.
func TestUndoWACZInTwoStepsGivesTimesBack(t *testing.T) {
	// Three members a package, few of their duplicates across files.
	cfg := gen.Config{Files: 9, Records: 300, DupRate: 0.3, Seed: 1, MeanPayload: 2 << 10, NonCandidates: true,
		Chunked: 0.05, SameURL: 0.4, CrossFile: 0.2, Formats: []gen.Format{gen.WARC10Gz, gen.WARC10}}
	dir, res := jobtest.Generated(t, cfg)
	if _, err := waczgen.Write(dir, res, waczgen.Config{Packages: 3}); err != nil {
		t.Fatal(err)
	}
	before := jobtest.HashTree(t, dir)
	beforeCRC := memberCRCs(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	away := filepath.Join(dir, "crawl-0-0.wacz")
	kept := filepath.Join(t.TempDir(), "crawl-0-0.wacz")
	if err := os.Rename(away, kept); err != nil {
		t.Fatal(err)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit == 0 {
		t.Fatalf("undo with %s away: %v, exit %d", away, err, u.Exit)
	}
	// Some package has members back and members not.
	partly := false
	now := memberCRCs(t, dir)
	for pkg, members := range now {
		back, not := 0, 0
		for name, crc := range members {
			if beforeCRC[pkg][name] == crc {
				back++
			} else {
				not++
			}
		}
		partly = partly || back > 0 && not > 0
	}
	if !partly {
		t.Fatal("no package has only some of its members back: the test proves nothing")
	}
	if err := os.Rename(kept, away); err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo with every package there: %v, %+v", err, again)
	}
	if u.BytesDiffer+again.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer+again.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo in two steps", jobtest.HashTree(t, dir), before)
}

// memberCRCs are the CRC-32 of the WARC members of each package of dir,
// by package and member name.
func memberCRCs(t *testing.T, dir string) map[string]map[string]uint32 {
	t.Helper()
	packages, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]uint32{}
	for _, path := range packages {
		p, err := wacz.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(path)] = map[string]uint32{}
		for _, m := range p.WARCs() {
			out[filepath.Base(path)][m.Name] = m.CRC32
		}
		p.Close()
	}
	return out
}

package undo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
)

// TestUndoNamesMovedFile: a file the run deduplicated, then moved,
// renamed or deleted within the collection, keeps the revisits the log
// names under its old name. The undo of the collection must not exit 0 as
// if it were restored: it names it (and where it is now, if it finds a
// file of its size and SHA-256).
func TestUndoNamesMovedFile(t *testing.T) {
	cfg := jobtest.AttackCfg
	cfg.Sequential = true // the moved file, the last, holds no original of the others
	src, res := jobtest.Generated(t, cfg)
	for _, tc := range []struct {
		name string
		do   func(dir, file string) error
		// where is the file's new name the undo should say it found, "" for none.
		where func(file string) string
	}{
		{"moved into a subdirectory", func(dir, file string) error {
			if err := os.MkdirAll(filepath.Join(dir, "2024"), 0o755); err != nil {
				return err
			}
			return os.Rename(filepath.Join(dir, file), filepath.Join(dir, "2024", file))
		}, func(file string) string { return "2024/" + file }},
		{"renamed", func(dir, file string) error {
			return os.Rename(filepath.Join(dir, file), filepath.Join(dir, "renamed-"+file))
		}, func(file string) string { return "renamed-" + file }},
		{"deleted", func(dir, file string) error {
			return os.Remove(filepath.Join(dir, file))
		}, func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			jobtest.CopyTree(t, src, dir)
			original := jobtest.HashUncompressed(t, dir)
			wd := dir + ".work"
			if r := runOn(t, dir, wd); r.Report.Exit != 0 {
				t.Fatalf("run: exit %d %v", r.Report.Exit, r.Report.ExitReason)
			}
			victim := res.Names[len(res.Names)-1]
			if jobtest.HashUncompressed(t, dir)[victim] == original[victim] {
				t.Fatalf("the run did not rewrite %s", victim)
			}
			if err := tc.do(dir, victim); err != nil {
				t.Fatal(err)
			}
			u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
			if err != nil {
				t.Logf("undo stopped: %v", err)
				return
			}
			named := strings.Contains(strings.Join(append(u.ExitReason, u.Refused...), " "), victim) ||
				strings.Contains(strings.Join(u.Unrestored, " "), victim)
			t.Logf("undo: exit %d %v", u.Exit, u.ExitReason)
			if u.Exit == 0 || !named {
				t.Errorf("undo: exit %d, %d files checked; %s, which the log names, %s and not named: %v", u.Exit, u.Checked, victim, tc.name, u.ExitReason)
			}
			if where := tc.where(victim); where != "" && !strings.Contains(strings.Join(u.Missing, " "), where+" has its size and sum") {
				t.Errorf("undo does not say %s is now %s: %v", victim, where, u.Missing)
			}
		})
	}
}

// TestUndoOfRestoredWorkDirSaysWhatItLeft: a work directory restored from
// a copy made before the last run has a rewrite log that does not name the
// files that run rewrote. Its undo must not exit 0 while they keep the
// revisits this toolchain wrote: it names them, and undo --all, which it
// advises, makes them whole records.
func TestUndoOfRestoredWorkDirSaysWhatItLeft(t *testing.T) {
	cfg := jobtest.AttackCfg
	cfg.Sequential = true // the last file is the latest crawl: only it is rewritten by the second run
	src, res := jobtest.Generated(t, cfg)
	dir := filepath.Join(t.TempDir(), "coll")
	jobtest.CopyTree(t, src, dir)
	original := jobtest.HashUncompressed(t, dir)
	late := res.Names[len(res.Names)-1]
	held := filepath.Join(t.TempDir(), "held")
	if err := os.Rename(filepath.Join(dir, late), held); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "work")
	runOn(t, dir, wd)
	backup := filepath.Join(t.TempDir(), "work-backup")
	jobtest.CopyTree(t, wd, backup)
	if err := os.Rename(held, filepath.Join(dir, late)); err != nil {
		t.Fatal(err)
	}
	if r := runOn(t, dir, wd); r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("second run: exit %d, %d revisits", r.Report.Exit, r.Report.Totals.RevisitsWritten)
	}
	lateAfterRun := jobtest.HashUncompressed(t, dir)[late]
	if lateAfterRun == original[late] {
		t.Fatalf("the second run did not rewrite %s", late)
	}
	if err := os.RemoveAll(wd); err != nil {
		t.Fatal(err)
	}
	jobtest.CopyTree(t, backup, wd)
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	now := jobtest.HashUncompressed(t, dir)
	t.Logf("undo: exit %d %v; %s restored: %v; files %d", u.Exit, u.ExitReason, late, now[late] == original[late], u.Files)
	if u.Exit == 0 && now[late] != original[late] {
		t.Errorf("undo exited 0 (%d files checked, nothing named) while %s keeps the revisits a run of this toolchain wrote", u.Checked, late)
	}
	if !strings.Contains(strings.Join(u.ExitReason, " "), late) {
		t.Errorf("undo does not name %s: %v", late, u.ExitReason)
	}
	// What it advises: --all makes them whole records (and the
	// generator's own revisit in each file, other tools' revisits).
	u, err = Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2, All: true})
	if err != nil {
		t.Fatalf("undo --all: %v", err)
	}
	if n, _, err := countWrittenRevisits(filepath.Join(dir, late), late); n > 0 || err != nil || u.Exit != 0 {
		t.Errorf("undo --all: exit %d %v; %d revisits left in %s (%v)", u.Exit, u.ExitReason, n, late, err)
	}
}

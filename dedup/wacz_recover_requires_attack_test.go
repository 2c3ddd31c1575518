package dedup

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/internal/jobtest"
)

// TestRunWACZRecoveredRequiresAttack attacks the requires entries after a
// stop and a rerun, and what later jobs and an undo make of them: a
// package whose entries a rerun gave back (Recover) or a new job added
// (revisitOrigins) must end with the entries a clean run gives, a later
// job must write nothing anew (byte for byte), and an undo of the run
// must give each package back its datapackage.json's entries as before.
func TestRunWACZRecoveredRequiresAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	stopAll := func(t *testing.T, dir string) int {
		n := 0
		for _, p := range packagesIn(t, dir) {
			original, err := os.ReadFile(filepath.Join(src, p))
			if err != nil {
				t.Fatal(err)
			}
			n += jobtest.StopRebuild(t, filepath.Join(dir, p), original)
		}
		return n
	}
	loseAll := func(t *testing.T, dir string) int {
		n := 0
		for _, p := range packagesIn(t, dir) {
			n += dropRequires(t, filepath.Join(dir, p))
		}
		return n
	}
	cases := []struct {
		name string
		// damage puts the collection after the first run in the state
		// a stop (or the old Recover) leaves; newJob: the rerun in
		// another work directory.
		damage func(t *testing.T, dir string) int
		newJob bool
		// undoWith: the work directory the undo is given ("first",
		// "second", "" for no undo).
		undoWith string
	}{
		{"stopped, recovered, a third job writes nothing", stopAll, false, ""},
		{"lost, added by a new job, a third job writes nothing", loseAll, true, ""},
		{"stopped, recovered, then undone", stopAll, false, "first"},
		{"lost, added by a new job, the first job undone", loseAll, true, "first"},
	}
	before := packageRequires(t, src)
	clean := filepath.Join(t.TempDir(), "clean")
	copyTree(t, src, clean)
	if r, err := Run(context.Background(), Options{Collections: []string{clean}, WorkDir: clean + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("clean run: %v %v", err, r.Report.ExitReason)
	}
	want := packageRequires(t, clean)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			copyTree(t, src, dir)
			first := dir + ".work"
			if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: first, Jobs: 1}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			if c.damage(t, dir) == 0 {
				t.Fatal("nothing staged or lost: the test proves nothing")
			}
			second := first
			if c.newJob {
				second = dir + ".work2"
			}
			if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: second, Jobs: 1}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("the rerun: %v %v", err, r.Report.ExitReason)
			}
			checkRequires(t, dir, want)
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("left beside the packages: %v", left)
			}
			settled := hashTree(t, dir)
			if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: dir + ".work3", Jobs: 1}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("a third job: %v %v", err, r.Report.ExitReason)
			}
			sameTree(t, "after a third job", hashTree(t, dir), settled)
			if c.undoWith == "" {
				return
			}
			wd := first
			if c.undoWith == "second" {
				wd = second
			}
			u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 1})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo: %v, %+v", err, u)
			}
			got := packageRequires(t, dir)
			for _, n := range slices.Sorted(maps.Keys(before)) {
				if g, w := requiredNames(got[n]), requiredNames(before[n]); !slices.Equal(g, w) {
					t.Errorf("%s requires %v after the undo, %v before the first run", n, g, w)
				}
			}
		})
	}
}

func packagesIn(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		out = append(out, filepath.Base(n))
	}
	return out
}

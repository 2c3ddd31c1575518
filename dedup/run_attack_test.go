package dedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// TestWorkDirOfAnotherCollection: a run of collection B given the work
// directory of collection A (copied, or --work-dir mistyped) took A's
// rewrite log as B's: exit 0, fixity.tsv giving B's files A's SHA-256, and
// an undo of B that followed A's entries and refused every file. The run
// refuses a work directory whose log does not describe the files (and
// takes A's own, A moved).
func TestWorkDirOfAnotherCollection(t *testing.T) {
	cfgB := attackCfg
	cfgB.Seed = 12
	srcA, _ := generated(t, attackCfg)
	srcB, _ := generated(t, cfgB)
	a := filepath.Join(t.TempDir(), "a")
	copyTree(t, srcA, a)
	b := filepath.Join(t.TempDir(), "b")
	copyTree(t, srcB, b)
	originalB := hashUncompressed(t, b)
	beforeB := hashTree(t, b)
	if r := runOn(t, a, a+".work"); r.Report.Exit != 0 {
		t.Fatalf("run of A: exit %d %v", r.Report.Exit, r.Report.ExitReason)
	}
	// A moved (renamed) keeps its work directory: nothing to do.
	moved := filepath.Join(filepath.Dir(a), "a-moved")
	if err := os.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	if r, err := Run(context.Background(), Options{Collections: []string{moved}, WorkDir: a + ".work", Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Errorf("run of A moved, with its work directory: %v %+v", err, r)
	}
	copyTree(t, a+".work", b+".work")
	r, err := Run(context.Background(), Options{Collections: []string{b}, WorkDir: b + ".work", Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		if err == nil || !strings.Contains(err.Error(), "--work-dir") {
			t.Errorf("run of B with A's work directory: %v %+v; want it refused, naming --work-dir", err, r)
		}
		t.Logf("run of B with A's work directory: refused: %v", err)
		sameTree(t, "B after the refused run", hashTree(t, b), beforeB)
		return // refused: what it should do
	}
	for _, line := range readLines(t, filepath.Join(b+".work", workdir.FixityFile)) {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] != "#" && beforeB[f[0]] != "" && f[2] != beforeB[f[0]] {
			t.Errorf("fixity.tsv of B: %s had SHA-256 %s before, says %s (A's file's)", f[0], beforeB[f[0]], f[2])
			break
		}
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{b}, WorkDir: b + ".work", Jobs: 2})
	if err != nil {
		t.Fatalf("undo of B: %v", err)
	}
	if u.Exit != 0 {
		t.Errorf("undo of B, which its run deduplicated with exit 0: exit %d %v", u.Exit, stage.First(u.ExitReason, 3))
	}
	sameTree(t, "B undone (uncompressed)", hashUncompressed(t, b), originalB)
}

// TestRefusedFileTakenByRerun: a file the rewrite refused (a writer had
// it open; it had a second hard link) is one the refusal asks to run again
// for, once the writer closed it or with --hard-links. Before the fix that
// run said nothing to do, exit 1 with the old refusal, for ever: the
// completed job recorded the refused file's stamp as done. The run after
// it takes and rewrites the file, exit 0.
func TestRefusedFileTakenByRerun(t *testing.T) {
	src, res := generated(t, attackCfg)
	victim := res.Names[1]
	for _, tc := range []struct {
		name string
		// refuse makes the victim refused; after undoes that and returns
		// the options of the run after it.
		refuse func(t *testing.T, path string) (after func() Options)
	}{
		{"a writer had it open, and closed it", func(t *testing.T, path string) func() Options {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			return func() Options { f.Close(); return Options{} }
		}},
		{"a second hard link, then --hard-links", func(t *testing.T, path string) func() Options {
			if err := os.Link(path, filepath.Join(t.TempDir(), "backup.warc")); err != nil {
				t.Fatal(err)
			}
			return func() Options { return Options{HardLinks: true} }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			copyTree(t, src, dir)
			wd := dir + ".work"
			path := filepath.Join(dir, victim)
			before, _ := os.ReadFile(path)
			after := tc.refuse(t, path)
			r := runOn(t, dir, wd)
			if r.Report.Exit != 1 || r.Report.Totals.FilesRefused != 1 {
				t.Fatalf("first run: exit %d, %d files refused; want %s refused: %v", r.Report.Exit, r.Report.Totals.FilesRefused, victim, r.Report.ExitReason)
			}
			t.Logf("first run: %v", r.Report.ExitReason)
			opt := after()
			opt.Collections, opt.WorkDir, opt.Jobs = []string{dir}, wd, 2
			r, err := Run(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			now, _ := os.ReadFile(path)
			if bytes.Equal(now, before) || r.Report.Exit != 0 {
				t.Errorf("the run the refusal asked for: exit %d (nothing to do: %v) %v; %s rewritten: %v",
					r.Report.Exit, r.NothingToDo, r.Report.ExitReason, victim, !bytes.Equal(now, before))
			}
		})
	}
}

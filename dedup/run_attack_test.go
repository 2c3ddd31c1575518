package dedup

import (
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

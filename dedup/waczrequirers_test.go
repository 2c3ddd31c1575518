package dedup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/workdir"
)

// TestNamedWACZRefusesOutsideRequirers proves that a job on one package
// named alone, which would rewrite it while another package of its
// directory requires it by SHA-256 and size, is refused before anything
// is rewritten, with a message naming the requirer; and that a job
// naming both rewrites it and brings the requirer's entry up to date.
func TestNamedWACZRefusesOutsideRequirers(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	required, requirer := "crawl-0-0.wacz", "crawl-1-1.wacz"
	jobtest.RequireBy(t, filepath.Join(dir, requirer), filepath.Join(dir, required))
	before := hashTree(t, dir)
	_, err := Run(context.Background(), Options{Collections: []string{filepath.Join(dir, required)}, Jobs: 2})
	if err == nil || !strings.Contains(err.Error(), "packages outside it require") || !strings.Contains(err.Error(), requirer) {
		t.Fatalf("run %s: %v", required, err)
	}
	sameTree(t, "after the refused run", withoutWorkDirs(hashTree(t, dir)), before)
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left beside the packages: %v", left)
	}

	r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(dir, required), filepath.Join(dir, requirer)}, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run %s %s: %v", required, requirer, err)
	}
	if hashTree(t, dir)[required] == before[required] {
		t.Fatalf("%s was not rewritten: the test proves nothing", required)
	}
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Errorf("stale entries: %v", s)
	}
	checkPackages(t, dir)
}

// TestWACZRequirersAfterStop stops a run (as a kill would) after it wrote
// anew a package that another requires by hash but before it brought
// the requirer's entry up to date, and proves that the next run, which
// resumes the job at its rewrite and has nothing left to rewrite, brings
// it up to date.
func TestWACZRequirersAfterStop(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	requirer, required := jobtest.RequiredByHash(t, dir)
	if u, err := Undo(context.Background(), UndoOptions{Paths: []string{filepath.Join(dir, required)}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
		t.Fatalf("undo %s: %v", required, err)
	}
	stale, err := os.ReadFile(filepath.Join(dir, requirer)) // its entry names required as undone
	if err != nil {
		t.Fatal(err)
	}
	// Its work files kept, as a stopped run has them.
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, KeepWork: true}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run again: %v", err)
	}
	// The stop: the requirer as it was, the job back at its rewrite.
	if err := os.WriteFile(filepath.Join(dir, requirer), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := staleRequires(t, dir); len(s) == 0 {
		t.Fatal("no stale entry after the simulated stop: the test proves nothing")
	}
	wdir, err := workdir.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readState(wdir)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(st.Done, stageRewriteStarted)
	if i < 0 {
		t.Fatalf("state %v: no rewrite started", st.Done)
	}
	st.Done, st.Complete = st.Done[:i+1], false
	if err := writeState(wdir, st); err != nil {
		t.Fatal(err)
	}
	wdir.Close()
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, KeepWork: true})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("the run after the stop: %v %v", err, r.Report.ExitReason)
	}
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the run that resumed the stopped one, stale entries: %v", s)
	}
	checkPackages(t, dir)
}

// staleRequires lists the requires entries of the packages of dir that
// give a package of dir a SHA-256 or size it does not have.
func staleRequires(t *testing.T, dir string) []string {
	t.Helper()
	return jobtest.StaleRequires(t, dir)
}

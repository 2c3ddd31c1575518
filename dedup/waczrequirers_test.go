package dedup

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/wacz"
	"warcdedup/workdir"
)

// staleRequires lists the requires entries of the packages of dir that
// give a package of dir a SHA-256 or size it does not have.
func staleRequires(t *testing.T, dir string) []string {
	t.Helper()
	var stale []string
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if r.Hash == "" {
				continue
			}
			sum, size, err := packageFixity(filepath.Join(dir, r.Filename))
			if err != nil {
				t.Fatal(err)
			}
			if sum != r.Hash || size != r.Size {
				stale = append(stale, filepath.Base(n)+" -> "+r.Filename)
			}
		}
	}
	slices.Sort(stale)
	return stale
}

// requiredByHash finds a package of dir that another requires by its
// SHA-256: the requirer and the required.
func requiredByHash(t *testing.T, dir string) (string, string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _ := p.Datapackage.Requires()
		p.Close()
		for _, r := range reqs {
			if r.Hash != "" && r.Filename != filepath.Base(n) {
				return filepath.Base(n), r.Filename
			}
		}
	}
	t.Fatal("no package requires another by hash: the test proves nothing")
	return "", ""
}

// membersOf is the listing of the WARC members of one package of dir.
func membersOf(t *testing.T, dir, pkg string) []string {
	t.Helper()
	var out []string
	for _, l := range readLinesOf(waczListing(t, dir)) {
		if p, _, ok := wacz.SplitName(l); ok && p == pkg {
			out = append(out, l)
		}
	}
	return out
}

// TestWACZRequirersKeptCurrent proves that no package is left naming a
// stale hash of a package it requires when a later job rewrites only the
// required package: an undo of that package alone, then a run on the
// whole directory that deduplicates it again. Each time the requirer's
// entry gets the required package's new SHA-256 and size, its WARC
// members untouched, and every package passes its check.
func TestWACZRequirersKeptCurrent(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	requirer, required := requiredByHash(t, dir)
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Fatalf("after the first run, stale entries: %v", s)
	}
	members := membersOf(t, dir, requirer)
	hashes := hashTree(t, dir)

	u, err := Undo(context.Background(), UndoOptions{Paths: []string{filepath.Join(dir, required)}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
		t.Fatalf("undo %s: %v %+v", required, err, u)
	}
	if hashTree(t, dir)[required] == hashes[required] {
		t.Fatalf("the undo of %s did not change it: the test proves nothing", required)
	}
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo of %s alone, stale entries: %v", required, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the undo of %s changed the records of %s", required, requirer)
	}
	checkPackages(t, dir)

	hashes = hashTree(t, dir)
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run again: %v %v", err, r.Report.ExitReason)
	}
	if hashTree(t, dir)[required] == hashes[required] {
		t.Fatalf("the run again did not rewrite %s: the test proves nothing", required)
	}
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the run that rewrote %s again, stale entries: %v", required, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the run again changed the records of %s", requirer)
	}
	checkPackages(t, dir)
}

func readLinesOf(b []byte) []string {
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// requireBy writes the package requirer anew requiring required (both in
// dir) by its SHA-256 and size, as an earlier run would have.
func requireBy(t *testing.T, dir, requirer, required string) {
	t.Helper()
	sum, size, err := packageFixity(filepath.Join(dir, required))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(sum)
	p, err := wacz.Open(filepath.Join(dir, requirer))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, requirer+".new"))
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, Require: []wacz.Requirement{wacz.RequirementOf(required, raw, size, "")}, TempDir: t.TempDir()}
	_, err = b.Write(out)
	p.Close()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, requirer+".new"), filepath.Join(dir, requirer)); err != nil {
		t.Fatal(err)
	}
}

// TestNamedWACZRefusesOutsideRequirers proves that a job on one package
// named alone, which would rewrite it while another package of its
// directory requires it by SHA-256 and size, is refused before anything
// is rewritten, with a message naming the requirer; and that a job
// naming both rewrites it and brings the requirer's entry up to date.
func TestNamedWACZRefusesOutsideRequirers(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	required, requirer := "crawl-0-0.wacz", "crawl-1-1.wacz"
	requireBy(t, dir, requirer, required)
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
	requirer, required := requiredByHash(t, dir)
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

// TestUndoNamedWACZUpdatesOutsideRequirers proves that the undo of a job
// on packages named brings up to date the requires entries of a package
// of their directory outside that job which requires one it gives back
// (an entry a later job wrote, with the hash the first job left): the
// requirer gets the package's hash as undone, its records untouched.
// Without it the requirer is left naming the deduplicated package's hash.
func TestUndoNamedWACZUpdatesOutsideRequirers(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	required, requirer := "crawl-0-0.wacz", "crawl-1-1.wacz"
	named := []string{filepath.Join(dir, required), filepath.Join(dir, "crawl-1-0.wacz")}
	wd := filepath.Join(t.TempDir(), "work")
	before := hashTree(t, dir)
	r, err := Run(context.Background(), Options{Collections: named, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run %v: %v %v", named, err, r.Report.ExitReason)
	}
	if hashTree(t, dir)[required] == before[required] {
		t.Fatalf("%s was not rewritten: the test proves nothing", required)
	}
	// A later job made the package outside the first one require it,
	// by its hash as deduplicated.
	requireBy(t, dir, requirer, required)
	members := membersOf(t, dir, requirer)
	rewritten := hashTree(t, dir)

	u, err := Undo(context.Background(), UndoOptions{Paths: named, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
		t.Fatalf("undo: %v %+v", err, u)
	}
	if hashTree(t, dir)[required] == rewritten[required] {
		t.Fatalf("the undo did not change %s: the test proves nothing", required)
	}
	if s := staleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo of the job on %v, stale entries: %v", named, s)
	}
	if got := membersOf(t, dir, requirer); !slices.Equal(got, members) {
		t.Errorf("the undo changed the records of %s", requirer)
	}
	checkPackages(t, dir)
}

package dedup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// packageRequires are the relation.requires entries of each package
// under dir, by package file name.
func packageRequires(t *testing.T, dir string) map[string][]wacz.Requirement {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]wacz.Requirement{}
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
		out[filepath.Base(n)] = reqs
	}
	return out
}

// requiredNames are the file names a package's entries name, sorted.
func requiredNames(reqs []wacz.Requirement) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Filename)
	}
	slices.Sort(out)
	return out
}

// TestRunWACZStoppedRebuildKeepsRequires proves that a package a killed
// run left with its rewritten members staged beside it (the kill between
// the rewrite's log of them and the rename of the package's new version)
// ends, after the next run finishes it (Recover), requiring the packages
// a clean run makes it require, each entry with the hash and size that
// package has at the end; and that a rerun gives back the entries a
// package lost (as the old Recover lost them). (Recover wrote it anew
// with no entries, and no later run added them: the revisits made no
// dependency.)
func TestRunWACZStoppedRebuildKeepsRequires(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	// stop leaves the packages chosen of the chain (those the clean run
	// made require another) unrenamed, their members staged.
	stop := func(choose func(chain []string) []string) func(t *testing.T, dir string, chain []string) int {
		return func(t *testing.T, dir string, chain []string) int {
			staged := 0
			for _, n := range choose(chain) {
				original, err := os.ReadFile(filepath.Join(src, n))
				if err != nil {
					t.Fatal(err)
				}
				staged += jobtest.StopRebuild(t, filepath.Join(dir, n), original)
			}
			return staged
		}
	}
	// lose removes the requires entries of the packages chosen, as the
	// old Recover left them.
	lose := func(choose func(chain []string) []string) func(t *testing.T, dir string, chain []string) int {
		return func(t *testing.T, dir string, chain []string) int {
			lost := 0
			for _, n := range choose(chain) {
				lost += dropRequires(t, filepath.Join(dir, n))
			}
			return lost
		}
	}
	first := func(p []string) []string { return p[:1] }
	last := func(p []string) []string { return p[len(p)-1:] }
	all := func(p []string) []string { return p }
	// A package that lost its entries to the old Recover is in a job
	// complete, whose members are unchanged: a new job (another work
	// directory) finds it.
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string, chain []string) int
		newJob bool
	}{
		{"the first package of the chain stopped", stop(first), false},
		{"the last package of the chain stopped", stop(last), false},
		{"every package stopped (killed as Finish began)", stop(all), false},
		{"every package but the first stopped", stop(func(p []string) []string { return p[1:] }), false},
		{"the first package's entries lost by an earlier recovery", lose(first), true},
		{"every package's entries lost by an earlier recovery", lose(all), true},
	}
	clean := filepath.Join(t.TempDir(), "clean")
	copyTree(t, src, clean)
	if r, err := Run(context.Background(), Options{Collections: []string{clean}, WorkDir: clean + ".work", Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("clean run: %v %v", err, r.Report.ExitReason)
	}
	want := packageRequires(t, clean)
	var chain []string // the packages with entries: their revisits point elsewhere
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if len(want[n]) > 0 {
			chain = append(chain, n)
		}
	}
	if len(chain) < 2 {
		t.Fatalf("the clean run made %d packages require others: the test proves nothing", len(chain))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			copyTree(t, src, dir)
			wd := dir + ".work"
			if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			if c.damage(t, dir, chain) == 0 {
				t.Fatal("nothing staged or lost: the test proves nothing")
			}
			if c.newJob {
				wd = dir + ".work2"
			}
			if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("the run after the stop: %v %v", err, r.Report.ExitReason)
			}
			checkRequires(t, dir, want)
		})
	}
}

// dropRequires writes the package at path anew without its requires
// entries, and returns how many it had.
func dropRequires(t *testing.T, path string) int {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := p.Datapackage.Requires()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, TempDir: t.TempDir()}
	for _, r := range reqs {
		b.Unrequire = append(b.Unrequire, r.Filename)
	}
	_, err = b.Write(out)
	p.Close()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	return len(reqs)
}

// checkRequires fails unless each package under dir requires the
// packages want names for it, each entry with the SHA-256 and size the
// package named has now.
func checkRequires(t *testing.T, dir string, want map[string][]wacz.Requirement) {
	t.Helper()
	got := packageRequires(t, dir)
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if g, w := requiredNames(got[n]), requiredNames(want[n]); !slices.Equal(g, w) {
			t.Errorf("%s requires %v, a clean run %v", n, g, w)
		}
		for _, r := range got[n] {
			if r.Hash == "" && r.Size < 0 {
				continue // named alone (a cycle): never stale
			}
			b, err := os.ReadFile(filepath.Join(dir, r.Filename))
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(b)
			size, sum := int64(len(b)), hex.EncodeToString(h[:])
			if r.Size != size || r.Hash != "" && r.Hash != sum {
				t.Errorf("%s requires %s with %d bytes, %s; it has %d bytes, %s", n, r.Filename, r.Size, r.Hash, size, sum)
			}
		}
	}
}

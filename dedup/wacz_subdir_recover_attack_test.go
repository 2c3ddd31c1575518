package dedup

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/jobtest"
)

// TestRunWACZSubdirectoriesStoppedKeepsRequiresAttack attacks Recover's
// entries for packages not beside the one it finishes: the collection's
// packages each in a directory of its own, every package stopped with
// its members staged after a run, and run again. Each package must end
// requiring what a run never stopped makes it require (names), each
// entry with the hash and size a run never stopped gives it.
func TestRunWACZSubdirectoriesStoppedKeepsRequiresAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	spread := func(t *testing.T, dir string) map[string]string {
		where := map[string]string{}
		for _, n := range packagesIn(t, dir) {
			sub := filepath.Join(dir, n+".d")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, n), filepath.Join(sub, n)); err != nil {
				t.Fatal(err)
			}
			where[n] = filepath.Join(sub, n)
		}
		return where
	}
	requiresOf := func(t *testing.T, where map[string]string) map[string][]string {
		out := map[string][]string{}
		for n, p := range where {
			for _, r := range packageRequires(t, filepath.Dir(p))[n] {
				form := r.Filename
				if r.Hash != "" {
					form += " hashed"
				}
				if r.Size >= 0 {
					form += " sized"
				}
				out[n] = append(out[n], form)
			}
		}
		return out
	}
	clean := filepath.Join(t.TempDir(), "clean")
	copyTree(t, src, clean)
	cw := spread(t, clean)
	if r, err := Run(context.Background(), Options{Collections: []string{clean}, WorkDir: clean + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("clean run: %v %v", err, r.Report.ExitReason)
	}
	want := requiresOf(t, cw)
	dir := filepath.Join(t.TempDir(), "coll")
	copyTree(t, src, dir)
	where := spread(t, dir)
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: dir + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	staged := 0
	for n, p := range where {
		original, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		staged += jobtest.StopRebuild(t, p, original)
	}
	if staged == 0 {
		t.Fatal("nothing staged: the test proves nothing")
	}
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: dir + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("the rerun: %v %v", err, r.Report.ExitReason)
	}
	got := requiresOf(t, where)
	for n := range want {
		if len(got[n]) != len(want[n]) {
			t.Errorf("%s requires %v after the stop, %v in a run never stopped", n, got[n], want[n])
			continue
		}
		for i := range want[n] {
			if got[n][i] != want[n][i] {
				t.Errorf("%s requires %v after the stop, %v in a run never stopped", n, got[n], want[n])
				break
			}
		}
	}
}

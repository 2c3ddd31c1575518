package dedup

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/wacz"
)

// TestRunWACZKilledWhileAddingRequiresAttack attacks the rewrite of
// packages for their missing requires entries alone (revisitOrigins,
// members copied): a job that adds them killed while a package's new
// version is being written, or once some packages have theirs and others
// not, is run again; it must end (exit 0 within three runs) with the
// entries a clean run gives, current, nothing left beside the packages,
// and a job after it must write nothing.
func TestRunWACZKilledWhileAddingRequiresAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	clean := filepath.Join(t.TempDir(), "clean")
	copyTree(t, src, clean)
	if r, err := Run(context.Background(), Options{Collections: []string{clean}, WorkDir: clean + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("clean run: %v %v", err, r.Report.ExitReason)
	}
	want := packageRequires(t, clean)
	hasEntries := 0
	for _, reqs := range want {
		if len(reqs) > 0 {
			hasEntries++
		}
	}
	if hasEntries < 2 {
		t.Fatalf("%d packages require others: the test proves nothing", hasEntries)
	}
	points := []struct {
		name string
		at   func(dir string) (string, bool)
	}{
		{"a package's new version being written", func(dir string) (string, bool) {
			tmp, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*.wacz-*"))
			return fmt.Sprintf("with %v beside the packages", tmp), len(tmp) > 0
		}},
		{"some packages given their entries, others not", func(dir string) (string, bool) {
			back := 0
			for _, reqs := range packageRequiresQuiet(dir) {
				if len(reqs) > 0 {
					back++
				}
			}
			return fmt.Sprintf("with %d of %d packages given their entries", back, hasEntries), back > 0 && back < hasEntries
		}},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			for attempt := 1; attempt <= 20; attempt++ {
				dir := filepath.Join(t.TempDir(), "coll")
				copyTree(t, src, dir)
				if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: dir + ".work", Jobs: 1}); err != nil || r.Report.Exit != 0 {
					t.Fatalf("run: %v %v", err, r.Report.ExitReason)
				}
				for _, n := range packagesIn(t, dir) {
					dropRequires(t, filepath.Join(dir, n))
				}
				wd := dir + ".work2"
				args := []string{"run", "-q", "-j", "1", "--work-dir", wd, dir}
				where, _ := killAt(t, exec.Command(binPath, args...), wd, killPoint{p.name, func(*watch) (string, bool) { return p.at(dir) }})
				if where == "" {
					continue
				}
				t.Logf("killed %s (attempt %d)", where, attempt)
				status := -1
				var last []byte
				for rerun := 1; rerun <= 3 && status != 0; rerun++ {
					var err error
					last, err = exec.Command(binPath, args...).CombinedOutput()
					status = exitStatus(t, err, last)
					t.Logf("rerun %d: exit %d", rerun, status)
				}
				if status != 0 {
					t.Fatalf("three runs after the kill, still exit %d:\n%s", status, last)
				}
				checkRequires(t, dir, want)
				checkPackages(t, dir)
				settled := hashTree(t, dir)
				if out, err := exec.Command(binPath, "run", "-q", "-j", "1", "--work-dir", dir+".work3", dir).CombinedOutput(); err != nil {
					t.Fatalf("a later job: %v\n%s", err, out)
				}
				sameTree(t, "after a later job", hashTree(t, dir), settled)
				return
			}
			t.Fatal("the job was never killed there: the test proves nothing")
		})
	}
}

// packageRequiresQuiet is packageRequires for a watch: the packages under
// dir it can read now, by file name.
func packageRequiresQuiet(dir string) map[string][]wacz.Requirement {
	out := map[string][]wacz.Requirement{}
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			continue
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err == nil {
			out[filepath.Base(n)] = reqs
		}
	}
	return out
}

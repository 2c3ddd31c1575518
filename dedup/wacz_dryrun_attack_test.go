package dedup

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/workdir"
)

// TestDryRunLeavesKilledRunsStagedMembers: a run killed once members'
// new versions are logged and put at their staged names, their packages
// not yet written anew, leaves those versions for its rerun's Recover;
// a run stopped there (SIGSTOP) has them still to write its packages
// around. A dry run meanwhile (warcdedup assess, which takes no lock of
// the collection; in a work directory of its own, or the killed run's)
// changes nothing: every file of the collection, the staged members
// included, is as the run left it. The killed job's rerun, or the
// stopped run continued, then finishes (exit 0), and its undo gives back
// every member bit for bit. (The dry run's Recover took each staged
// member its own log does not name for stale and removed it: the job
// whose versions they were then exited 1, its log naming members'
// versions that were nowhere; in the killed run's work directory it
// wrote packages anew.)
func TestDryRunLeavesKilledRunsStagedMembers(t *testing.T) {
	for _, c := range []struct {
		name    string
		ownDir  bool // the dry run has a work directory of its own
		stopped bool // the run is stopped there, not killed
	}{
		{"a dry run in a work directory of its own", true, false},
		{"a dry run in the killed run's work directory", false, false},
		{"a dry run beside the run stopped there", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for attempt := 1; attempt <= 30; attempt++ {
				j := newWACZJob(t)
				dir, wd, args := j.dir, j.wd, j.args
				p := killPoint{"members logged and put at their staged names, a package not written anew", func(w *watch) (string, bool) {
					fi, err := os.Stat(filepath.Join(wd, workdir.LogFile))
					put, _ := filepath.Glob(filepath.Join(dir, ".*.warcdedup-member"))
					if err != nil || fi.Size() == 0 {
						return "", false
					}
					return fmt.Sprintf("with %d members put, %d bytes logged", len(put), fi.Size()), len(put) > 0
				}}
				var where string
				var finish func() (int, []byte)
				if c.stopped {
					where, finish = stopAt(t, exec.Command(binPath, args...), wd, p)
				} else {
					where, _ = killAt(t, exec.Command(binPath, args...), wd, p)
				}
				if where == "" {
					continue
				}
				t.Logf("stopped or killed %s (attempt %d)", where, attempt)
				killed := hashTree(t, dir)
				dryWD := wd
				if c.ownDir {
					dryWD = filepath.Join(t.TempDir(), "dry")
				}
				out, err := exec.Command(binPath, "run", "-q", "-j", "2", "--dry-run", "--work-dir", dryWD, dir).CombinedOutput()
				t.Logf("the dry run: exit %d:\n%s", exitStatus(t, err, out), out)
				after := hashTree(t, dir)
				for name, sum := range killed {
					if after[name] != sum {
						t.Errorf("the dry run changed %s", name)
					}
				}
				for name := range after {
					if _, ok := killed[name]; !ok {
						t.Errorf("the dry run left %s", name)
					}
				}
				if c.stopped {
					if status, out := finish(); status != 0 {
						t.Fatalf("the stopped run, continued after the dry run: exit %d:\n%s", status, out)
					}
				} else {
					out, err = exec.Command(binPath, args...).CombinedOutput()
					if status := exitStatus(t, err, out); status != 0 {
						t.Fatalf("the killed job's rerun after the dry run: exit %d:\n%s", status, out)
					}
				}
				j.undone(t, "after the kill, the dry run, the rerun")
				return
			}
			t.Fatal("the run was never killed there")
		})
	}
}

// TestRunWACZCopiedPackageCollisions: a collection holding a package and
// a second of it (a copy, or a hard link with --hard-links), whose
// members hold revisits a crawler wrote. The second's records are the
// originals (it sorts first), so the package's revisits point at
// originals in another package, and their digests are resolved again
// after the first rewrite (originals existing revisits keep, step 7).
// The rewrite of the collisions looks for requires entries those
// revisits need, and read them at the numbered manifest's offsets, the
// hash stage's: the first rewrite had rewritten their member, and the
// run stopped (exit 2, every rerun alike: "a record past the member's
// end"). With the hard link, the first rebuild changes the other name's
// times, whose package is left as it was (exit 1, its members' logged
// versions staged beside it): they are read there, not in the package.
// The run must not stop (exit 2), a rerun end with exit 0, every revisit's
// container be required by its package, and an undo give back every
// member.
func TestRunWACZCopiedPackageCollisions(t *testing.T) {
	for _, c := range []struct {
		name string
		link bool
	}{
		{"a copy", false},
		{"a hard link, with --hard-links", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			from, to := filepath.Join(dir, "crawl-0-0.wacz"), filepath.Join(dir, "crawl-0-0-copy.wacz")
			if c.link {
				if err := os.Link(from, to); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(to, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := waczMemberSums(t, dir)
			wd := filepath.Join(t.TempDir(), "work")
			args := []string{"run", "-q", "-j", "1", "--hard-links", "--work-dir", wd, dir}
			out, err := exec.Command(binPath, args...).CombinedOutput()
			if status := exitStatus(t, err, out); status == 2 {
				t.Fatalf("the run stopped: exit %d:\n%s", status, out)
			} else if status != 0 {
				t.Logf("the run: exit %d:\n%s", status, out)
				out, err = exec.Command(binPath, args...).CombinedOutput()
				if status := exitStatus(t, err, out); status != 0 {
					t.Fatalf("the rerun: exit %d:\n%s", status, out)
				}
			}
			checkPackages(t, dir)
			containerRevisits(t, dir)
			if stale := jobtest.StaleRequires(t, dir); len(stale) > 0 {
				t.Errorf("requires entries stale after the run: %v", stale)
			}
			out, err = exec.Command(binPath, "undo", "-q", "--work-dir", wd, dir).CombinedOutput()
			if status := exitStatus(t, err, out); status != 0 {
				t.Fatalf("the undo: exit %d:\n%s", status, out)
			}
			sameMemberSums(t, "after the run and the undo", before, waczMemberSums(t, dir))
		})
	}
}

// TestRunWACZLinkedPackageRequired: a package of the collection has a
// second name in it (a hard link, both listed), and the other packages'
// duplicates have their originals there. Its members are refused for
// their links (exit 1), nothing of it written anew; the others are
// rewritten, requiring it, and every requires entry and revisit's
// container stays right: it keeps its hash.
func TestRunWACZLinkedPackageRequired(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	if err := os.Link(filepath.Join(dir, "crawl-0-0.wacz"), filepath.Join(dir, "crawl-0-0-link.wacz")); err != nil {
		t.Fatal(err)
	}
	before := waczMemberSums(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	out, err := exec.Command(binPath, "run", "-q", "-j", "2", "--work-dir", wd, dir).CombinedOutput()
	if status := exitStatus(t, err, out); status != 1 || !bytes.Contains(out, []byte("has 2 hard links")) {
		t.Fatalf("the run: exit %d, want 1 for the links:\n%s", status, out)
	}
	for _, name := range []string{"crawl-0-0.wacz", "crawl-0-0-link.wacz"} {
		for k, sum := range waczMemberSums(t, dir) {
			if strings.HasPrefix(k, name+"#") && sum != before[k] {
				t.Errorf("%s changed, though refused", k)
			}
		}
	}
	checkPackages(t, dir)
	if n := containerRevisits(t, dir); n == 0 {
		t.Error("no revisit refers to another package")
	}
	if stale := jobtest.StaleRequires(t, dir); len(stale) > 0 {
		t.Errorf("requires entries stale after the run: %v", stale)
	}
}

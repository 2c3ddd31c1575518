package dedup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/jobtest"
)

// TestUndoWACZKilledThenUndoneAgain kills the undo of a run on WACZ
// packages at each point of its work on them: while the members are
// restored (one journaled), once a package's new version is being
// written beside it (its restored members staged, the log naming them),
// and once some packages were renamed in place and others not. The next
// undo must exit 0 with every package the file it was before the run,
// bit for bit (members, index, datapackage.json, digest file, ZIP
// times), nothing of the undo's left beside the packages, and no
// metadata kept for undo left in the work directory.
func TestUndoWACZKilledThenUndoneAgain(t *testing.T) {
	// The packages' inodes after the run: a package renamed in place by
	// the undo has another.
	inodes := func(dir string) map[string]uint64 {
		out := map[string]uint64{}
		paths, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil {
				out[filepath.Base(p)] = inodeOf(fi)
			}
		}
		return out
	}
	// written is a package's new version being written beside it.
	written := func(dir, pkg string) killPoint {
		return killPoint{pkg + " being written", func(w *watch) (string, bool) {
			tmp, _ := filepath.Glob(filepath.Join(dir, ".tmp-"+pkg+"-*"))
			return fmt.Sprintf("with %v beside the packages", tmp), len(tmp) > 0
		}}
	}
	points := []struct {
		name string
		// requirer adds a package with no duplicate that requires one
		// of the others by hash: the run writes it anew for its entry
		// alone, and so does the undo.
		requirer bool
		// named, if set, is the package the killed undo and the next
		// name; a last undo then names the collection.
		named string
		at    func(dir string, ran map[string]uint64) killPoint
	}{
		{"during the restore", false, "", func(string, map[string]uint64) killPoint { return atIntents(1) }},
		{"while a package is written", false, "", func(dir string, ran map[string]uint64) killPoint {
			return written(dir, "*.wacz")
		}},
		{"while a requirer is brought up to date", true, "", func(dir string, ran map[string]uint64) killPoint {
			return written(dir, "other-0.wacz")
		}},
		{"undo of one package, while a package requiring it is brought up to date", false, "crawl-0-0.wacz", func(dir string, ran map[string]uint64) killPoint {
			return written(dir, "crawl-1-1.wacz")
		}},
		{"some packages renamed, others not", false, "", func(dir string, ran map[string]uint64) killPoint {
			return killPoint{"some packages renamed", func(w *watch) (string, bool) {
				now := inodes(dir)
				moved := 0
				for n, ino := range ran {
					if now[n] != ino {
						moved++
					}
				}
				return fmt.Sprintf("with %d of %d packages renamed", moved, len(ran)), moved > 0 && moved < len(ran)
			}}
		}},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			for attempt := 1; attempt <= 30; attempt++ {
				j := newWACZJob(t)
				if p.requirer {
					const fixture = "../../shared/corpus/webrecorder+py-wacz/tests/fixtures/valid_example_1.wacz"
					if _, err := os.Stat(fixture); err != nil {
						corpustest.Missing(t, "shared corpus absent: %v", err)
					}
					requirer := filepath.Join(j.dir, "other-0.wacz")
					jobtest.CopyFile(t, fixture, requirer)
					jobtest.RequireBy(t, requirer, filepath.Join(j.dir, "crawl-1-1.wacz"))
					jobtest.Backdate(t, requirer)
				}
				before := hashTree(t, j.dir)
				if out, err := exec.Command(binPath, j.args...).CombinedOutput(); exitStatus(t, err, out) != 0 {
					t.Fatalf("run: %s", out)
				}
				target := j.dir
				if p.named != "" {
					target = filepath.Join(j.dir, p.named)
				}
				undo := exec.Command(binPath, "undo", "-q", "-j", "2", "--work-dir", j.wd, target)
				where, status := killAt(t, undo, j.wd, p.at(j.dir, inodes(j.dir)))
				if where == "" {
					if status != 0 {
						t.Fatalf("the undo ended with exit %d before the kill point", status)
					}
					continue
				}
				t.Logf("killed %s (attempt %d)", where, attempt)
				out, err := exec.Command(binPath, "undo", "-q", "-j", "2", "--work-dir", j.wd, target).CombinedOutput()
				if status := exitStatus(t, err, out); status != 0 {
					t.Fatalf("the undo after the kill: exit %d:\n%s", status, out)
				}
				if p.named != "" {
					if st := jobtest.StaleRequires(t, j.dir); len(st) > 0 {
						t.Errorf("after the kill and the next undo of %s, stale entries: %v", p.named, st)
					}
					out, err := exec.Command(binPath, "undo", "-q", "-j", "2", "--work-dir", j.wd, j.dir).CombinedOutput()
					if status := exitStatus(t, err, out); status != 0 {
						t.Fatalf("the undo of the rest: exit %d:\n%s", status, out)
					}
				}
				after := hashTree(t, j.dir)
				for name, sum := range before {
					if after[name] != sum {
						t.Errorf("%s: after the kill and the next undo, not the file it was before the run", name)
					}
				}
				for name := range after {
					if _, ok := before[name]; !ok {
						t.Errorf("%s: left after the kill and the next undo", name)
					}
				}
				left, _ := filepath.Glob(filepath.Join(j.dir, ".*"))
				if len(left) > 0 {
					t.Errorf("left beside the packages: %v", left)
				}
				if kept, _ := filepath.Glob(filepath.Join(j.wd, "wacz-metadata", "*")); len(kept) > 0 {
					t.Errorf("metadata kept for undo left after every package came back: %v", kept)
				}
				return
			}
			t.Fatal("the undo was never killed there")
		})
	}
}

// inodeOf is the inode number of a file as stat gave it.
func inodeOf(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

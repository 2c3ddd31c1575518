package dedup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// undoSnapshot is a deduplicated collection on a tmpfs and its work
// directory, put back as they were after each undo a test lets go ahead.
type undoSnapshot struct {
	t         *testing.T
	dir, wd   string
	files     map[string][]byte
	savedWork string
	room      int64
}

func takeUndoSnapshot(t *testing.T, dir, wd string, room int64) *undoSnapshot {
	t.Helper()
	s := &undoSnapshot{t: t, dir: dir, wd: wd, files: map[string][]byte{}, savedWork: filepath.Join(t.TempDir(), "work"), room: room}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s.files[e.Name()] = data
	}
	if out, err := exec.Command("cp", "-a", wd, s.savedWork).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return s
}

// putBack gives the tmpfs room, and the collection and work directory
// their deduplicated bytes again.
func (s *undoSnapshot) putBack() {
	t := s.t
	t.Helper()
	remountTmpfs(t, s.dir, s.room)
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range s.files {
		if err := os.WriteFile(filepath.Join(s.dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(s.wd); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", s.savedWork, s.wd).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// memberSizesIn are the sizes of the WARC members of the packages in
// dir, and of the WARC files beside them (in name order), and those of
// the packages.
func memberSizesIn(t *testing.T, dir string) (members []int64, packages []int64) {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range all {
		if filepath.Ext(p) != ".wacz" {
			members = append(members, sizeOf(t, p))
			continue
		}
		w, err := wacz.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range w.WARCs() {
			members = append(members, m.Size)
		}
		w.Close()
		packages = append(packages, sizeOf(t, p))
	}
	return members, packages
}

// TestUndoWACZSpaceThreshold: the smallest free space the undo's check
// of free space accepts is enough for the undo to finish (no undercount:
// every package given back bit for bit), and not much more than the
// undo needs (no overcount refusing an undo that would fit): the copies
// at their restored size and, after them, the larger of the restored
// versions written at once (the restore) and the largest package written
// anew (after the restore, one at a time), never both at once.
func TestUndoWACZSpaceThreshold(t *testing.T) {
	for _, c := range []struct {
		name           string
		loose, twoRuns bool
	}{
		{name: "packages alone"},
		// The WARC files restored beside the packages stay larger.
		{name: "packages beside WARC files", loose: true},
		// The later crawl's packages deduplicated first, then again
		// against the earlier crawl's once it is added: members with
		// the revisits of two runs.
		{name: "revisits of two runs", twoRuns: true},
	} {
		t.Run(c.name, func(t *testing.T) { undoAtSpaceThreshold(t, c.loose, c.twoRuns) })
	}
}

func undoAtSpaceThreshold(t *testing.T, loose, twoRuns bool) {
	c := newSmallWACZ(t, loose, fourTimes)
	src, dir, size := c.src, c.dir, c.size
	before := hashTree(t, dir)
	restored, packages := memberSizesIn(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if twoRuns {
		earlier, _ := filepath.Glob(filepath.Join(dir, "crawl-0-*"))
		for _, f := range earlier {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		runOK(t, "run of the later crawl", Options{Collections: []string{dir}, WorkDir: wd, Jobs: 1})
		for i, f := range earlier {
			earlier[i] = filepath.Join(src, filepath.Base(f))
		}
		copyFilesTo(t, dir, earlier...)
	}
	runOK(t, "run with room", Options{Collections: []string{dir}, WorkDir: wd, Jobs: 1})
	deduplicated, _ := memberSizesIn(t, dir)
	snap := takeUndoSnapshot(t, dir, wd, 4*size)
	used := usedBytes(t, dir)

	undoWith := func(free int64) (*UndoResult, error) {
		remountTmpfs(t, dir, used+free)
		return Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 1})
	}
	// The smallest free space, in pages, the check accepts.
	const page = 4096
	lo, hi := int64(0), 4*size/page
	for lo < hi {
		mid := (lo + hi) / 2
		_, err := undoWith(mid * page)
		if errors.Is(err, stage.ErrNoSpace) {
			lo = mid + 1
			continue
		}
		hi = mid
		snap.putBack()
	}
	threshold := lo * page
	var sum, grown int64
	for i, s := range restored {
		sum += s
		grown += s - deduplicated[i]
	}
	slices.Sort(restored)
	versions := restored[len(restored)-1] + restored[len(restored)-2]
	largest := slices.Max(packages)
	// The copies restored, then either the versions being restored or,
	// once all are, the packages written anew one at a time, those
	// written before larger by what their members got back.
	need := sum + max(versions, grown+largest)
	t.Logf("check accepts %d bytes free; the copies restored %d, two versions %d, largest package %d, grown %d: needs about %d", threshold, sum, versions, largest, grown, need)

	u, err := undoWith(threshold)
	t.Logf("undo at the threshold: %v %+v", err, u)
	remountTmpfs(t, dir, 4*size)
	if err != nil || u.Exit != 0 {
		// Stopped part-way: the same undo must finish once there is room.
		u, err = Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 1})
		if err != nil || u.Exit != 0 {
			t.Fatalf("undo with room after one stopped at the threshold: %v %+v", err, u)
		}
		t.Errorf("the check accepted %d bytes free and the undo stopped part-way", threshold)
	}
	sameTree(t, "after the undo", hashTree(t, dir), before)
	if slack := int64(len(restored)+len(packages)+16) * page; threshold > need+slack {
		t.Errorf("the check refuses an undo with %d bytes free, %d more than it needs (%d)", threshold-page, threshold-need, need)
	}
}

// TestRefusedUndoChangesNothing: an undo refused for want of space
// changed nothing, so it leaves the job's state and the last undo's
// fixity list as they were: the run after it has nothing to do (the
// refusal reset the job, and that run hashed and joined the whole
// collection again), and the undo with room then gives every package
// back bit for bit.
func TestRefusedUndoChangesNothing(t *testing.T) {
	c := newSmallWACZ(t, false, fourTimes)
	dir, size := c.dir, c.size
	before := hashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 1}
	runOK(t, "run with room", opt)
	deduplicated := hashTree(t, dir)
	work := hashTree(t, wd)

	remountTmpfs(t, dir, usedBytes(t, dir)+size/10)
	if _, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 1}); !errors.Is(err, stage.ErrNoSpace) {
		t.Fatalf("undo on a file system too small: %v, want %v", err, stage.ErrNoSpace)
	}
	sameTree(t, "the collection after the refused undo", hashTree(t, dir), deduplicated)
	now := hashTree(t, wd)
	for _, name := range []string{workdir.StateFile, workdir.UndoFixityFile} {
		if now[name] != work[name] {
			t.Errorf("the refused undo changed %s in the work directory (%q, was %q)", name, now[name], work[name])
		}
	}
	remountTmpfs(t, dir, 4*size)
	if r := runOK(t, "the run after the refused undo", opt); !r.NothingToDo {
		t.Errorf("the run after the refused undo did the job again: the refusal reset it")
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 1})
	if err != nil || u.Exit != 0 || u.BytesDiffer > 0 {
		t.Fatalf("undo with room: %v %+v", err, u)
	}
	sameTree(t, "after the undo with room", hashTree(t, dir), before)
}

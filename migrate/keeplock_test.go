package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"warcdedup/collock"
)

// openDescriptors is the number of descriptors the process has open.
func openDescriptors(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// TestKeepDirLockedAsUsed proves that a keep directory shared by many
// collections (2,000 directories of kept ARC files) is not locked whole:
// a conversion holds its root and only the directories it keeps ARC
// files in and their parents, so its open descriptors stay a few dozen
// (the whole tree once took one each and refused the job for want of
// them, "raise ulimit -n"), and the directories it did not use stay free
// for other jobs. A directory of it another job holds (a collection
// beneath the keep directory) is not refused up front any more: the ARC
// files to be kept there stay in the collection with their WARC, reported
// (Failed, naming the other job), the others are kept, and nothing goes
// into the held directory.
func TestKeepDirLockedAsUsed(t *testing.T) {
	cases := []struct {
		name string
		held string // beneath the keep directory, held by another job from the start; "" for none
	}{
		{"many existing directories, none held", ""},
		{"the existing directory an ARC goes into held", "a/b"},
		{"an existing directory on the way to one held", "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, filepath.Join(coll, "a", "b"), 4)
			genCollection(t, filepath.Join(coll, "c"), 5)
			keep := filepath.Join(dir, "keep")
			const many = 2000
			for i := range many {
				if err := os.MkdirAll(filepath.Join(keep, fmt.Sprintf("y%02d", i/100), fmt.Sprintf("c%04d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []string{"a/b", "c"} {
				if err := os.MkdirAll(filepath.Join(keep, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.held != "" {
				other, err := collock.Lock([]string{filepath.Join(keep, tc.held)})
				if err != nil {
					t.Fatal(err)
				}
				defer other.Release()
			}
			before := snapshot(t, coll)
			base := openDescriptors(t)
			locks, err := LockJob(coll, keep)
			if err != nil {
				t.Fatalf("LockJob: %v", err)
			}
			defer locks.Release()
			var mu sync.Mutex
			most := 0
			hook := func(step, arc string) {
				n := openDescriptors(t)
				mu.Lock()
				most = max(most, n)
				mu.Unlock()
			}
			var reported []string
			report := func(err error) {
				mu.Lock()
				reported = append(reported, err.Error())
				mu.Unlock()
			}
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep, Locks: locks, Jobs: 2, Hook: hook, Report: report}}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if most == 0 || most-base > 64 {
				t.Errorf("%d descriptors open during the job, %d before it: the keep directory's %d directories locked whole?", most, base, many)
			}
			for _, o := range res.Files {
				if !strings.HasSuffix(o.ARC, ".arc") && !strings.HasSuffix(o.ARC, ".arc.gz") {
					continue
				}
				inHeld := tc.held != "" && strings.HasPrefix(o.ARC, "a/")
				kept := filepath.Join(keep, filepath.FromSlash(o.ARC))
				_, keptErr := os.Stat(kept)
				switch {
				case inHeld:
					if o.Status != Failed || !strings.Contains(o.Reason, "another warcdedup job") {
						t.Errorf("%s, kept in a directory another job holds: %s (%s), want it failed naming the other job", o.ARC, o.Status, o.Reason)
					}
					if got := snapshot(t, filepath.Dir(filepath.Join(coll, o.ARC)))[filepath.Base(o.ARC)]; got != before[o.ARC] {
						t.Errorf("%s not left in the collection as it was", o.ARC)
					}
					if keptErr == nil {
						t.Errorf("%s put in the held directory", kept)
					}
				case o.Status.Left():
					t.Errorf("%s left: %s (%s)", o.ARC, o.Status, o.Reason)
				case keptErr != nil:
					t.Errorf("%s not kept: %v", o.ARC, keptErr)
				}
			}
			if tc.held != "" && !strings.Contains(strings.Join(reported, "\n"), "another warcdedup job") {
				t.Errorf("the held directory's ARC files not reported: %q", reported)
			}
			// The directories the job used are its own; the others free.
			for _, d := range []string{"y00/c0000", "y07", "y19/c1999"} {
				other, err := collock.Lock([]string{filepath.Join(keep, d)})
				if err != nil {
					t.Errorf("keep/%s, not used by the job: another job's lock %v, want it free", d, err)
				}
				other.Release()
			}
			for _, d := range []string{".", "c"} {
				other, err := collock.Lock([]string{filepath.Join(keep, d)})
				var busy *collock.BusyError
				if !errors.As(err, &busy) {
					other.Release()
					t.Errorf("keep/%s: another job's lock %v, want it refused (the job keeps ARC files there)", d, err)
				}
			}
		})
	}
}

// setDescriptorLimit sets the process's soft limit of open descriptors
// to n until the test ends, or until restore is called.
func setDescriptorLimit(t *testing.T, n uint64) (restore func()) {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Skip(err)
	}
	now := was
	now.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &now); err != nil {
		t.Skip(err)
	}
	restore = func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was) }
	t.Cleanup(restore)
	return restore
}

// TestKeepDirLockShortOfDescriptors proves that the keep directories a
// conversion locks as it first uses them never cost an ARC: a job whose
// limit leaves too few descriptors for the most it may lock is refused
// before it converts anything (naming ulimit -n), as one whose up-front
// locks would; and a lock that fails midway for want of descriptors (the
// limit lowered while the job works) leaves each ARC not yet kept in the
// collection with its WARC, reported, for a rerun to finish.
func TestKeepDirLockShortOfDescriptors(t *testing.T) {
	cases := []struct {
		name    string
		midway  bool // the limit lowered once the job works
		refused bool // the job refused before it converts anything
	}{
		{"too few descriptors before the job", false, true},
		{"too few descriptors midway", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, filepath.Join(coll, "a", "b"), 4)
			genCollection(t, filepath.Join(coll, "c"), 5)
			keep, work := filepath.Join(dir, "keep"), filepath.Join(dir, "work")
			before := snapshot(t, coll)
			locks, err := LockJob(coll, keep)
			if err != nil {
				t.Fatal(err)
			}
			defer locks.Release()
			// Room for the spare descriptors and one lock, not the three
			// (a, a/b, c) the job may take.
			var once sync.Once
			restore := func() {}
			c := &Converter{Options: Options{WorkDir: work, KeepARC: keep, Locks: locks, Jobs: 1}}
			if tc.midway {
				c.Hook = func(step, arc string) {
					once.Do(func() { restore = setDescriptorLimit(t, uint64(openDescriptors(t)+40)) })
				}
			} else {
				restore = setDescriptorLimit(t, uint64(openDescriptors(t)+256+1))
			}
			res, err := c.Run(context.Background(), coll, nil)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "ulimit -n") {
					t.Fatalf("run: %v, want it refused naming ulimit -n", err)
				}
				if got := snapshot(t, coll); len(got) != len(before) {
					t.Errorf("the collection changed though the job was refused: %d files, were %d", len(got), len(before))
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			left := 0
			for _, o := range res.Files {
				if o.Status == Failed {
					left++
					if !strings.Contains(o.Reason, "ulimit -n") {
						t.Errorf("%s failed, not for want of descriptors: %s", o.ARC, o.Reason)
					}
					if b, err := os.ReadFile(filepath.Join(coll, filepath.FromSlash(o.ARC))); err != nil || len(b) == 0 {
						t.Errorf("%s failed and is not in the collection: %v", o.ARC, err)
					}
				}
			}
			if left == 0 {
				t.Fatalf("no ARC failed with the limit lowered midway: %+v", res.Files)
			}
			// The limit back: the rerun keeps every ARC.
			locks.Release()
			restore()
			locks, err = LockJob(coll, keep)
			if err != nil {
				t.Fatal(err)
			}
			c = &Converter{Options: Options{WorkDir: work, KeepARC: keep, Locks: locks, Jobs: 1}}
			res, err = c.Run(context.Background(), coll, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Files {
				if o.Status.Left() {
					t.Errorf("rerun: %s left: %s (%s)", o.ARC, o.Status, o.Reason)
				}
			}
			for name, sum := range before {
				if !strings.HasSuffix(name, ".arc") && !strings.HasSuffix(name, ".arc.gz") {
					continue
				}
				if got := snapshot(t, filepath.Dir(filepath.Join(keep, filepath.FromSlash(name))))[filepath.Base(name)]; got != sum {
					t.Errorf("%s not kept as it was after the rerun", name)
				}
			}
		})
	}
}

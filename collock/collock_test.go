package collock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mkdirs makes the directories named (relative to a new directory) and
// returns it.
func mkdirs(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(n)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLock proves, for sets of directories a first job holds and a
// second asks for, that the second is refused exactly when they share a
// directory (whatever path names it), naming the directory and the
// process holding it, that a refused set takes none of its directories,
// and that what the first held is free again once it is released.
func TestLock(t *testing.T) {
	cases := []struct {
		name          string
		first, second []string // relative to the test's directory; "tree:X" is Tree(X)
		refused       string   // the directory the second is refused on; "" for none
	}{
		{"one directory, twice", []string{"coll"}, []string{"coll"}, "coll"},
		{"disjoint directories", []string{"coll"}, []string{"other"}, ""},
		{"a collection and its subdirectory", []string{"tree:coll"}, []string{"tree:coll/sub"}, "coll/sub"},
		{"a subdirectory and the collection", []string{"tree:coll/sub"}, []string{"tree:coll"}, "coll/sub"},
		{"the same directory through a symbolic link", []string{"coll"}, []string{"link"}, "link"},
		{"sets overlapping in their last directory", []string{"other"}, []string{"coll", "other"}, "other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := mkdirs(t, "coll/sub/deeper", "other")
			if err := os.Symlink("coll", filepath.Join(root, "link")); err != nil {
				t.Fatal(err)
			}
			dirs := func(names []string) []string {
				var out []string
				for _, n := range names {
					if tree, ok := strings.CutPrefix(n, "tree:"); ok {
						got, err := Tree(filepath.Join(root, tree))
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, got...)
						continue
					}
					out = append(out, filepath.Join(root, n))
				}
				return out
			}
			first, err := Lock(dirs(c.first))
			if err != nil {
				t.Fatal(err)
			}
			second, err := Lock(dirs(c.second))
			if c.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				second.Release()
				first.Release()
				return
			}
			var busy *BusyError
			if !errors.As(err, &busy) {
				t.Fatalf("got %v, want a BusyError", err)
			}
			if want := filepath.Join(root, c.refused); busy.Dir != want {
				t.Errorf("refused on %s, want %s", busy.Dir, want)
			}
			msg := err.Error()
			for _, want := range []string{busy.Dir, "another warcdedup job is working on this directory's files", "process " + strconv.Itoa(os.Getpid())} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			// All or none: what the second set took before the
			// directory held is free again.
			for _, d := range dirs(c.second) {
				if id, _ := idOf(d); first.ids[id] {
					continue
				}
				if h := Holder(d); h != "" {
					t.Errorf("%s still held after the refusal (%s)", d, h)
				}
			}
			first.Release()
			again, err := Lock(dirs(c.second))
			if err != nil {
				t.Fatalf("after the first was released: %v", err)
			}
			again.Release()
		})
	}
}

// TestLockFile proves the lock of a directory whose file system locks
// directories for one host only (taken on LockFile): a second job is
// refused, named by what the file says; the file goes with the release;
// and one a killed job left (no process holding it) is taken over.
func TestLockFile(t *testing.T) {
	cases := []struct {
		name    string
		left    string // LockFile's content before, as a killed job leaves it; "" for none
		holding bool   // a job holds it
	}{
		{"no lock file", "", false},
		{"a killed job's lock file", "process 1 on elsewhere: warcdedup run /coll\n", false},
		{"held by a job", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			id, err := idOf(dir)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, LockFile)
			if c.left != "" {
				if err := os.WriteFile(name, []byte(c.left), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var holder *dirLock
			if c.holding {
				if holder, err = (&Set{}).lockFile(dir, id); err != nil {
					t.Fatal(err)
				}
			}
			l, err := (&Set{}).lockFile(dir, id)
			if c.holding {
				var busy *BusyError
				if !errors.As(err, &busy) || !strings.Contains(busy.Holder, "process "+strconv.Itoa(os.Getpid())) {
					t.Fatalf("got %v, want a BusyError naming this process", err)
				}
				holder.release()
				if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left after the release: %v", LockFile, err)
				}
				if l, err = (&Set{}).lockFile(dir, id); err != nil {
					t.Fatalf("after the release: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			l.release()
			if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after the release: %v", LockFile, err)
			}
		})
	}
}

// TestTree proves that a collection's tree is its directories, its work
// directories (and what is beneath them) left out, and a root named
// through a symbolic link walked where it is.
func TestTree(t *testing.T) {
	root := mkdirs(t, "coll/a/b", "coll/c", "coll/x.warcdedup/cache", "coll/notwork.warcdedup")
	if err := os.Symlink("coll", filepath.Join(root, "current")); err != nil {
		t.Fatal(err)
	}
	got, err := Tree(filepath.Join(root, "current"))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(root)
	var rel []string
	for _, d := range got {
		r, _ := filepath.Rel(real, d)
		rel = append(rel, filepath.ToSlash(r))
	}
	want := []string{"coll", "coll/a", "coll/a/b", "coll/c", "coll/notwork.warcdedup"}
	if strings.Join(rel, " ") != strings.Join(want, " ") {
		t.Errorf("tree %v, want %v", rel, want)
	}
}

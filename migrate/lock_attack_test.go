package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestKeepDirSpeltThroughALink proves that a keep directory spelt with a
// ".." after a symbolic link is one directory for the whole job, the one
// the kernel names (fspath.Abs, as warcdedup run --keep-arc takes it):
// the one made and locked first (LockJob) is the one each ARC is kept in,
// the spelling cleaned of ".." is never made, and one the kernel puts in
// the collection is refused before anything is made. Before, LockJob
// made the kernel's (x/to-sub/../keep: coll/keep, inside the collection),
// the kept copies went to the cleaned spelling's, whose lock failed for
// want of the directory: every ARC failed to be kept, run after run.
func TestKeepDirSpeltThroughALink(t *testing.T) {
	cases := []struct {
		name    string
		keep    string // beneath the test's root
		kernel  string // where the kernel takes it, beneath the root
		cleaned string // the spelling cleaned of "..", beneath the root
		inside  bool   // the kernel's is inside the collection: refused
	}{
		{"up to the collection", "x/to-sub/../keep", "x/coll/keep", "x/keep", true},
		{"up beside the collection", "x/to-sub/../../keep", "x/keep", "keep", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			coll := filepath.Join(root, "x", "coll")
			genCollection(t, coll, 7)
			if err := os.Mkdir(filepath.Join(coll, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(coll, "sub"), filepath.Join(root, "x", "to-sub")); err != nil {
				t.Fatal(err)
			}
			keep := root + "/" + tc.keep
			locks, err := LockJob(coll, keep)
			if tc.inside {
				if err == nil {
					locks.Release()
					t.Fatalf("a keep directory the kernel puts at %s, inside the collection, was locked", tc.kernel)
				}
				for _, d := range []string{tc.kernel, tc.cleaned} {
					if _, err := os.Stat(filepath.Join(root, d)); err == nil {
						t.Errorf("a refused keep directory made %s", d)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer locks.Release()
			c := &Converter{Options: Options{WorkDir: filepath.Join(root, "work"), KeepARC: keep, Locks: locks, Jobs: 2}}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := res.Count(Converted); n != 4 {
				t.Errorf("%d converted, want 4: %+v", n, res.Files)
			}
			if got := len(snapshot(t, filepath.Join(root, tc.kernel))); got != 4 {
				t.Errorf("%d ARC files kept in %s, want 4", got, tc.kernel)
			}
			if _, err := os.Stat(filepath.Join(root, tc.cleaned)); err == nil {
				t.Errorf("a second keep directory %s made", tc.cleaned)
			}
		})
	}
}

package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestKeepDirSpeltThroughALink proves that a keep directory spelt with a
// ".." after a symbolic link is one directory for the whole job, the
// spelling cleaned of ".." (as warcdedup run --keep-arc takes it): the
// one made and locked first (LockJob) is the one each ARC is kept in, no
// other is made, and none in the collection. Before, LockJob made the
// kernel's (x/to-sub/../keep: coll/keep, inside the collection), the
// kept copies went to the cleaned spelling's, whose lock failed for want
// of the directory: every ARC failed to be kept, run after run.
func TestKeepDirSpeltThroughALink(t *testing.T) {
	cases := []struct {
		name   string
		keep   string // beneath the test's root
		kernel string // where the kernel takes it, beneath the root
	}{
		{"up to the collection", "x/to-sub/../keep", "x/coll/keep"},
		{"up beside the collection", "x/to-sub/../../keep", "x/keep"},
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
			kept := filepath.Clean(keep)
			if got := len(snapshot(t, kept)); got != 4 {
				t.Errorf("%d ARC files kept in %s, want 4", got, kept)
			}
			if _, err := os.Stat(filepath.Join(root, tc.kernel)); err == nil {
				t.Errorf("a second keep directory %s made", tc.kernel)
			}
		})
	}
}

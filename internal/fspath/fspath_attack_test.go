package fspath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAbsDotDotUnderALinkAbove names paths with ".." where no link comes
// between the directory the ".." leaves and the one it returns to, but a
// link is above them (a collection named through a link, a working
// directory reached through one). The kernel's directory is then the one
// filepath.Abs spells, and Abs must spell it so too: a job run on
// "ln/coll" is known by that spelling (its state's collections, its work
// directory), and "ln/coll/sub/../a.warc" given to undo or show must be
// found in it. Resolving every link of the name spelt it "real/coll/...",
// in none of the job's collections.
func TestAbsDotDotUnderALinkAbove(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "real", "coll", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "ln")); err != nil {
		t.Fatal(err)
	}
	coll := filepath.Join(root, "ln", "coll")
	for _, c := range []struct{ name, in, want string }{
		{"an absolute name through a link, .. in a real directory", coll + "/sub/../a.warc", filepath.Join(coll, "a.warc")},
		{"the collection itself", coll + "/sub/..", coll},
		{"a relative name from a working directory reached through a link", "sub/../a.warc", filepath.Join(coll, "a.warc")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(coll) // sets PWD: os.Getwd spells it through the link
			got, err := Abs(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Abs(%q) = %s, want %s (as filepath.Abs spells it: the same directory)", c.in, got, c.want)
			}
		})
	}
}

package fspath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAbs names, from a working directory holding a link to a directory
// two levels down, the paths a user could give, and the directory each
// must be: the kernel's, wherever a ".." follows the link.
func TestAbs(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"real/sub", "work/real"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(root, "work")
	if err := os.Symlink(filepath.Join(root, "real", "sub"), filepath.Join(work, "to-sub")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	for _, c := range []struct{ name, in, want string }{
		{"a plain relative name is absolute, as filepath.Abs makes it", "real", filepath.Join(work, "real")},
		{"a link without .. keeps its name", "to-sub", filepath.Join(work, "to-sub")},
		{"a .. with no link before it is taken away", "real/..", work},
		{"a .. after a link is the link's target's parent", "to-sub/..", filepath.Join(root, "real")},
		{"a trailing slash changes nothing", "to-sub/../", filepath.Join(root, "real")},
		{"the rest after the last .. is joined", "to-sub/../sub/./x", filepath.Join(root, "real", "sub", "x")},
		{"an absolute name with .. after a link", filepath.Join(work, "to-sub") + "/../..", root},
		{"two .. after the link", "to-sub/../..", root},
		{"a name missing before its .. is spelt as filepath.Abs", "missing/../real", filepath.Join(work, "real")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Abs(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Abs(%q) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

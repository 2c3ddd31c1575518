package within

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDirDotDotAfterALink proves that a path whose ".." follows a
// symbolic link is judged where the kernel puts it (the link's target's
// parent), not where the spelling cleaned of ".." would: os.MkdirAll of
// "to-sub/../keep" makes coll/keep, inside the collection. Relative and
// absolute, with or without a trailing slash, existing or yet to be made.
func TestDirDotDotAfterALink(t *testing.T) {
	root := t.TempDir()
	coll := filepath.Join(root, "coll")
	if err := os.MkdirAll(filepath.Join(coll, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(coll, "made"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(coll, "sub"), filepath.Join(root, "to-sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(coll, "sub", "deep"), filepath.Join(root, "to-deep")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	tests := []struct {
		name string
		path string
		want bool
	}{
		{"a new directory beside the link's target", "to-sub/../keep", true},
		{"the same, absolute", root + "/to-sub/../keep", true},
		{"the same, with a trailing slash", "to-sub/../keep/", true},
		{"an existing directory beside the link's target", "to-sub/../made", true},
		{"the collection itself", "to-sub/..", true},
		{"two levels up from a deeper link", "to-deep/../../keep", true},
		{"deeper still, yet to be made", "to-deep/../x/y/z", true},
		{"up out of the collection through the link", "to-sub/../../keep", false},
		{"a plain sibling of the collection", "keep", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Dir(tc.path, coll)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Dir(%s, coll) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// TestDirRefusesWhatItCannotResolve proves that a path Dir cannot follow
// (a symbolic link loop, a link to a file used as a directory) is an
// error, never "outside".
func TestDirRefusesWhatItCannotResolve(t *testing.T) {
	root := t.TempDir()
	coll := filepath.Join(root, "coll")
	if err := os.Mkdir(coll, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"loop1": "loop2", "loop2": "loop1", "to-file": "file"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"loop1/keep", "to-file/keep"} {
		if in, err := Dir(filepath.Join(root, p), coll); err == nil {
			t.Errorf("Dir(%s, coll) = %v, no error", p, in)
		}
	}
}

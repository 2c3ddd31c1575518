package within

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDir names each way a path can be inside a directory, or look as if
// it were.
func TestDir(t *testing.T) {
	root := t.TempDir()
	coll := filepath.Join(root, "coll")
	for _, d := range []string{"coll/sub", "collection", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(coll, "a.warc.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"to-coll": "coll", "to-sub": "coll/sub", "other/up": "../coll"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		path string // relative to root
		want bool
	}{
		{"the directory itself", "coll", true},
		{"a directory beneath it", "coll/sub", true},
		{"a file in it", "coll/a.warc.gz", true},
		{"a path yet to be made beneath it", "coll/sub/keep/x", true},
		{"the directory through a link", "to-coll", true},
		{"a new path through a link to a directory beneath it", "to-sub/new", true},
		{"a path through a link inside another directory", "other/up/new", true},
		{"a path with .. that comes back into it", "other/../coll/new", true},
		{"a sibling whose name starts like it", "collection", false},
		{"a new path beside it", "kept/arc", false},
		{"a path with .. that leaves it", "coll/../other", false},
		{"its parent", ".", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Dir(filepath.Join(root, tc.path), coll)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Dir(%s, coll) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// TestDirThroughABindMount proves a directory mounted elsewhere (the
// same directory under another path, no link to follow) is found inside.
func TestDirThroughABindMount(t *testing.T) {
	root := t.TempDir()
	coll, mnt := filepath.Join(root, "coll"), filepath.Join(root, "mnt")
	for _, d := range []string{coll, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount(coll, mnt, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount (not root?): %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	if got, err := Dir(filepath.Join(mnt, "keep"), coll); err != nil || !got {
		t.Errorf("Dir(the bind mount's keep, coll) = %v, %v; want true", got, err)
	}
}

// TestDirNotMadeYet proves a directory that does not exist yet (a work
// directory a later job makes) is compared by path, links resolved as far
// as they exist.
func TestDirNotMadeYet(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "coll"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("coll", filepath.Join(root, "to-coll")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "coll.warcdedup")
	tests := []struct {
		name string
		path string // relative to root
		want bool
	}{
		{"a path beneath it", "coll.warcdedup/tmp/kept", true},
		{"the directory itself", "coll.warcdedup", true},
		{"a sibling whose name starts like it", "coll.warcdedup2/kept", false},
		{"the collection beside it", "to-coll/kept", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Dir(filepath.Join(root, tc.path), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Dir(%s, coll.warcdedup) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
	if got, err := Dir(filepath.Join(root, "to-coll", "..", "coll.warcdedup", "kept"), filepath.Join(root, "to-coll", "..", "coll.warcdedup")); err != nil || !got {
		t.Errorf("Dir through a link and .. = %v, %v; want true", got, err)
	}
}

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveLeftoversOfAll: the temporary files of the names given are
// removed, in each of their directories, and nothing else: not another
// file's (whose name begins with one of them), nor a name whose random
// part is no digits, nor a directory.
func TestRemoveLeftoversOfAll(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	cases := []struct {
		path    string
		dir     bool
		removed bool
	}{
		{path: filepath.Join(a, ".tmp-bt-0-0.wacz-123"), removed: true},
		{path: filepath.Join(a, ".tmp-bt-0-1.wacz-9"), removed: true},
		{path: filepath.Join(b, ".tmp-x.wacz-4567"), removed: true},
		{path: filepath.Join(a, ".tmp-bt-0-0.wacz-2.wacz-77")}, // another file's
		{path: filepath.Join(a, ".tmp-bt-0-0.wacz-12a")},
		{path: filepath.Join(a, ".tmp-other.wacz-5")},
		{path: filepath.Join(b, ".tmp-bt-0-0.wacz-5")}, // a name of a, not b
		{path: filepath.Join(a, ".tmp-bt-0-1.wacz-8"), dir: true},
		{path: filepath.Join(a, "bt-0-0.wacz")},
	}
	for _, c := range cases {
		var err error
		if c.dir {
			err = os.Mkdir(c.path, 0o755)
		} else {
			err = os.WriteFile(c.path, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	RemoveLeftoversOfAll([]string{filepath.Join(a, "bt-0-0.wacz"), filepath.Join(a, "bt-0-1.wacz"), filepath.Join(b, "x.wacz")})
	for _, c := range cases {
		_, err := os.Lstat(c.path)
		if gone := os.IsNotExist(err); gone != c.removed {
			t.Errorf("%s: removed %v, want %v", c.path, gone, c.removed)
		}
	}
}

package crawlindex

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTempDirCleanup: a commit's cleanup removes the temporary directory
// a killed import, removal or verify left (its lock gone with it), and
// never one in use, however old.
func TestTempDirCleanup(t *testing.T) {
	dir := t.TempDir()
	inUse, err := NewTempDir(dir, "import")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inUse.Path, "sorted"), []byte("lines"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What a killed verify leaves: the directory, its lock gone with its
	// process.
	left, err := NewTempDir(dir, "verify")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left.Path, "sorted"), []byte("lines"), 0o644); err != nil {
		t.Fatal(err)
	}
	left.lock.Close()

	cleanup(dir, 0)
	for _, c := range []struct {
		name string
		path string
		want bool
	}{
		{"in use", inUse.Path, true},
		{"left by a killed command", left.Path, false},
	} {
		_, err := os.Stat(c.path)
		if got := err == nil; got != c.want {
			t.Errorf("%s: there after the cleanup: %v, want %v (%v)", c.name, got, c.want, err)
		}
	}
	inUse.Remove()
	if _, err := os.Stat(inUse.Path); !os.IsNotExist(err) {
		t.Errorf("Remove left %s: %v", inUse.Path, err)
	}
}

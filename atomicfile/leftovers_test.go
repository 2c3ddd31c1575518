package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveLeftovers removes exactly the temporary files Create can have
// made for the name.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.warc.gz")
	files := map[string]bool{ // name: removed
		"a.warc.gz":                  false,
		".tmp-a.warc.gz-123456":      true,
		".tmp-a.warc.gz-9":           true,
		".tmp-a.warc.gz-2.warc.gz-5": false, // another file's: "a.warc.gz-2.warc.gz"
		".tmp-a.warc.gz-":            false,
		".tmp-a.warc.gz-12x":         false,
		".tmp-b.warc.gz-123":         false,
	}
	for f := range files {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	RemoveLeftovers(name)
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	for f, removed := range files {
		if slices.Contains(left, f) == removed {
			t.Errorf("%s: removed %v, want %v", f, !removed, removed)
		}
	}
}

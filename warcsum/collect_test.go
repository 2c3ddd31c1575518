package warcsum

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCollectInProgress proves that a file a crawler is still writing
// (Heritrix's ".open") is never an input, and that the Collector names it.
func TestCollectInProgress(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.warc.gz", "b.warc.gz.open", "sub/c.ARC.open", "d.txt.open", "e.open", "sub/f.warc"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var open []string
	inputs, err := Collector{Recursive: true, InProgress: func(p string) { open = append(open, p) }}.Collect([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range inputs {
		names = append(names, in.Name)
	}
	if want := []string{"a.warc.gz", "sub/f.warc"}; !slices.Equal(names, want) {
		t.Errorf("inputs %v, want %v", names, want)
	}
	want := []string{filepath.Join(dir, "b.warc.gz.open"), filepath.Join(dir, "sub", "c.ARC.open")}
	if !slices.Equal(open, want) {
		t.Errorf("in progress %v, want %v", open, want)
	}
}

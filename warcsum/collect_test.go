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

// TestCollectThroughLink proves that a directory named through a symbolic
// link ("current" -> "2024-06", as archives point at the latest crawl) is
// walked: its files get names relative to it and paths beneath the name
// given. Before, the walk stopped at the link and the collection was empty.
func TestCollectThroughLink(t *testing.T) {
	top := t.TempDir()
	for _, name := range []string{"2024-06/a.warc.gz", "2024-06/sub/b.warc"} {
		p := filepath.Join(top, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(top, "current")
	if err := os.Symlink("2024-06", link); err != nil {
		t.Fatal(err)
	}
	inputs, err := Collect([]string{link}, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []Input
	for _, in := range inputs {
		got = append(got, Input{Path: in.Path, Name: in.Name})
	}
	want := []Input{{Path: filepath.Join(link, "a.warc.gz"), Name: "a.warc.gz"}, {Path: filepath.Join(link, "sub", "b.warc"), Name: "sub/b.warc"}}
	if !slices.Equal(got, want) {
		t.Errorf("inputs %v, want %v", got, want)
	}
}

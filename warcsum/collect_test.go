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

// TestCollectDotDotAfterLink: a directory named with ".." after a
// symbolic link ("to-sub/..", to-sub a link to other/sub) is, to the
// kernel, the link target's parent (other), which the walk lists; the
// paths of its files must name those files, not what the cleaned text
// ("to-sub/.." cleaned is the link's own directory) holds under the same
// names. A directory named plainly keeps its files' paths beneath the
// name given (TestCollectThroughLink: a link named as is, too).
func TestCollectDotDotAfterLink(t *testing.T) {
	top := t.TempDir()
	for name, content := range map[string]string{"other/a.warc.gz": "walked", "other/sub/x": "", "a.warc.gz": "beside the link"} {
		p := filepath.Join(top, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join("other", "sub"), filepath.Join(top, "to-sub")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, wantPath string
	}{
		{"a directory named plainly: paths beneath the name given", filepath.Join(top, "other"), filepath.Join(top, "other", "a.warc.gz")},
		{"\"..\" after a link: paths of the files walked", top + string(filepath.Separator) + "to-sub" + string(filepath.Separator) + "..", filepath.Join(top, "other", "a.warc.gz")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs, err := Collect([]string{tc.dir}, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(inputs) != 1 || inputs[0].Name != "a.warc.gz" {
				t.Fatalf("inputs %v, want a.warc.gz alone", inputs)
			}
			b, err := os.ReadFile(inputs[0].Path)
			if err != nil || string(b) != "walked" {
				t.Fatalf("the input's path %s holds %q (%v), not the file walked", inputs[0].Path, b, err)
			}
			if inputs[0].Path != tc.wantPath {
				t.Errorf("path %s, want %s", inputs[0].Path, tc.wantPath)
			}
		})
	}
}

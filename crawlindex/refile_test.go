package crawlindex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCommitRefile proves that a change refiling a committed crawl's file
// records the file's new size, SHA-256 and stamp in the crawl's list and
// in the lists of files other crawls require of it, keeps every original
// of the index and the crawl's other files as they were, and that a
// refile of a file the crawl does not have, or of a crawl not committed,
// is refused without a new generation.
func TestCommitRefile(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1), digestOf('B', 2))
	// jan's a.wacz, which feb requires, is there as recorded (its
	// stamp): the commit of feb checks it.
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "a.wacz"), make([]byte, 300), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(data, "a.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	files := []FileInfo{{Name: "a.wacz", Size: 300, SHA256: "aa", Stamp: Stamp(fi)}, {Name: "b.wacz", Size: 200, SHA256: "bb", Stamp: "s2"}}
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: data}, Files: files, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	feb := originals(t, work, "feb", digestOf('C', 3))
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "feb", Location: "/data/feb",
		Requires: []Need{{Crawl: "jan", Revisits: 1, Files: []FileInfo{files[0]}}}}, Files: []FileInfo{{Name: "c.wacz", Size: 10}}, Originals: feb})
	if err != nil {
		t.Fatal(err)
	}
	lines, gen := indexLines(t, ix), ix.Generation()

	refiled := FileInfo{Name: "a.wacz", Size: 310, SHA256: "cc", Stamp: "s3"}
	ix, err = CommitWith(dir, Change{Refile: map[string][]FileInfo{"jan": {refiled}}}, CommitOptions{NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ix.Files("jan")
	if err != nil {
		t.Fatal(err)
	}
	if want := []FileInfo{refiled, files[1]}; !slices.Equal(got, want) {
		t.Errorf("jan's files %+v, want %+v", got, want)
	}
	if k := ix.Registry.Crawl("jan"); k.Size != 510 || k.Files != 2 {
		t.Errorf("jan: %d files, %d bytes; want 2, 510", k.Files, k.Size)
	}
	if k := ix.Registry.Crawl("feb"); len(k.Requires) != 1 || !slices.Equal(k.Requires[0].Files, []FileInfo{refiled}) {
		t.Errorf("feb requires %+v, want jan's a.wacz as refiled", k.Requires)
	}
	if got := indexLines(t, ix); !slices.Equal(got, lines) {
		t.Errorf("the originals changed: %v, were %v", got, lines)
	}

	for _, c := range []struct {
		name string
		ch   map[string][]FileInfo
		want string
	}{
		{"a file the crawl does not have", map[string][]FileInfo{"jan": {{Name: "x.wacz", Size: 1}}}, "no file x.wacz"},
		{"a crawl not committed", map[string][]FileInfo{"mar": {refiled}}, "not committed"},
	} {
		if _, err := Commit(dir, Change{Refile: c.ch}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("refile of %s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	ix, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Generation() != gen+1 {
		t.Errorf("after the refused refiles: generation %d, want %d", ix.Generation(), gen+1)
	}
}

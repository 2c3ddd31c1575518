package crawlindex

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/fixity"
	"warcdedup/internal/warctest"
	"warcdedup/wacz"
)

// newPackage writes a WACZ package of one small WARC (body in its
// response) to path.
func newPackage(t *testing.T, path, body string) {
	t.Helper()
	warc := filepath.Join(t.TempDir(), "data.warc.gz")
	rec := warctest.Record("response", "http://example.com/", "2024-01-02T03:04:05Z",
		"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"+body, "Content-Type: application/http; msgtype=response")
	if err := os.WriteFile(warc, warctest.Gzip(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: []string{warc}, Software: "test", TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// requireSomething writes the package at path anew with a requires
// entry added, every other member copied: as a refresh of its requires
// entries writes it.
func requireSomething(t *testing.T, path string) {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 32)
	b := &wacz.Rebuild{Source: p, Require: []wacz.Requirement{wacz.RequirementOf("other.wacz", sum, 10, "")}, TempDir: t.TempDir()}
	_, err = b.Write(out)
	p.Close()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// fileInfoOf is the file at path as a commit records it.
func fileInfoOf(t *testing.T, path string) FileInfo {
	t.Helper()
	h, err := fixity.HashFile(path, fixity.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return FileInfo{Name: filepath.Base(path), Size: h.Size(), SHA256: h.Sum(fixity.SHA256), Stamp: Stamp(fi)}
}

// refiledInfoOf is the package at path as Refiles records it again: as a
// commit records it, with the file names it requires by hash or size.
func refiledInfoOf(t *testing.T, path string, requires ...string) FileInfo {
	t.Helper()
	f := fileInfoOf(t, path)
	f.Requires, f.RequiresKnown = RequiresOf(requires)
	return f
}

// TestRefilesAndUpdateSources proves that a package noted
// (NotePackage) and written anew with its WARC members where they were
// is refiled as it now is, that its crawl's multi-WACZ JSON
// (Crawl.Source) gets its new hash and size, that a package not written
// anew is passed over, that one whose records moved is not refiled but
// named, and that a crawl without a JSON is named in the notes.
func TestRefilesAndUpdateSources(t *testing.T) {
	dir, work, loc := filepath.Join(t.TempDir(), "index"), t.TempDir(), t.TempDir()
	a, b := filepath.Join(loc, "a.wacz"), filepath.Join(loc, "b.wacz")
	newPackage(t, a, "<html>a</html>")
	newPackage(t, b, "<html>b</html>")
	source := filepath.Join(loc, "jan.json")
	var entries []wacz.CollectionEntry
	for _, p := range []string{a, b} {
		f := fileInfoOf(t, p)
		entries = append(entries, wacz.CollectionEntry{Name: f.Name, Path: f.Name, Hash: f.SHA256, Size: f.Size, CrawlID: "jan"})
	}
	out, err := os.Create(source)
	if err != nil {
		t.Fatal(err)
	}
	if err := wacz.WriteCollection(out, entries); err != nil {
		t.Fatal(err)
	}
	out.Close()
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: loc, Source: source}, Files: []FileInfo{fileInfoOf(t, a), fileInfoOf(t, b)},
		Originals: originals(t, work, "jan", digestOf('A', 1))})
	if err != nil {
		t.Fatal(err)
	}
	var notes []RefileEntry
	for _, p := range []string{a, b} {
		n, err := NotePackage("jan", filepath.Base(p), p)
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, n)
	}
	name := filepath.Join(work, "note.json")
	if err := WriteRefileNote(name, notes); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRefileNote(name); err != nil || !slices.EqualFunc(got, notes, func(x, y RefileEntry) bool {
		return x.Crawl == y.Crawl && x.Name == y.Name && x.Path == y.Path && slices.Equal(x.Members, y.Members)
	}) {
		t.Fatalf("the note read back: %+v, %v; written %+v", got, err, notes)
	}
	if _, err := ReadRefileNote(filepath.Join(work, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no note: %v", err)
	}

	requireSomething(t, a)
	refile, problems, _, err := Refiles(ix, notes)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Refiles: %v %v", problems, err)
	}
	if want := []FileInfo{refiledInfoOf(t, a, "other.wacz")}; !slices.Equal(refile["jan"], want) || len(refile) != 1 {
		t.Errorf("refiled %+v, want jan: %+v (b.wacz, not written anew, passed over)", refile, want)
	}
	if notes, err := ix.UpdateSources(refile); err != nil || len(notes) > 0 {
		t.Fatalf("UpdateSources: %v %v", notes, err)
	}
	f, _ := os.Open(source)
	got, err := wacz.ReadCollection(f, source)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		p, _ := e.LocalPath(source)
		want := fileInfoOf(t, p)
		if sum, _ := e.SHA256(); sum != want.SHA256 || e.Size != want.Size {
			t.Errorf("%s: the JSON names %s, %d bytes; it has %s, %d bytes", e.Path, sum, e.Size, want.SHA256, want.Size)
		}
	}

	// Records moved: another WARC in b.wacz.
	newPackage(t, b, "<html>another, longer body</html>")
	refile, problems, _, err = Refiles(ix, notes[1:])
	if err != nil || len(refile) > 0 || len(problems) != 1 || !strings.Contains(problems[0], "b.wacz") {
		t.Errorf("b.wacz with its records moved: refiled %+v, problems %v, %v; want it named, not refiled", refile, problems, err)
	}

	// A crawl whose JSON the index does not record: named.
	ix2, err := Commit(dir, Change{Add: &Crawl{Name: "feb", Location: loc}, Files: []FileInfo{{Name: "c.wacz", Size: 1}}, Originals: originals(t, work, "feb", digestOf('B', 2))})
	if err != nil {
		t.Fatal(err)
	}
	notes2, err := ix2.UpdateSources(map[string][]FileInfo{"feb": {{Name: "c.wacz", Size: 2, SHA256: strings.Repeat("ab", 32)}}})
	if err != nil || len(notes2) != 1 || !strings.Contains(notes2[0], "no multi-WACZ JSON") {
		t.Errorf("a crawl without a JSON: notes %v, %v", notes2, err)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/manifest"
)

// TestListsTabSeparated runs warcdedup as a user does and reads the lists
// its work directory keeps: fixity.tsv, deps.tsv, hashed-files.tsv and
// after-files.tsv are separated by tabs, each line
// with its fields and a first field that names a file of the collection
// (escaped as the manifests do); and a work directory an earlier
// warcdedup left, its lists separated by spaces, is taken on by an undo,
// which leaves them in tabs with every file still listed.
func TestListsTabSeparated(t *testing.T) {
	dir := t.TempDir()
	undoCollection(t, dir, true) // crawls/crawl-0, crawl-1, the second's duplicates of the first
	for _, c := range []string{"crawl-0", "crawl-1"} {
		if _, stderr, code := sh(t, dir, "warcdedup run -q -j 2 --index idx --work-dir w-"+c+" crawls/"+c); code != 0 {
			t.Fatalf("run --index %s: exit %d\n%s", c, code, stderr)
		}
	}
	wd := filepath.Join(dir, "w-crawl-1")
	coll := filepath.Join(dir, "crawls") // the names of an index's crawl begin with it
	lists := []struct {
		name   string
		fields int  // fields a line has
		file   bool // its first field is a file of the collection
	}{
		{"fixity.tsv", 5, true},
		{"deps.tsv", 3, true},
		{"hashed-files.tsv", 2, true},
		{"after-files.tsv", 4, true},
	}
	for _, l := range lists {
		data, err := os.ReadFile(filepath.Join(wd, l.name))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if strings.HasPrefix(line, "# file") && !strings.Contains(line, "\t") {
				t.Errorf("%s: its header %q is not separated by tabs", l.name, line)
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			lines++
			f := strings.Split(line, "\t")
			if len(f) != l.fields || strings.Contains(strings.Join(f[:len(f)-1], ""), " ") {
				t.Errorf("%s: line %q: want %d fields separated by tabs", l.name, line, l.fields)
				continue
			}
			name, err := manifest.UnescapeFile(f[0])
			if _, serr := os.Stat(filepath.Join(coll, filepath.FromSlash(name))); l.file && (err != nil || serr != nil) {
				t.Errorf("%s: line %q names no file of the collection (%v %v)", l.name, line, err, serr)
			}
		}
		if lines == 0 {
			t.Errorf("%s lists nothing:\n%s", l.name, data)
		}
	}

	// An earlier warcdedup's work directory: the same lists in spaces.
	before, _ := os.ReadFile(filepath.Join(wd, "fixity.tsv"))
	for _, l := range lists {
		name := filepath.Join(wd, l.name)
		data, _ := os.ReadFile(name)
		if err := os.WriteFile(name, []byte(strings.ReplaceAll(string(data), "\t", " ")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := sh(t, dir, "warcdedup index remove -q --index idx crawl-1 && warcdedup undo -q -j 2 --work-dir w-crawl-1 crawls/crawl-1"); code != 0 {
		t.Fatalf("undo of a work directory with lists in spaces: exit %d\n%s", code, stderr)
	}
	after, _ := os.ReadFile(filepath.Join(wd, "fixity.tsv"))
	files := func(data []byte) (names []string) {
		for _, line := range strings.Split(string(data), "\n") {
			if f, _, ok := strings.Cut(line, "\t"); ok && !strings.HasPrefix(line, "#") {
				names = append(names, f)
			}
		}
		return names
	}
	if b, a := files(before), files(after); len(b) == 0 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("fixity.tsv after the undo lists %q in tabs, want the files it listed before, %q", a, b)
	}
}

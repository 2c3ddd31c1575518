package crawlindex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRefilesPassesOverGonePackage notes two packages of a committed
// crawl, writes one anew with a requires entry, and deletes the other
// while the crawl still lists it (an operator's doing). It proves that
// Refiles does not fail (it did, so that every later commit of the job
// failed until an operator acted): the package written anew is refiled,
// the one gone is passed over, named with its crawl and what to run
// (the index learns of a crawl's files gone through its own verify and
// remove, and a package gone has nothing to record again).
func TestRefilesPassesOverGonePackage(t *testing.T) {
	dir, work, loc := filepath.Join(t.TempDir(), "index"), t.TempDir(), t.TempDir()
	a, b := filepath.Join(loc, "a.wacz"), filepath.Join(loc, "b.wacz")
	newPackage(t, a, "<html>a</html>")
	newPackage(t, b, "<html>b</html>")
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: loc}, Files: []FileInfo{fileInfoOf(t, a), fileInfoOf(t, b)},
		Originals: originals(t, work, "jan", digestOf('A', 1))})
	if err != nil {
		t.Fatal(err)
	}
	var notes []RefileEntry
	for _, p := range []string{b, a} {
		n, err := NotePackage("jan", filepath.Base(p), p)
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, n)
	}
	requireSomething(t, a)
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	refile, problems, gone, err := Refiles(ix, notes)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Refiles: problems %v, %v", problems, err)
	}
	if want := []FileInfo{refiledInfoOf(t, a, "other.wacz")}; !slices.Equal(refile["jan"], want) || len(refile) != 1 {
		t.Errorf("refiled %+v, want jan: %+v", refile, want)
	}
	if len(gone) != 1 {
		t.Fatalf("gone: %q, want b.wacz named", gone)
	}
	for _, want := range []string{b, "crawl jan", "warcdedup index verify --index " + dir, "warcdedup index remove --index " + dir} {
		if !strings.Contains(gone[0], want) {
			t.Errorf("gone: %q does not say %q", gone[0], want)
		}
	}
}

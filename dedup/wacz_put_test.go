package dedup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPutPackagesList proves what a rerun takes from the list of the
// packages a job wrote anew: its own job's names, spelt as manifest
// field 1 (a name with a tab or a newline comes back whole), and not a
// line a stop cut short or another job's.
func TestPutPackagesList(t *testing.T) {
	path := filepath.Join(t.TempDir(), waczPutFile)
	mine, other := putPackages{path: path, job: 120}, putPackages{path: path, job: 7}
	for _, add := range []struct {
		p   putPackages
		pkg string
	}{{mine, "a.wacz"}, {other, "b.wacz"}, {mine, "sub/odd\tname\n.wacz"}} {
		if err := add.p.add(add.pkg); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("120\tcut-sh") // a stop in the middle of a line
	f.Close()
	got, err := mine.read()
	if want := []string{"a.wacz", "sub/odd\tname\n.wacz"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("read %q (%v), want %q", got, err, want)
	}
	if got, err := (putPackages{path: filepath.Join(t.TempDir(), "none")}).read(); err != nil || len(got) > 0 {
		t.Errorf("no list: %q, %v", got, err)
	}
}

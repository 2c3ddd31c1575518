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

// TestPutPackagesTake proves that a job's rewrite leaves the list with
// its own lines alone: other jobs' lines and a line a stop cut short are
// dropped (the cut line would otherwise run into the next line added and
// hide that package from a rerun), the job's own names are all kept, and
// a list that holds nothing else is not written again.
func TestPutPackagesTake(t *testing.T) {
	for _, tc := range []struct {
		name     string
		list     string // the list before the job's rewrite begins
		want     []string
		rewrites bool
	}{
		{"no list", "", nil, false},
		{"the job's lines alone", "120\ta.wacz\n120\tb.wacz\n", []string{"a.wacz", "b.wacz"}, false},
		{"another job's lines", "7\told.wacz\n120\ta.wacz\n7\tolder.wacz\n", []string{"a.wacz"}, true},
		{"only other jobs", "7\told.wacz\n", nil, true},
		{"a line cut short", "120\ta.wacz\n120\tcut-sh", []string{"a.wacz"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), waczPutFile)
			if tc.list != "" {
				if err := os.WriteFile(path, []byte(tc.list), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.Stat(path)
			mine := putPackages{path: path, job: 120}
			got, err := mine.take()
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("take: %q (%v), want %q", got, err, tc.want)
			}
			after, _ := os.Stat(path)
			if rewritten := before != nil && !os.SameFile(before, after); rewritten != tc.rewrites {
				t.Errorf("list written again: %v, want %v", rewritten, tc.rewrites)
			}
			if err := mine.add("next.wacz"); err != nil {
				t.Fatal(err)
			}
			got, err = mine.read()
			if want := append(slices.Clone(tc.want), "next.wacz"); err != nil || !slices.Equal(got, want) {
				t.Errorf("after the next package is added, read %q (%v), want %q", got, err, want)
			}
			if got, _ := (putPackages{path: path, job: 7}).read(); len(got) > 0 {
				t.Errorf("another job's lines kept: %q", got)
			}
		})
	}
}

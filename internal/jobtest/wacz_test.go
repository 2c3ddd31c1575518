package jobtest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/wacz"
)

// setRequires writes the package at path anew with the requires entries
// reqs added, as they are given.
func setRequires(t *testing.T, path string, reqs ...wacz.Requirement) {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, Require: reqs, TempDir: t.TempDir()}
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

// TestStaleRequires proves that StaleRequires names every requires
// entry that does not name what it requires as it is now, for a caller
// of one directory as for one of several, and no entry that does: the
// move of the undo's tests merged two helpers into it, and it must be
// as strict as the stricter of them for each kind of entry.
func TestStaleRequires(t *testing.T) {
	src, _ := GeneratedWACZ(t, false)
	const requirer, required = "crawl-1-0.wacz", "crawl-0-0.wacz"
	cases := []struct {
		name string
		// set writes the requires entries of requirer (in dir) naming
		// required (at req) and changes the packages as the case needs.
		set func(t *testing.T, dir, req string)
		// other puts required in a directory of its own, given too.
		other bool
		want  []string
	}{
		{"current entry", func(t *testing.T, dir, req string) {
			RequireBy(t, filepath.Join(dir, requirer), req)
		}, false, nil},
		{"current entry across directories", func(t *testing.T, dir, req string) {
			RequireBy(t, filepath.Join(dir, requirer), req)
		}, true, nil},
		{"required package written anew since", func(t *testing.T, dir, req string) {
			RequireBy(t, filepath.Join(dir, requirer), req)
			RequireBy(t, req, filepath.Join(dir, "crawl-0-1.wacz"))
		}, false, []string{requirer + " -> " + required}},
		{"required package gone", func(t *testing.T, dir, req string) {
			RequireBy(t, filepath.Join(dir, requirer), req)
			if err := os.Remove(req); err != nil {
				t.Fatal(err)
			}
		}, false, []string{requirer + " -> " + required + " (not found)"}},
		{"required package gone, several directories", func(t *testing.T, dir, req string) {
			RequireBy(t, filepath.Join(dir, requirer), req)
			if err := os.Remove(req); err != nil {
				t.Fatal(err)
			}
		}, true, []string{requirer + " -> " + required + " (not found)"}},
		{"SHA-256 without the size", func(t *testing.T, dir, req string) {
			sum, _ := packageFixity(t, req)
			setRequires(t, filepath.Join(dir, requirer), wacz.Requirement{Filename: required, Hash: sum, Size: -1})
		}, false, []string{requirer + " -> " + required}},
		{"size only, another size", func(t *testing.T, dir, req string) {
			setRequires(t, filepath.Join(dir, requirer), wacz.Requirement{Filename: required, Size: 1})
		}, false, []string{requirer + " -> " + required}},
		{"by name only", func(t *testing.T, dir, req string) {
			setRequires(t, filepath.Join(dir, requirer), wacz.Requirement{Filename: "nowhere.wacz", Size: -1})
		}, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			CopyTree(t, src, dir)
			dirs := []string{dir}
			req := filepath.Join(dir, required)
			if c.other {
				other := filepath.Join(t.TempDir(), "other")
				if err := os.Mkdir(other, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(req, filepath.Join(other, required)); err != nil {
					t.Fatal(err)
				}
				req = filepath.Join(other, required)
				dirs = append(dirs, other)
			}
			c.set(t, dir, req)
			if got := StaleRequires(t, dirs...); !slices.Equal(got, c.want) {
				t.Errorf("stale entries %q, want %q", got, c.want)
			}
		})
	}
}

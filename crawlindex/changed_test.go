package crawlindex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangedSinceCommit proves what a run or an undo takes as a
// committed crawl's file unchanged since its commit (before writing it
// anew and recording it again): its stamp, else its SHA-256, the
// recorded ones. A file whose stamp changed and of which the index
// records no SHA-256 (an imported crawl, an older index) is not taken
// as unchanged, and the answer says why and what to do: before, its size
// alone was compared, and a package written anew by another tool with
// its records moved but the same size passed.
func TestChangedSinceCommit(t *testing.T) {
	const abcSHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	dir := t.TempDir()
	write := func(name, text string) FileInfo {
		t.Helper()
		path := filepath.Join(dir, name)
		os.Remove(path) // a file written anew: another inode
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return FileInfo{Name: name, Size: fi.Size(), SHA256: abcSHA256, Stamp: Stamp(fi)}
	}
	same := write("same.wacz", "abc")
	copied := write("copied.wacz", "abc")
	write("copied.wacz", "abc") // the same bytes, another stamp
	changed := write("changed.wacz", "abc")
	write("changed.wacz", "abd") // the same size, other bytes
	longer := write("longer.wacz", "abc")
	write("longer.wacz", "abcd")
	noSum := func(f FileInfo) FileInfo { f.SHA256 = ""; return f }
	gone := FileInfo{Name: "gone.wacz", Size: 3, SHA256: abcSHA256}
	for _, c := range []struct {
		name string
		f    FileInfo
		want []string // in the answer, none for unchanged
	}{
		{"the stamp recorded", same, nil},
		{"another stamp, the SHA-256 recorded", copied, nil},
		{"another stamp, another SHA-256", changed, []string{"SHA-256 ", "recorded: " + abcSHA256}},
		{"another size", longer, []string{"4 bytes, recorded: 3"}},
		{"the stamp recorded, no SHA-256 recorded", noSum(same), nil},
		{"another stamp, no SHA-256 recorded, the same bytes", noSum(copied), []string{"records no SHA-256 of it", "index verify --deep", "index import"}},
		{"another stamp, no SHA-256 recorded, other bytes", noSum(changed), []string{"records no SHA-256 of it"}},
		{"gone", gone, []string{"cannot be read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ChangedSinceCommit(filepath.Join(dir, c.f.Name), c.f)
			if len(c.want) == 0 && got != "" {
				t.Fatalf("got %q, want unchanged", got)
			}
			if len(c.want) > 0 && got == "" {
				t.Fatalf("taken as unchanged, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want %q in it", got, w)
				}
			}
		})
	}
}

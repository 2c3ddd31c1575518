package crawlindex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFile proves what verify finds of a committed file: its SHA-256
// is compared in the registry's form (bare hex) with --deep, a file of
// the same size and other bytes is found only so, and without --deep a
// changed stamp is.
func TestCheckFile(t *testing.T) {
	const abcSHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	dir := t.TempDir()
	write := func(name, text string) FileInfo {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return FileInfo{Name: name, Size: fi.Size(), SHA256: abcSHA256, Stamp: Stamp(fi)}
	}
	same := write("same.warc", "abc")
	changed := write("changed.warc", "abc")
	write("changed.warc", "abd") // same size, other bytes, another stamp
	for _, c := range []struct {
		name string
		f    FileInfo
		deep bool
		want string // in what is found, "" for nothing
	}{
		{"unchanged, deep", same, true, ""},
		{"unchanged, by stamp", same, false, ""},
		{"same size, other bytes, deep: its SHA-256", changed, true, "SHA-256 "},
		{"same size, other bytes, by stamp", changed, false, "changed since it was committed"},
		{"another size", FileInfo{Name: "same.warc", Size: 4, SHA256: abcSHA256}, true, "3 bytes, 4 when committed"},
		{"missing", FileInfo{Name: "gone.warc", Size: 3, SHA256: abcSHA256}, true, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := checkFile(dir, c.f, c.deep)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("checkFile = %q, want %q", got, c.want)
			}
		})
	}
}

package crawlindex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommitChecksRequiredFiles proves that a commit re-checks the
// files of committed crawls the added crawl requires, on disk: one whose
// stamp changed while its bytes did not (mode, times, the same bytes
// copied over it) is the file the index records, and the commit takes
// it; one whose bytes changed (its size kept or not), or that is gone,
// is refused, naming it, without a new generation, where the commit took
// it and left an index whose verify --deep failed (exit 0 from the run);
// a file whose SHA-256 the index does not record (an import) is taken
// on its size, its stamp changed or not.
func TestCommitChecksRequiredFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noSum  bool // jan's file recorded without its SHA-256
		change func(t *testing.T, path string)
		want   string // in the refusal; "" if committed
	}{
		{"unchanged", false, func(*testing.T, string) {}, ""},
		{"mode changed", false, func(t *testing.T, path string) { must(t, os.Chmod(path, 0o600)) }, ""},
		{"times changed", false, func(t *testing.T, path string) { must(t, os.Chtimes(path, time.Now(), time.Now().Add(-time.Hour))) }, ""},
		{"the same bytes copied over it", false, func(t *testing.T, path string) { rewriteFile(t, path, -1, 0) }, ""},
		{"a byte changed, its size kept", false, func(t *testing.T, path string) { rewriteFile(t, path, 10, 0) }, "a.wacz of crawl jan, which has changed since its crawl's commit recorded it (SHA-256"},
		{"a byte added", false, func(t *testing.T, path string) { rewriteFile(t, path, -1, 1) }, "a.wacz of crawl jan, which has changed since its crawl's commit recorded it (301 bytes"},
		{"gone", false, func(t *testing.T, path string) { must(t, os.Remove(path)) }, "a.wacz of crawl jan, which cannot be read"},
		{"no SHA-256 recorded, its mode changed", true, func(t *testing.T, path string) { must(t, os.Chmod(path, 0o600)) }, ""},
		{"no SHA-256 recorded, a byte added", true, func(t *testing.T, path string) { rewriteFile(t, path, -1, 1) }, "(301 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, work, data := filepath.Join(t.TempDir(), "index"), t.TempDir(), t.TempDir()
			path := filepath.Join(data, "a.wacz")
			must(t, os.WriteFile(path, []byte(strings.Repeat("x", 300)), 0o644))
			a := fileInfoOf(t, path)
			if tc.noSum {
				a.SHA256 = ""
			}
			jan := originals(t, work, "jan", digestOf('A', 1))
			if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: data}, Files: []FileInfo{a}, Originals: jan}); err != nil {
				t.Fatal(err)
			}
			tc.change(t, path)
			feb := originals(t, work, "feb", digestOf('C', 3))
			ix, err := Commit(dir, Change{Add: &Crawl{Name: "feb", Location: "/data/feb",
				Requires: []Need{{Crawl: "jan", Revisits: 1, Files: []FileInfo{a}}}}, Files: []FileInfo{{Name: "c.wacz", Size: 10}}, Originals: feb})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("feb, requiring jan's a.wacz: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("feb, requiring jan's a.wacz: committed as generation %d (%v), want a refusal saying %q", ix.Registry.Generation, err, tc.want)
			}
			if ix, err := Open(dir); err != nil || ix.Registry.Crawl("feb") != nil {
				t.Errorf("after the refusal: %v, feb committed %v", err, ix != nil && ix.Registry.Crawl("feb") != nil)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rewriteFile writes the file at path anew (another inode): its bytes,
// the one at flip inverted (if flip >= 0), add bytes appended.
func rewriteFile(t *testing.T, path string, flip, add int) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	if flip >= 0 {
		b[flip] ^= 0xff
	}
	b = append(b, make([]byte, add)...)
	must(t, os.WriteFile(path+".new", b, 0o644))
	must(t, os.Rename(path+".new", path))
}

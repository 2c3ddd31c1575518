package stage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/wacz"
)

// newRequirer writes a package of one small WARC with the requires
// entries reqs to dir/name, and returns its path.
func newRequirer(t *testing.T, dir, name string, reqs []wacz.Requirement) string {
	t.Helper()
	warc := filepath.Join(t.TempDir(), "data.warc.gz")
	rec := warctest.Record("response", "http://example.com/", "2024-01-02T03:04:05Z",
		"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhello", "Content-Type: application/http; msgtype=response")
	if err := os.WriteFile(warc, warctest.Gzip(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: []string{warc}, Software: "test", Requires: reqs, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUnsoundRequires proves that the check after a package's rebuild
// names a package written anew that lacks an entry the job makes it
// need, or names a package written here by another hash or size, and
// passes one whose entries are complete and current (or named alone).
func TestUnsoundRequires(t *testing.T) {
	written := wacz.Requirement{Filename: "b.wacz", Hash: strings.Repeat("ab", 32), Size: 1000}
	cases := []struct {
		name string
		reqs []wacz.Requirement
		want string // in the one problem named; "" for none
	}{
		{"complete and current", []wacz.Requirement{written}, ""},
		{"named alone (a cycle)", []wacz.Requirement{{Filename: "b.wacz", Size: -1}}, ""},
		{"no entry (as the old Recover left it)", nil, "does not name b.wacz"},
		{"stale hash", []wacz.Requirement{{Filename: "b.wacz", Hash: strings.Repeat("cd", 32), Size: 1000}}, "names b.wacz with 1000 bytes"},
		{"stale size", []wacz.Requirement{{Filename: "b.wacz", Hash: written.Hash, Size: 999}}, "names b.wacz with 999 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := newRequirer(t, dir, "a.wacz", c.reqs)
			fi, err := os.Stat(a)
			if err != nil {
				t.Fatal(err)
			}
			pr := &PackageRewrite{
				paths:   map[string]string{"a.wacz": a, "b.wacz": filepath.Join(dir, "b.wacz")},
				deps:    map[[2]string]bool{{"a.wacz", "b.wacz"}: true},
				written: map[string]wacz.Requirement{"b.wacz": written},
			}
			got := pr.unsoundRequires(map[string]os.FileInfo{a: fi})
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("problems named in a sound package: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("got %q, want one problem naming %q", got, c.want)
			}
		})
	}
}

package stage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/wacz"
)

// TestUnsoundRequiresAttack attacks the check after Finish and Recover
// with the entries real packages carry: a Browsertrix entry of another
// crawl's package (crawlId, a hash this job never wrote), entries with a
// size alone or a hash alone, a dependency on a committed crawl's package
// outside the collection (named by file name), two dependencies of which
// one is named. It must name each incomplete or stale package, and
// nothing in a right one.
func TestUnsoundRequiresAttack(t *testing.T) {
	written := wacz.Requirement{Filename: "b.wacz", Hash: strings.Repeat("ab", 32), Size: 1000}
	other := wacz.Requirement{Filename: "x.wacz", Hash: strings.Repeat("ef", 32), Size: 77, CrawlID: "crawl-0"}
	cases := []struct {
		name     string
		reqs     []wacz.Requirement
		deps     [][2]string
		external bool // c.wacz is a committed crawl's (pr.externals)
		want     []string
	}{
		{"another crawl's entry beside a current one", []wacz.Requirement{other, written}, [][2]string{{"a.wacz", "b.wacz"}}, false, nil},
		{"size alone, current", []wacz.Requirement{{Filename: "b.wacz", Size: 1000}}, [][2]string{{"a.wacz", "b.wacz"}}, false, nil},
		{"size alone, stale", []wacz.Requirement{{Filename: "b.wacz", Size: 999}}, [][2]string{{"a.wacz", "b.wacz"}}, false, []string{"names b.wacz with 999 bytes"}},
		{"hash alone, current", []wacz.Requirement{{Filename: "b.wacz", Hash: written.Hash, Size: -1}}, [][2]string{{"a.wacz", "b.wacz"}}, false, nil},
		{"hash alone, stale", []wacz.Requirement{{Filename: "b.wacz", Hash: strings.Repeat("cd", 32), Size: -1}}, [][2]string{{"a.wacz", "b.wacz"}}, false, []string{"names b.wacz with -1 bytes"}},
		{"a committed crawl's package, named", []wacz.Requirement{{Filename: "c.wacz", Hash: strings.Repeat("12", 32), Size: 5, CrawlID: "crawl-0"}}, [][2]string{{"a.wacz", "crawl-0/c.wacz"}}, true, nil},
		{"a committed crawl's package, not named", nil, [][2]string{{"a.wacz", "crawl-0/c.wacz"}}, true, []string{"does not name c.wacz"}},
		{"two needed, one named", []wacz.Requirement{written}, [][2]string{{"a.wacz", "b.wacz"}, {"a.wacz", "d.wacz"}}, false, []string{"does not name d.wacz"}},
		{"its own package among its dependencies", []wacz.Requirement{written}, [][2]string{{"a.wacz", "b.wacz"}, {"a.wacz", "a.wacz"}}, false, nil},
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
				paths:     map[string]string{"a.wacz": a, "b.wacz": filepath.Join(dir, "b.wacz"), "d.wacz": filepath.Join(dir, "d.wacz")},
				deps:      map[[2]string]bool{},
				written:   map[string]wacz.Requirement{"b.wacz": written},
				externals: map[string]ExternalPackage{},
			}
			for _, d := range c.deps {
				pr.deps[d] = true
			}
			if c.external {
				pr.externals["crawl-0/c.wacz"] = ExternalPackage{Path: filepath.Join(t.TempDir(), "c.wacz"), CrawlID: "crawl-0"}
			}
			got := pr.unsoundRequires(map[string]os.FileInfo{a: fi})
			if len(got) != len(c.want) {
				t.Fatalf("got %q, want problems naming %q", got, c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("got %q, want %q in it", got[i], w)
				}
			}
		})
	}
}

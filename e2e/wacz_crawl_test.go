package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/replaytest"
)

// TestWACZCrawlsIndexChecked runs the real `warcdedup run --index` on
// three crawls of WACZ packages, each its own directory, one after the
// other, and checks every package with wacztest (a reader that shares
// no code with package wacz) loaded together as one collection: member
// hashes and sizes, digest files, indexes equal to warcio.js cdx-index,
// ZipNum blocks, and each relation.requires entry, those naming an
// earlier crawl's package included, with that package's current hash and
// size. Then the last crawl is taken out of the index and undone, and
// its packages are checked again and found as they were before its run.
func TestWACZCrawlsIndexChecked(t *testing.T) {
	cli := replaytest.WarcioCLI(t)
	gen := filepath.Join(t.TempDir(), "gen")
	coll := waczCollection(t, gen, 600)
	top := t.TempDir()
	index := filepath.Join(top, "index")
	all := filepath.Join(top, "all") // every package, as one collection loads them
	os.MkdirAll(all, 0o755)
	var crawls []string
	for _, p := range coll.Packages {
		dir := filepath.Join(top, p.CrawlID)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(gen, p.Name), filepath.Join(dir, p.Name)); err != nil {
			t.Fatal(err)
		}
		crawls = append(crawls, p.CrawlID)
	}
	if len(crawls) != 3 {
		t.Fatalf("%d crawls generated", len(crawls))
	}
	var lastBefore []byte
	for i, crawl := range crawls {
		if i == len(crawls)-1 {
			lastBefore = readFile(t, filepath.Join(top, crawl, coll.Packages[i].Name))
		}
		if _, stderr, code := sh(t, top, "warcdedup run --index "+index+" "+crawl); code != 0 {
			t.Fatalf("warcdedup run --index %s: exit %d\n%s", crawl, code, stderr)
		}
	}
	gather := func() {
		for _, p := range coll.Packages {
			if err := copyFileTo(filepath.Join(top, p.CrawlID, p.Name), filepath.Join(all, p.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	gather()
	r := checkPackages(t, cli, all, "after three crawls run with the index")
	if r.Requires == 0 {
		t.Fatal("no package requires another: nothing was proved across crawls")
	}
	out, stderr, code := sh(t, top, "unzip -p "+filepath.Join(all, coll.Packages[2].Name)+" datapackage.json")
	if code != 0 {
		t.Fatalf("unzip: %s", stderr)
	}
	if !strings.Contains(out, `"crawlId": "`+crawls[0]+`"`) && !strings.Contains(out, `"crawlId":"`+crawls[0]+`"`) {
		t.Errorf("%s does not require a package of %s:\n%s", coll.Packages[2].Name, crawls[0], out)
	}

	last := crawls[len(crawls)-1]
	if _, stderr, code := sh(t, top, "warcdedup index remove --index "+index+" "+last); code != 0 {
		t.Fatalf("warcdedup index remove %s: exit %d\n%s", last, code, stderr)
	}
	if _, stderr, code := sh(t, top, "warcdedup undo --index "+index+" "+last); code != 0 {
		t.Fatalf("warcdedup undo %s: exit %d\n%s", last, code, stderr)
	}
	gather()
	checkPackages(t, cli, all, "after the undo of "+last)
	if got := readFile(t, filepath.Join(top, last, coll.Packages[2].Name)); string(got) != string(lastBefore) {
		t.Errorf("after the undo of %s, %s is not the file it was", last, coll.Packages[2].Name)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

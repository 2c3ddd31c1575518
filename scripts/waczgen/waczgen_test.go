package waczgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/manifest"
	"warcdedup/scripts/gen"
	"warcdedup/wacz"
)

// TestWrite packages a generated collection of three crawls with 40%
// duplicates, in both index forms, and checks every package (hashes,
// digest file, ZipNum blocks, the index against the records), the
// multi-WACZ JSON, and that the expected manifest names WACZ members in
// digest order.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Write(dir, gen.Config{Files: 6, Records: 600, DupRate: 0.4, Seed: 3, MeanPayload: 3000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := Write(dir, res, Config{Packages: 4, Crawls: 3, Index: "mixed", LinesPerBlock: 40, CollectionJSON: "collection.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(coll.Packages) != 4 {
		t.Fatalf("%d packages", len(coll.Packages))
	}
	crawls := map[string]int{}
	for i, p := range coll.Packages {
		crawls[p.CrawlID]++
		pkg, err := wacz.Open(filepath.Join(dir, p.Name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := wacz.Check(pkg, wacz.CheckOptions{Records: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		wantKind := wacz.PlainIndex
		if i%2 == 1 {
			wantKind = wacz.ZipNumIndex
		}
		if len(r.Indexes) != 1 || r.Indexes[0].Kind != wantKind || r.Indexes[0].Lines != r.Indexed || wantKind == wacz.ZipNumIndex && r.Indexes[0].LinesPerBlock != 40 {
			t.Errorf("%s: indexes %+v, want one %v of %d lines", p.Name, r.Indexes, wantKind, r.Indexed)
		}
		pkg.Close()
	}
	if len(crawls) != 3 {
		t.Errorf("crawls %v", crawls)
	}
	f, err := os.Open(filepath.Join(dir, "collection.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := wacz.ReadCollection(f, "collection.json")
	if err != nil || len(entries) != 4 || entries[3].CrawlID != coll.Packages[3].CrawlID || entries[0].Hash != coll.Packages[0].SHA256 {
		t.Errorf("collection.json: %+v, %v", entries, err)
	}
	for _, n := range res.Names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s left beside the packages", n)
		}
	}
	for i := range res.Expected {
		l := &res.Expected[i]
		if _, member, ok := wacz.SplitName(l.File); !ok || !strings.HasPrefix(member, "archive/bt-") {
			t.Fatalf("expected line names %q", l.File)
		}
		if i > 0 && manifest.ByDigest.Compare(&res.Expected[i-1], l) > 0 {
			t.Fatalf("expected lines out of order at %d", i)
		}
	}
	if _, err := Write(t.TempDir(), &gen.Result{Names: []string{"a.arc.gz"}}, Config{}); err == nil {
		t.Error("an ARC file packaged")
	}
}

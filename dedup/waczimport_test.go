package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// waczThenWARC writes a crawl of two WACZ packages (crawl-0, one plain
// CDXJ, one ZipNum; named by a multi-WACZ JSON with their hash, size and
// crawlId) and a later crawl of plain WARC files whose payloads are in
// part theirs: top/wacz/collection.json and top/feb. (No truncated
// responses: a CDXJ does not say a record is truncated, and a run finds
// such an imported original stale and says so, exit status 1.)
func waczThenWARC(t *testing.T) (jsonPath, feb string) {
	t.Helper()
	top := t.TempDir()
	dir, feb := filepath.Join(top, "wacz"), filepath.Join(top, "feb")
	res, err := gen.Write(dir, gen.Config{Files: 4, Records: 400, DupRate: 0.4, Seed: 5, MeanPayload: 4 << 10, Sequential: true,
		CrossFile: 0.9, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz}})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 4, Crawls: 2, Index: "mixed", KeepWARCs: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(feb, 0o755); err != nil {
		t.Fatal(err)
	}
	var entries []wacz.CollectionEntry
	for _, p := range coll.Packages {
		for _, w := range p.WARCs {
			if p.CrawlID == "crawl-1" {
				err = os.Rename(filepath.Join(dir, w), filepath.Join(feb, w))
			} else {
				err = os.Remove(filepath.Join(dir, w))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if p.CrawlID == "crawl-1" {
			if err := os.Remove(filepath.Join(dir, p.Name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		entries = append(entries, wacz.CollectionEntry{Name: p.Name, Path: p.Name, Hash: p.SHA256, Size: p.Size, CrawlID: p.CrawlID})
	}
	jsonPath = filepath.Join(dir, "collection.json")
	f, err := os.Create(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := wacz.WriteCollection(f, entries); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return jsonPath, feb
}

// TestImportWACZ seeds a crawl index from WACZ packages, named by a
// multi-WACZ JSON or one by one, through their CDXJ alone (plain and
// ZipNum), then deduplicates a later crawl of WARC files against it. It
// proves that the crawl takes the JSON's crawlId (or --crawl), that its
// files are the packages (with their sizes) and each original is named
// by its package, that the later run compares bytes with them read from
// the packages by range, writes revisits, passes verification and
// records that it requires the imported crawl, and that the packages
// are left as they were.
func TestImportWACZ(t *testing.T) {
	cases := []struct {
		name     string
		operands func(jsonPath string) []string
		crawl    string // --crawl
		want     string // the crawl committed
	}{
		{name: "multi-WACZ JSON, crawlId", operands: func(j string) []string { return []string{j} }, want: "crawl-0"},
		{name: "WACZ files, --crawl", crawl: "jan", want: "jan", operands: func(j string) []string {
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(j), "*.wacz"))
			return m
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jsonPath, feb := waczThenWARC(t)
			index := filepath.Join(t.TempDir(), "index")
			before := hashTree(t, filepath.Dir(jsonPath))
			st, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: c.crawl, CDX: c.operands(jsonPath), Warn: func(err error) { t.Log(err) }})
			if err != nil || st.Imported == 0 {
				t.Fatalf("import: %v %+v", err, st)
			}
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Registry.Crawl(c.want) == nil {
				t.Fatalf("crawl %s not committed", c.want)
			}
			files, err := ix.Files(c.want)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 2 {
				t.Errorf("files of the crawl: %+v, want its two packages", files)
			}
			for _, f := range files {
				if !wacz.IsWACZ(f.Name) || f.Size == 0 {
					t.Errorf("file %+v: not a package with its size", f)
				}
			}
			r, err := ix.Originals()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				l, err := r.Next()
				if err != nil {
					break
				}
				n++
				if !strings.HasPrefix(l.File, c.want+"/crawl-0-") || !strings.HasSuffix(l.File, ".wacz") {
					t.Errorf("original %s: not named by its package", l.File)
				}
			}
			r.Close()
			if n == 0 {
				t.Fatal("no original in the index")
			}

			res, err := Run(context.Background(), Options{Collections: []string{feb}, Index: index, Jobs: 2})
			if err != nil || res.Report.Exit != 0 {
				t.Fatalf("the later crawl against the imported one: %v %v", err, res.Report.ExitReason)
			}
			if res.Report.Totals.RevisitsWritten == 0 {
				t.Fatal("no revisit written: the test proves nothing")
			}
			ix, err = crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			k := ix.Registry.Crawl("feb")
			if k == nil || len(k.Requires) != 1 || k.Requires[0].Crawl != c.want || k.Requires[0].Revisits == 0 {
				t.Errorf("feb requires %+v, want revisits of the imported crawl %s", k, c.want)
			}
			sameTree(t, "the imported packages", hashTree(t, filepath.Dir(jsonPath)), before)
		})
	}
}

// TestImportWACZRefused proves that an import of packages that cannot be
// read as named is a clear error and commits nothing.
func TestImportWACZRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, jsonPath string) ([]string, string) // operands, --crawl
		want  string
	}{
		{name: "WACZ files without --crawl", want: "name the crawl", setup: func(t *testing.T, j string) ([]string, string) {
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(j), "*.wacz"))
			return m, ""
		}},
		{name: "a size mismatch", want: "not the package the JSON names", setup: func(t *testing.T, j string) ([]string, string) {
			b, _ := os.ReadFile(j)
			os.WriteFile(j, []byte(strings.Replace(string(b), `"size": `, `"size": 1`, 1)), 0o644)
			return []string{j}, ""
		}},
		{name: "a package missing", want: "the package is missing", setup: func(t *testing.T, j string) ([]string, string) {
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(j), "*.wacz"))
			os.Remove(m[0])
			return []string{j}, ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jsonPath, _ := waczThenWARC(t)
			index := filepath.Join(t.TempDir(), "index")
			ops, crawl := c.setup(t, jsonPath)
			_, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: crawl, CDX: ops})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if ix, err := crawlindex.Open(index); err == nil && len(ix.Registry.Crawls) > 0 {
				t.Errorf("crawls committed: %+v", ix.Registry.Crawls)
			}
		})
	}
}

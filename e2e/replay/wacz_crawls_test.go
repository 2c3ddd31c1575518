//go:build browser

package replay

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"testing"

	"warcdedup/internal/replaytest"
	"warcdedup/internal/wacztest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// TestReplayWACZCrawls deduplicates three crawls of WACZ packages (a
// directory each, a day apart) one after the other with the real
// `warcdedup run --index`, each against the crawls committed before it,
// and loads the packages of all three before and after into
// ReplayWeb.page as one multi-WACZ collection. For every record that
// became a revisit, status, Content-Type, Content-Encoding and body
// bytes must be what they were, including the revisits whose original
// is in an earlier crawl's package (those carrying
// WARC-Refers-To-Container). Every package is checked by wacztest.
func TestReplayWACZCrawls(t *testing.T) {
	root := t.TempDir()
	genDir := filepath.Join(root, "gen")
	res, err := gen.Write(genDir, gen.Config{Files: 6, Records: 600, DupRate: 0.4, Seed: 43, MeanPayload: 4000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(genDir, res, waczgen.Config{Packages: 3, Crawls: 3, Index: "mixed", LinesPerBlock: 40})
	if err != nil {
		t.Fatal(err)
	}
	// before/CRAWL/NAME.wacz and after/CRAWL/NAME.wacz: the crawl's
	// directory is its name in the index, as the rewrite logs name its
	// packages.
	var rel []string
	for _, cp := range coll.Packages {
		rel = append(rel, path.Join(cp.CrawlID, cp.Name))
		for _, side := range []string{"before", "after"} {
			if err := copyFile(filepath.Join(genDir, cp.Name), filepath.Join(root, side, cp.CrawlID, cp.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	index := filepath.Join(root, "index")
	var revs []waczRevisit
	for _, cp := range coll.Packages {
		runWarcdedup(t, "run", "--index", index, filepath.Join(root, "after", cp.CrawlID))
		revs = append(revs, waczRevisits(t, filepath.Join(root, "before"), filepath.Join(root, "after"),
			filepath.Join(index, "work", cp.CrawlID, "rewrite.log"))...)
	}
	if len(revs) == 0 {
		t.Fatal("warcdedup run --index wrote no revisit")
	}

	// Every package, checked together by a reader other than package
	// wacz (requires entries name packages of the directory).
	if cli := replaytest.WarcioCLI(t); cli != "" {
		flat := t.TempDir()
		for i, cp := range coll.Packages {
			if err := copyFile(filepath.Join(root, "after", rel[i]), filepath.Join(flat, cp.Name)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := wacztest.CheckDir(cli, flat, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Errorf("the packages warcdedup run --index wrote: %v", err)
		}
		if r.Requires == 0 {
			t.Error("no package requires another")
		}
		t.Logf("checked: %s", r)
	}

	for _, side := range []string{"before", "after"} {
		writeCrawlsJSON(t, filepath.Join(root, side), rel, coll)
	}
	b := replaytest.Start(t, root)
	rp := replayBeforeAfter(t, b, revs)
	if rp.cross == 0 {
		t.Error("no revisit has its original in an earlier crawl's package: nothing proved across crawls")
	}
	t.Logf("3 crawls run with the index, one multi-WACZ collection: %d revisits compared (%d with the original in an earlier crawl's package), %d differ; loaded in %v before, %v after",
		len(revs), rp.cross, rp.bad, rp.loadBefore, rp.loadAfter)
}

// writeCrawlsJSON writes dir/collection.json naming the packages at the
// paths rel (below dir), each by its file name, as relation.requires and
// WARC-Refers-To-Container name them.
func writeCrawlsJSON(t *testing.T, dir string, rel []string, coll *waczgen.Collection) {
	t.Helper()
	type resource struct {
		Name    string `json:"name"`
		Path    string `json:"path"`
		Hash    string `json:"hash"`
		Size    int64  `json:"size"`
		CrawlID string `json:"crawlId"`
	}
	var doc struct {
		Resources []resource `json:"resources"`
	}
	for i, p := range rel {
		sum, size := fileSum(t, filepath.Join(dir, filepath.FromSlash(p)))
		doc.Resources = append(doc.Resources, resource{path.Base(p), p, sum, size, coll.Packages[i].CrawlID})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "collection.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

package redisindex

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
)

// TestBrowsertrixIndexer runs Browsertrix's own indexer (the crawler's
// `indexer` entry point, src/indexer.ts, built with npm) on the fixture's
// WACZ files, listed in a multi-WACZ JSON with their crawl ids, into one
// Redis, exports the crawl index of the same crawls into another, and
// compares the two entry for entry. It needs the built indexer:
// WARCDEDUP_BROWSERTRIX_INDEXER=/path/to/browsertrix-crawler/dist/indexer.js
// (nothing of the crawler is part of this repository; the test skips
// without it).
//
// Where the two differ by design, the test says so and checks the
// difference is the one documented (docs/browsertrix-redis.md):
// the indexer writes WACZ index 0 in every entry (it never counts its
// source files), keeps the first line of a digest in CDXJ order whatever
// its status (a 404 among them), and counts conservedSize from record
// lengths where the crawl index has its run's figure.
func TestBrowsertrixIndexer(t *testing.T) {
	indexer := os.Getenv("WARCDEDUP_BROWSERTRIX_INDEXER")
	if indexer == "" {
		t.Skip("WARCDEDUP_BROWSERTRIX_INDEXER (Browsertrix's built dist/indexer.js) not set")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, twoCrawls()...)

	ours := redistest.Start(t)
	oc := dial(t, ours)
	export(t, oc, fx.index, ExportOptions{})

	theirs := redistest.Start(t)
	tc := dial(t, theirs)
	type resource struct {
		Name    string `json:"name"`
		Path    string `json:"path"`
		Hash    string `json:"hash"`
		Size    int64  `json:"size"`
		CrawlID string `json:"crawlId"`
	}
	var res []resource
	for _, c := range fx.crawls {
		for _, w := range c.waczs {
			f := fx.file(t, w.name)
			res = append(res, resource{w.name, filepath.Join(fx.dir, w.name), f.SHA256, f.Size, c.name})
		}
	}
	data, _ := json.Marshal(map[string]any{"resources": res})
	multi := filepath.Join(t.TempDir(), "collection.json")
	if err := os.WriteFile(multi, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", indexer, "--redisDedupeUrl", theirs.URL, "--sourceUrl", multi)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Browsertrix's indexer: %v\n%s", err, out)
	}

	a, b := dump(t, oc), dump(t, tc)
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			t.Logf("the indexer's key %s (not an export's): %.200s", k, b[k])
		}
	}
	for _, k := range []string{"allcrawls", "src:d", "c:c0:wacz", "c:c1:wacz", "alldupes"} {
		if a[k] != normaliseList(b[k]) {
			t.Errorf("%s:\nours\n%s\nBrowsertrix's indexer\n%s", k, a[k], b[k])
		}
	}
	// h:CRAWL, entry for entry.
	for _, crawl := range []string{"c0", "c1"} {
		ourEntries, theirEntries := entries(t, oc, crawl), entries(t, tc, crawl)
		for d, o := range ourEntries {
			th, ok := theirEntries[d]
			switch {
			case !ok:
				t.Errorf("h:%s: %s is ours (%s), not the indexer's", crawl, d, o)
				continue
			case th.URL == "http://ex.com/404":
				// The indexer takes the first line of the digest in CDXJ
				// order, a 404; the crawl index's originals are 2xx.
				t.Logf("h:%s %s: ours %s, the indexer's %s (a 404 with the same payload, first in CDXJ order)", crawl, d, o, th)
				delete(theirEntries, d)
				continue
			}
			if len(o.Date) > 14 && th.Date == o.Date[:14] {
				// The indexer's date is the CDXJ timestamp's 14 digits; the
				// crawler writes its own records' milliseconds, as ours do.
				t.Logf("h:%s %s: ours dated %s, the indexer %s (a CDXJ timestamp has no milliseconds)", crawl, d, o.Date, th.Date)
				th.Date = o.Date
			}
			if th.URL != o.URL || th.Date != o.Date || th.Size != o.Size {
				t.Errorf("h:%s %s: ours %s, the indexer's %s", crawl, d, o, th)
			}
			if th.WACZ != o.WACZ {
				if th.WACZ != 0 {
					t.Errorf("h:%s %s: ours names WACZ %d, the indexer %d", crawl, d, o.WACZ, th.WACZ)
				}
				t.Logf("h:%s %s: ours names WACZ %d (the file holding the record), the indexer 0 (it writes 0 always)", crawl, d, o.WACZ)
			}
			delete(theirEntries, d)
		}
		for d, th := range theirEntries {
			t.Logf("h:%s %s: the indexer's only (%s): a record the crawl index does not take as an original", crawl, d, th)
		}
		// The counts both keep the same way.
		oc, tcnt := countsMap(t, oc, crawl), countsMap(t, tc, crawl)
		for _, f := range []string{countTotalURLs, countDupeURLs, countCrawlSize} {
			if oc[f] != tcnt[f] {
				t.Errorf("h:%s:counts %s: ours %q, the indexer's %q", crawl, f, oc[f], tcnt[f])
			}
		}
		t.Logf("h:%s:counts conservedSize: ours %q (the run's figure), the indexer's %q (from record lengths)", crawl, oc[countConserved], tcnt[countConserved])
	}
	ac, tac := allCounts(t, oc), allCounts(t, tc)
	for _, f := range []string{countTotalURLs, countDupeURLs, countCrawlSize} {
		if ac[f] != tac[f] {
			t.Errorf("allcounts %s: ours %q, the indexer's %q", f, ac[f], tac[f])
		}
	}

	// What the indexer wrote, imported: the crawls, originals and
	// dependencies of the crawl index the WACZ files came from.
	back := filepath.Join(t.TempDir(), "back")
	if _, err := importInto(t, tc, back, fx.dir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	wantCrawls, wantOriginals := facts(t, fx.index)
	gotCrawls, gotOriginals := facts(t, back)
	for i, l := range wantOriginals {
		// Dated to the second by the indexer (above).
		wantOriginals[i] = strings.Replace(l, ":03.250Z", ":03Z", 1)
	}
	for i := range wantCrawls {
		// The indexer's conservedSize is its own (see above).
		wantCrawls[i].Conserved, gotCrawls[i].Conserved = 0, 0
	}
	if fmt.Sprint(gotCrawls) != fmt.Sprint(wantCrawls) {
		t.Errorf("crawls imported from the indexer's keys:\n%+v\nwant\n%+v", gotCrawls, wantCrawls)
	}
	if !slices.Equal(gotOriginals, wantOriginals) {
		t.Errorf("originals imported from the indexer's keys:\n%s\nwant\n%s", strings.Join(gotOriginals, "\n"), strings.Join(wantOriginals, "\n"))
	}
}

func allCounts(t *testing.T, c *redis.Conn) map[string]string {
	t.Helper()
	kv, err := redis.Strings(c.Do("HGETALL", "allcounts"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// normaliseList rewrites the indexer's c:CRAWL:wacz entries, which it
// writes {filename, size, hash}, in the crawler's order {filename, hash,
// size}; other values are returned as they are.
func normaliseList(v string) string {
	if !strings.HasPrefix(v, "list:") {
		return v
	}
	lines := strings.Split(strings.TrimPrefix(v, "list:\n  "), "\n  ")
	for i, l := range lines {
		if w, err := ParseWACZFile(l); err == nil {
			lines[i] = w.String()
		}
	}
	return "list:\n  " + strings.Join(lines, "\n  ")
}

func entries(t *testing.T, c *redis.Conn, crawl string) map[string]Entry {
	t.Helper()
	kv, err := redis.Strings(c.Do("HGETALL", "h:"+crawl))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Entry{}
	for i := 0; i < len(kv); i += 2 {
		e, err := ParseEntry(kv[i+1])
		if err != nil {
			t.Fatalf("h:%s %s: %v", crawl, kv[i], err)
		}
		out[kv[i]] = e
	}
	return out
}

func countsMap(t *testing.T, c *redis.Conn, crawl string) map[string]string {
	t.Helper()
	kv, err := redis.Strings(c.Do("HGETALL", "h:"+crawl+":counts"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

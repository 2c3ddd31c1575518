package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"warcdedup/internal/progress"
)

// TestFiguresTablesAndJSON runs the commands that print figures as a user
// does: index stats and index deps print tables by default and JSON with
// --json, the same figures; assess prints its summary on stdout, or the
// report's JSON with --json (stats.json's figures), its progress on
// stderr.
func TestFiguresTablesAndJSON(t *testing.T) {
	dir := t.TempDir()
	undoCollection(t, dir, true) // crawls/crawl-0, crawl-1, the second's duplicates of the first
	for _, c := range []string{"crawl-0", "crawl-1"} {
		if _, stderr, code := sh(t, dir, "warcdedup run -q -j 2 --index idx crawls/"+c); code != 0 {
			t.Fatalf("run --index %s: exit %d\n%s", c, code, stderr)
		}
	}

	table, stderr, code := sh(t, dir, "warcdedup index stats --index idx")
	raw, _, jcode := sh(t, dir, "warcdedup index stats --json --index idx")
	t.Logf("index stats:\n%s", table)
	var st struct {
		Total struct {
			Crawls  int   `json:"crawls"`
			Records int64 `json:"records"`
		} `json:"total"`
	}
	if code != 0 || jcode != 0 || json.Unmarshal([]byte(raw), &st) != nil || st.Total.Crawls != 2 {
		t.Fatalf("index stats: exit %d, --json exit %d %q\n%s", code, jcode, raw, stderr)
	}
	if strings.Contains(table, "{") || !strings.Contains(table, "2 crawls committed") ||
		!regexp.MustCompile(`(?m)^ *crawl-0 +\d{4}-\d\d-\d\d \d\d:\d\d `).MatchString(table) ||
		!regexp.MustCompile(`(?m)^ *total +[0-9,]+ +\S+ \S+ +`+regexp.QuoteMeta(commas(st.Total.Records))+` `).MatchString(table) {
		t.Errorf("index stats does not print a table of the crawls with the JSON's total of %d records", st.Total.Records)
	}

	deps, _, code := sh(t, dir, "warcdedup index deps --index idx crawl-1")
	rdeps, _, rcode := sh(t, dir, "warcdedup index deps --reverse --index idx crawl-0")
	rjson, _, _ := sh(t, dir, "warcdedup index deps --reverse --json --index idx crawl-0")
	t.Logf("index deps:\n%s%s", deps, rdeps)
	var rj struct {
		RequiredBy []struct {
			Crawl    string `json:"crawl"`
			Revisits int64  `json:"revisits"`
		} `json:"required_by"`
	}
	if code != 0 || rcode != 0 || json.Unmarshal([]byte(rjson), &rj) != nil || strings.Contains(deps+rdeps, "{") {
		t.Fatalf("index deps: exit %d, %d; --json %q", code, rcode, rjson)
	}
	if len(rj.RequiredBy) != 1 || !strings.Contains(rdeps, "the revisits of 1 crawl need it") ||
		!regexp.MustCompile(`(?m)^  crawl-1 +`+regexp.QuoteMeta(commas(rj.RequiredBy[0].Revisits))+` *$`).MatchString(rdeps) ||
		!regexp.MustCompile(`(?m)^  crawl-0 +`+regexp.QuoteMeta(commas(rj.RequiredBy[0].Revisits))+` +\S`).MatchString(deps) ||
		!strings.Contains(deps, "its revisits need 1 crawl") {
		t.Errorf("index deps: the tables do not say what the JSON does (%+v)", rj.RequiredBy)
	}

	// index verify says what it read: --deep, every file whole.
	shallow, _, code := sh(t, dir, "warcdedup index verify --index idx")
	deep, _, dcode := sh(t, dir, "warcdedup index verify --deep --index idx")
	if code != 0 || dcode != 0 || shallow == deep || !strings.Contains(shallow, "checked by size and stamp, not read") ||
		!strings.Contains(deep, "the 4 files of the crawls whole (1.6 MB), each file's SHA-256 compared") {
		t.Errorf("index verify: exit %d, %d; it says\n%s\nand with --deep\n%s", code, dcode, shallow, deep)
	}

	// assess: the summary on stdout, the report's figures with --json.
	smallCollection(t, dir, "a")
	summary, shown, code := sh(t, dir, "warcdedup assess -j 2 a")
	if code != 0 || !strings.Contains(summary, "would be saved") || strings.Contains(shown, "would be saved") || !strings.Contains(shown, "hash: started") {
		t.Errorf("assess: exit %d; stdout\n%s\nstderr\n%s", code, summary, shown)
	}
	out, errs, code := sh(t, dir, "warcdedup assess -j 2 --json a")
	var rep struct {
		Mode   string `json:"mode"`
		Totals struct {
			Duplicates int64 `json:"duplicates"`
		} `json:"totals"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Mode != "dry run" || strings.Contains(out, "would be saved") {
		t.Errorf("assess --json: exit %d, %q\n%s", code, out, errs)
	}
	stats := readStats(t, filepath.Join(dir, "a.warcdedup", "stats.json"))
	if rep.Totals.Duplicates != stats.Totals.Duplicates {
		t.Errorf("assess --json: %d duplicates, stats.json %d", rep.Totals.Duplicates, stats.Totals.Duplicates)
	}
}

// commas is n with thousands separated, as the tables print it.
func commas(n int64) string { return progress.Count(n) }

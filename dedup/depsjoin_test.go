package dedup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/syssort"
	"warcdedup/stage"
)

// TestDepsJoinOneURIManyCaptures joins one URI captured at 20,000 dates,
// each date's revisit referring to that date's response and an undated
// revisit to the earliest response of its digest, as the capture lines
// come sorted: the counts are right, and the join holds one date's
// responses, not the URI's every capture.
func TestDepsJoinOneURIManyCaptures(t *testing.T) {
	const dates = 20000
	counts := &stage.DepsCounter{Sorter: syssort.Sorter{TempDir: t.TempDir()}}
	j := newDepsJoin(counts)
	add := func(date, kind, digest, file string) {
		t.Helper()
		if err := j.add("http://example.com/tracker.js", date, kind, digest, file); err != nil {
			t.Fatal(err)
		}
	}
	add("*", captureRevisit, "sha1:B", "undated.warc.gz")
	add("*", captureRevisit, "sha1:Z", "undated.warc.gz") // no response of its digest
	most := 0
	for d := range dates {
		date := fmt.Sprintf("2024%010d", d)
		digest := "sha1:A"
		if d == 7 || d == 9 {
			digest = "sha1:B" // the undated revisit's original: the first of these
		}
		add(date, captureResponse, digest, fmt.Sprintf("crawl-%d.warc.gz", d%3))
		add(date, captureRevisit, digest, "revisits.warc.gz")
		most = max(most, len(j.responses))
	}
	add("2025", captureRevisit, "sha1:A", "revisits.warc.gz") // no response of its date
	j.endURI()
	if most > 1 {
		t.Errorf("held %d responses of the URI at once, want those of one date (1)", most)
	}
	out := filepath.Join(t.TempDir(), "deps.tsv")
	if err := counts.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	per := dates / 3 // dates d with d%3 == k, for k = 0, 1, 2
	want := stage.DepsHeader +
		fmt.Sprintf("revisits.warc.gz\tcrawl-0.warc.gz\t%d\n", per+1) +
		fmt.Sprintf("revisits.warc.gz\tcrawl-1.warc.gz\t%d\n", per+1) +
		fmt.Sprintf("revisits.warc.gz\tcrawl-2.warc.gz\t%d\n", per) +
		"undated.warc.gz\tcrawl-1.warc.gz\t1\n" + // date 7: 7%3 == 1
		"# 2 revisits refer to no record of the collection\n"
	if string(got) != want {
		t.Errorf("deps:\n%s\nwant:\n%s", got, want)
	}
}

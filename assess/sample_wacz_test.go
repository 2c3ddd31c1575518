package assess

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"warcdedup/dedup"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// TestSampleWACZ assesses WACZ packages from a sample of their WARC
// members, given as a directory of packages, a multi-WACZ JSON and a
// package named alone, by files and by digests. With every member drawn
// the estimate must be exactly what a dry run of the whole finds; with
// fewer, the sample is the members drawn (not the packages), and the
// totals those of every member.
func TestSampleWACZ(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	res, err := gen.Write(dir, gen.Config{Files: 8, Records: 400, DupRate: 0.4, Seed: 5, MeanPayload: 4 << 10, NonCandidates: true,
		Sequential: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waczgen.Write(dir, res, waczgen.Config{Packages: 4, Crawls: 2, Index: "mixed", CollectionJSON: "collection.json"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		operand string
		members int
		by      SampleBy
	}{
		{".", 8, SampleFiles},
		{"collection.json", 8, SampleFiles},
		{"collection.json", 8, SampleDigests},
		{"crawl-1-1.wacz", 2, SampleFiles},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s by %s", c.operand, c.by), func(t *testing.T) {
			op := filepath.Join(dir, c.operand)
			full, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{op}, WorkDir: filepath.Join(t.TempDir(), "full"), Jobs: 2, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			truth := full.Report.Totals
			if truth.Files != int64(c.members) || truth.Duplicates == 0 {
				t.Fatalf("the dry run read %d files, %d duplicates: want %d members with duplicates", truth.Files, truth.Duplicates, c.members)
			}
			for _, percent := range []float64{100, 50} {
				out := filepath.Join(t.TempDir(), "assess")
				r, err := Sample(context.Background(), SampleOptions{Job: dedup.Options{Collections: []string{op}, Jobs: 2},
					Dir: out, Percent: percent, Seed: 3, By: c.by})
				if err != nil {
					t.Fatalf("%v%%: %v", percent, err)
				}
				rep := r.Report
				if rep.Totals.Files != truth.Files || rep.Totals.StoredBytes != truth.StoredBytes {
					t.Errorf("%v%%: totals %d files %d bytes, the dry run %d files %d bytes", percent, rep.Totals.Files, rep.Totals.StoredBytes, truth.Files, truth.StoredBytes)
				}
				e := rep.Estimate
				if e == nil {
					t.Fatalf("%v%%: no estimate", percent)
				}
				if c.by == SampleFiles && e.SampledFiles != int64(SampleSize(c.members, percent)) {
					t.Errorf("%v%%: %d members drawn, want %d", percent, e.SampledFiles, SampleSize(c.members, percent))
				}
				if percent == 100 && (e.Duplicates != truth.Duplicates || e.BytesSaved != truth.BytesSaved) {
					t.Errorf("100%%: estimate %d duplicates, %d bytes saved; the dry run %d, %d", e.Duplicates, e.BytesSaved, truth.Duplicates, truth.BytesSaved)
				}
			}
		})
	}
}

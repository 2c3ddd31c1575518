package assess

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/archname"
	"warcdedup/dedup"
	"warcdedup/report"
	"warcdedup/scripts/gen"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

var sampleCfg = gen.Config{Files: 10, Records: 600, DupRate: 0.4, Seed: 11, MeanPayload: 6 << 10, NonCandidates: true,
	ReplayVariants: 0.1, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11, gen.WARC11Gz, gen.WARC10, gen.ARCGz}}

// TestSample runs the sample assessment on a generated collection: with
// every file drawn its estimate must be exactly what a dry run of the
// whole collection finds (which proves the join of the dry run's files
// and the per-file accounting), with fewer it must say what it read and
// give a range around its estimate, never below what the files read hold.
func TestSample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	generated, err := gen.Write(dir, sampleCfg)
	if err != nil {
		t.Fatal(err)
	}
	full, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "full"), Jobs: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	truth := full.Report.Totals
	if truth.Duplicates == 0 || truth.BytesSaved == 0 {
		t.Fatalf("the collection has nothing to find: %+v", truth)
	}
	// What the estimate is checked against counts right: ARC duplicates
	// and revisits that would not be smaller are kept, not saved, and the
	// largest classes rank by bytes.
	var arcDups int64
	for _, l := range generated.Expected {
		if l.IsDuplicate() && archname.IsARC(l.File) {
			arcDups++
		}
	}
	kept := map[string]int64{}
	for _, k := range full.Report.NotDeduplicable {
		kept[k.Why[:10]] += k.Records
	}
	if arcDups == 0 || kept["in an ARC "] != arcDups || truth.RevisitsWritten+kept["in an ARC "]+kept["its revisi"] != truth.Duplicates {
		t.Errorf("%d duplicates, %d revisits, kept %v; the generator put %d duplicates in ARC files", truth.Duplicates, truth.RevisitsWritten, kept, arcDups)
	}
	if !slices.IsSortedFunc(full.Report.LargestClasses, func(a, b report.Class) int { return int(b.DuplicateBytes - a.DuplicateBytes) }) {
		t.Errorf("the largest classes are not in order of duplicate bytes")
	}
	cases := []struct {
		percent float64
		files   int
	}{{100, 10}, {40, 4}, {5, 2}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v%%", c.percent), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "assess")
			res, err := Sample(context.Background(), SampleOptions{Job: dedup.Options{Collections: []string{dir}, Jobs: 2},
				Dir: out, Percent: c.percent, Seed: 3, By: SampleFiles})
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report
			e := rep.Estimate
			if rep.Mode != "sample" || e == nil || e.SampledFiles != int64(c.files) || rep.Totals.Files != truth.Files || rep.Totals.StoredBytes != truth.StoredBytes {
				t.Fatalf("mode %q, estimate %+v, totals %+v: want a sample of %d of %d files", rep.Mode, e, rep.Totals, c.files, truth.Files)
			}
			read := res.Sample.Report.Totals
			for _, f := range []struct {
				name                        string
				value, low, high, read, all int64
			}{
				{"duplicates", e.Duplicates, e.DuplicatesLow, e.DuplicatesHigh, read.Duplicates, truth.Duplicates},
				{"bytes saved", e.BytesSaved, e.BytesSavedLow, e.BytesSavedHigh, read.BytesSaved, truth.BytesSaved},
			} {
				t.Logf("%s: %d, between %d and %d; %d in the files read, %d in all", f.name, f.value, f.low, f.high, f.read, f.all)
				if c.percent == 100 {
					if f.value != f.all || f.low != f.all || f.high != f.all {
						t.Errorf("%s: %d (%d to %d) from every file, the dry run finds %d", f.name, f.value, f.low, f.high, f.all)
					}
					continue
				}
				if !(f.read <= f.low && f.low <= f.value && f.value <= f.high && f.low < f.high) {
					t.Errorf("%s: %d, between %d and %d, %d read: not in order", f.name, f.value, f.low, f.high, f.read)
				}
			}
			for _, name := range []string{workdir.StatsFile, workdir.ReportFile, "job/" + workdir.StatsFile} {
				if _, err := os.Stat(filepath.Join(out, name)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestChooseFiles checks the draw: its size, that it depends on the seed
// alone (not the order the files are listed in), and that it changes
// with the seed.
func TestChooseFiles(t *testing.T) {
	var inputs []warcsum.Input
	for i := range 40 {
		inputs = append(inputs, warcsum.Input{Name: fmt.Sprintf("f%02d.warc.gz", i)})
	}
	names := func(in []warcsum.Input) []string {
		var out []string
		for _, i := range in {
			out = append(out, i.Name)
		}
		return out
	}
	a := names(ChooseFiles(inputs, 25, 1))
	reversed := slices.Clone(inputs)
	slices.Reverse(reversed)
	if b := names(ChooseFiles(reversed, 25, 1)); !slices.Equal(a, b) {
		t.Errorf("the draw depends on the order of the files: %v, %v", a, b)
	}
	if c := names(ChooseFiles(inputs, 25, 2)); slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 draw the same files %v", a)
	}
	if len(a) != 10 || !slices.IsSorted(a) {
		t.Errorf("drew %v: want 10 files in order", a)
	}
	sizes := []struct {
		files   int
		percent float64
		want    int
	}{{40, 25, 10}, {40, 1, 2}, {1, 10, 1}, {3, 100, 3}, {1000, 10, 100}, {7, 50, 4}}
	for _, s := range sizes {
		if got := SampleSize(s.files, s.percent); got != s.want {
			t.Errorf("SampleSize(%d, %v) = %d, want %d", s.files, s.percent, got, s.want)
		}
	}
}

package refs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/scripts/gen"
	"warcdedup/source"
)

// countingOpener counts the reads of originals from their files.
type countingOpener struct {
	originals.Opener
	n atomic.Int64
}

func (c *countingOpener) Open(ctx context.Context, file string, offset, length int64) (io.ReadCloser, error) {
	c.n.Add(1)
	return c.Opener.Open(ctx, file, offset, length)
}

// countedOriginals is rewritetest.Originals reading through a counter.
func countedOriginals(t *testing.T, all []manifest.Line, root string) (*originals.Originals, *countingOpener) {
	t.Helper()
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	text := rewritetest.ManifestText(sorted)
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
	if err != nil {
		t.Fatal(err)
	}
	src := &countingOpener{Opener: &source.Locator{Roots: []string{root}}}
	o, err := originals.New(src, tab)
	if err != nil {
		t.Fatal(err)
	}
	return o, src
}

// usesTable is how the originals manifest given to the rewrite lists the
// duplicates it rewrites, from which OpenPlanned learns how many times
// each small original is read (and streams the only read, drops one after
// its last).
type usesTable struct {
	name string
	of   func(all []manifest.Line) []manifest.Line
	// reread: the originals read several times are read from their
	// files each time (more reads than with the right counts).
	reread bool
}

// TestRewriteWhateverTheUsesSay proves that the rewrite's result does not
// depend on the reads of each original the tables count, right or wrong,
// nor on the number of walks: a table listing each duplicate (counted
// right), none (not known: kept until evicted), one of each original's
// (each read streamed, the original read again from its file, replaced
// meanwhile by the in-place rewrite of its own duplicates), or each twice
// (kept past its last read). Every case writes the same bytes as the
// first, with no refusal and no deadlock between the reads that hold a
// file's read lock while they compare and the replacement of that file
// (run it with -race).
func TestRewriteWhateverTheUsesSay(t *testing.T) {
	c := generate(t, gen.Config{Files: 6, Records: 600, DupRate: 0.85, Seed: 2611, MeanPayload: 1 << 10, CrossFile: 0.9,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11}})
	tables := []usesTable{
		{"every duplicate listed", func(all []manifest.Line) []manifest.Line { return all }, false},
		{"no duplicate listed", func(all []manifest.Line) []manifest.Line {
			var out []manifest.Line
			for _, l := range all {
				if !l.IsDuplicate() {
					out = append(out, l)
				}
			}
			return out
		}, false},
		{"one duplicate of each original listed", func(all []manifest.Line) []manifest.Line {
			var out []manifest.Line
			seen := map[string]bool{}
			for _, l := range all {
				key := fmt.Sprint(l.Digest, l.Class, l.RefURI, l.RefDate)
				if l.IsDuplicate() && seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, l)
			}
			return out
		}, true},
		{"every duplicate listed twice", func(all []manifest.Line) []manifest.Line {
			var out []manifest.Line
			for _, l := range all {
				out = append(out, l)
				if l.IsDuplicate() {
					out = append(out, l)
				}
			}
			return out
		}, false},
	}
	reads := 0
	for _, l := range c.all {
		if l.IsDuplicate() {
			reads++
		}
	}
	if reads < 300 {
		t.Fatalf("%d duplicates: the test needs originals read many times", reads)
	}
	var want map[string][]byte
	var wantRevisits, rightReads int64
	for _, tab := range tables {
		for _, jobs := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s, jobs %d", tab.name, jobs), func(t *testing.T) {
				dir := t.TempDir()
				rewritetest.CopyDir(t, c.dir, dir)
				orig, opened := countedOriginals(t, tab.of(c.all), dir)
				o := mustRunWith(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs, Originals: orig}, c.lines, nil)
				got := rewritetest.Snapshot(t, dir)
				t.Logf("%d reads of originals from their files, %d revisits", opened.n.Load(), o.stats.Revisits)
				if tab.reread && opened.n.Load() <= rightReads {
					t.Errorf("%d reads of originals from their files, %d with the right counts: no original was read again", opened.n.Load(), rightReads)
				}
				if want == nil {
					want, wantRevisits, rightReads = got, o.stats.Revisits, opened.n.Load()
					if o.stats.Revisits < 200 || o.stats.Rewritten < 6 {
						t.Fatalf("%+v: the test needs every file rewritten and many revisits", o.stats)
					}
					return
				}
				if o.stats.Revisits != wantRevisits {
					t.Errorf("%d revisits, want %d", o.stats.Revisits, wantRevisits)
				}
				rewritetest.SameFiles(t, "the files", got, want)
			})
		}
	}
}

package refs

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"warcdedup/archname"
	"warcdedup/internal/rewritetest"
	"warcdedup/rewritelog"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

var warcFormats = []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11}

// TestRewriteGenerated rewrites generated collections of every WARC format
// and checks the result against the originals, the manifest and the log,
// and that the other modes (output directory, dry run, a second run, a run
// finishing an interrupted one) agree with it.
func TestRewriteGenerated(t *testing.T) {
	tests := []struct {
		name string
		cfg  gen.Config
		jobs int
	}{
		{"warc.gz with non-candidate records", gen.Config{Files: 3, Records: 120, DupRate: 0.4, Seed: 1,
			Formats: []gen.Format{gen.WARC10Gz}, NonCandidates: true, MeanPayload: 3 << 10}, 1},
		{"plain warc with chunked payloads and quirks", gen.Config{Files: 3, Records: 120, DupRate: 0.5, Seed: 2,
			Formats: []gen.Format{gen.WARC10}, Chunked: 0.3, Quirks: true, NonCandidates: true, MeanPayload: 3 << 10}, 2},
		{"warc1.1.gz with chunked payloads", gen.Config{Files: 2, Records: 100, DupRate: 0.5, Seed: 3,
			Formats: []gen.Format{gen.WARC11Gz}, Chunked: 0.3, NonCandidates: true, MeanPayload: 3 << 10}, 2},
		{"plain warc1.1 with quirks", gen.Config{Files: 2, Records: 100, DupRate: 0.5, Seed: 4,
			Formats: []gen.Format{gen.WARC11}, Quirks: true, NonCandidates: true, MeanPayload: 3 << 10}, 1},
		{"four WARC formats mixed, everything on, 4 jobs", gen.Config{Files: 8, Records: 300, DupRate: 0.5, Seed: 5,
			Formats: warcFormats, Chunked: 0.2, Quirks: true, NonCandidates: true, MeanPayload: 2 << 10}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := generate(t, tt.cfg)
			orig := rewritetest.Snapshot(t, c.dir)
			files := byFileName(c.dups)

			// The reference: an in-place run on a copy.
			ref := t.TempDir()
			rewritetest.CopyDir(t, c.dir, ref)
			o := mustRun(t, Rewriter{Roots: []string{ref}, InPlace: true, Jobs: tt.jobs}, c.lines)
			after := rewritetest.Snapshot(t, ref)
			if tf := rewritetest.TempFiles(t, ref); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}

			t.Run("stats", func(t *testing.T) {
				checkStats(t, c, o, orig, after)
			})
			t.Run("verify finds no violation", func(t *testing.T) {
				// The generator's own revisit records refer to the first
				// response of their file, which the manifest may make a
				// duplicate: warcrefs follows the manifest, so they are
				// left out of the before-manifest here (their bytes are
				// checked with every other byte below).
				st := verifyRewrite(t, withoutRevisits(t, rewritetest.WarcsumDir(t, c.dir)), rewritetest.WarcsumDir(t, ref))
				if st.Revisits != o.stats.Revisits {
					t.Errorf("verify counts %d revisits that resolve, the run wrote %d", st.Revisits, o.stats.Revisits)
				}
			})
			t.Run("only the logged records changed", func(t *testing.T) {
				entries := map[string][]rewritelog.Entry{}
				for _, e := range o.log {
					entries[e.File] = append(entries[e.File], e)
				}
				for name := range orig {
					checkRewrittenFile(t, name, orig[name], after[name], entries[name], files[name])
				}
				if !slices.IsSortedFunc(o.log, func(a, b rewritelog.Entry) int {
					return manifest.ByFile.Compare(&manifest.Line{File: a.File, Offset: a.OldOffset}, &manifest.Line{File: b.File, Offset: b.OldOffset})
				}) {
					t.Errorf("the log is not in file and offset order")
				}
			})
			t.Run("records kept as not smaller have small payloads", func(t *testing.T) {
				logged := map[string]bool{}
				for _, e := range o.log {
					logged[fmt.Sprint(e.File, e.OldOffset)] = true
				}
				kept := 0
				for i, l := range c.res.Expected {
					if l.Copy <= 1 || logged[fmt.Sprint(l.File, l.Offset)] {
						continue
					}
					kept++
					if n := c.res.Payloads[i].StoredSize(); n > 1024 {
						t.Errorf("%s offset %d: kept with a %d-byte payload", l.File, l.Offset, n)
					}
				}
				if int64(kept) != o.stats.NotSmaller {
					t.Errorf("%d duplicates were not rewritten, NotSmaller is %d", kept, o.stats.NotSmaller)
				}
			})
			t.Run("output-dir writes the same bytes and leaves the source alone", func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out")
				od := mustRun(t, Rewriter{Roots: []string{c.dir}, OutputDir: out, Jobs: tt.jobs}, c.lines)
				if od.stats != o.stats {
					t.Errorf("stats %+v, in place %+v", od.stats, o.stats)
				}
				if !slices.Equal(od.log, o.log) || !slices.Equal(od.files, o.files) {
					t.Errorf("the log differs from the in-place run's")
				}
				rewritetest.SameFiles(t, "source", rewritetest.Snapshot(t, c.dir), orig)
				want := map[string][]byte{}
				for _, e := range o.log {
					want[e.File] = after[e.File]
				}
				rewritetest.SameFiles(t, "output dir", rewritetest.Snapshot(t, out), want)
			})
			t.Run("dry run writes nothing and reports the same", func(t *testing.T) {
				dir := t.TempDir()
				rewritetest.CopyDir(t, c.dir, dir)
				dry := mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true, DryRun: true, Jobs: tt.jobs}, c.lines)
				if dry.stats != o.stats {
					t.Errorf("stats %+v, real run %+v", dry.stats, o.stats)
				}
				if !slices.Equal(dry.log, o.log) || !sameSizes(dry.files, o.files) {
					t.Errorf("the log differs from the real run's")
				}
				rewritetest.SameFiles(t, "after a dry run", rewritetest.Snapshot(t, dir), orig)
				out := filepath.Join(t.TempDir(), "out")
				dry = mustRun(t, Rewriter{Roots: []string{dir}, OutputDir: out, DryRun: true, Jobs: tt.jobs}, c.lines)
				if dry.stats != o.stats {
					t.Errorf("output-dir stats %+v, real run %+v", dry.stats, o.stats)
				}
				rewritetest.SameFiles(t, "output dir of a dry run", rewritetest.Snapshot(t, filepath.Dir(out)), map[string][]byte{})
			})
			t.Run("a second run changes nothing", func(t *testing.T) {
				dir := t.TempDir()
				rewritetest.CopyDir(t, ref, dir)
				rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: tt.jobs}
				var created atomic.Int64
				rw.create = func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
					created.Add(1)
					return atomicfile.CreateIn(root, name, perm)
				}
				again := mustRunLogged(t, rw, c.lines, c.lines, o.tl)
				if n := created.Load(); n > 0 {
					t.Errorf("%d temporary files were written for files with nothing to do", n)
				}
				rewritetest.SameFiles(t, "after a second run", rewritetest.Snapshot(t, dir), after)
				want := Stats{Lines: o.stats.Lines, Files: o.stats.Files, Untouched: o.stats.Files, AlreadyRevisit: o.stats.Revisits, NotSmaller: o.stats.NotSmaller}
				if again.stats != want {
					t.Errorf("stats %+v, want %+v", again.stats, want)
				}
				if again.logText != "" {
					t.Errorf("log of the second run: %q", again.logText)
				}
			})
			t.Run("a run interrupted between files is completed", func(t *testing.T) {
				names := slices.Sorted(maps.Keys(files))
				var first []manifest.Line
				for _, n := range names[:(len(names)+1)/2] {
					first = append(first, files[n]...)
				}
				checkCompletes(t, c, first, tt.jobs, after)
			})
			t.Run("a run given part of each file's lines is completed", func(t *testing.T) {
				var first []manifest.Line
				for i, l := range c.dups {
					if i%3 != 1 {
						first = append(first, l)
					}
				}
				checkCompletes(t, c, first, tt.jobs, after)
			})
		})
	}
}

// checkCompletes runs the lines first, then all of the collection's lines,
// on a copy, and checks that the result equals want.
func checkCompletes(t *testing.T, c *coll, first []manifest.Line, jobs int, want map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	// One log for both runs, as --log FILE: the second run finds the
	// originals the first moved through it.
	log := newTestLog()
	o1 := mustRunLogged(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs}, first, c.all, log)
	mid := rewritetest.Snapshot(t, dir)
	o2 := mustRunLogged(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs}, c.lines, c.all, log)
	final := rewritetest.Snapshot(t, dir)
	rewritetest.SameFiles(t, "after completing", final, want)
	if o2.stats.AlreadyRevisit != o1.stats.Revisits {
		t.Errorf("the second run found %d revisits, the first wrote %d", o2.stats.AlreadyRevisit, o1.stats.Revisits)
	}
	if o1.stats.Revisits == 0 || o2.stats.Revisits == 0 {
		t.Errorf("revisits written: %d, then %d; the test needs both runs to write some", o1.stats.Revisits, o2.stats.Revisits)
	}
	// The second run's log gives offsets in the files as it found them:
	// each line's record moved up by what the first run saved before it.
	done := map[string]bool{}
	for _, e := range o1.log {
		done[fmt.Sprint(e.File, e.OldOffset)] = true
	}
	entries := map[string][]rewritelog.Entry{}
	for _, e := range o2.log {
		entries[e.File] = append(entries[e.File], e)
	}
	for name, lines := range byFileName(c.dups) {
		var moved []manifest.Line
		for _, l := range lines {
			if done[fmt.Sprint(l.File, l.Offset)] {
				continue
			}
			at := l.Offset
			for _, e := range o1.log {
				if e.File == l.File && e.OldOffset < at {
					l.Offset -= e.OldLength - e.NewLength
				}
			}
			moved = append(moved, l)
		}
		checkRewrittenFile(t, name, mid[name], final[name], entries[name], moved)
	}
}

// sameSizes reports whether two runs replaced the same files with the same
// sizes (a dry run has no SHA-256 of new versions).
func sameSizes(a, b []rewritelog.Fixity) bool {
	return slices.EqualFunc(a, b, func(x, y rewritelog.Fixity) bool {
		return x.File == y.File && x.OldSize == y.OldSize && x.NewSize == y.NewSize
	})
}

// checkStats checks the Stats of a first run against the collection.
func checkStats(t *testing.T, c *coll, o *outcome, before, after map[string][]byte) {
	t.Helper()
	files := byFileName(c.dups)
	want := Stats{Lines: int64(len(c.lines)), Files: int64(len(files))}
	rewritten := map[string]bool{}
	for _, e := range o.log {
		rewritten[e.File] = true
	}
	for name := range files {
		if rewritten[name] {
			want.Rewritten++
			want.BytesBefore += int64(len(before[name]))
			want.BytesAfter += int64(len(after[name]))
		} else {
			want.Untouched++
		}
	}
	want.Revisits = int64(len(o.log))
	want.NotSmaller = int64(len(c.dups)) - want.Revisits
	if o.stats != want {
		t.Errorf("stats %+v, want %+v", o.stats, want)
	}
	if o.stats.Revisits < int64(len(c.dups))/2 {
		t.Errorf("only %d of %d duplicates rewritten", o.stats.Revisits, len(c.dups))
	}
	if p := o.stats; p.BytesAfter >= p.BytesBefore {
		t.Errorf("nothing saved: %d bytes before, %d after", p.BytesBefore, p.BytesAfter)
	}
}

// TestARCFilesSkipped gives warcrefs the lines of ARC files too: their
// records have no revisit form, so each ARC file is skipped, counted and
// warned about, and keeps its bytes, while the WARC files are rewritten
// as without those lines.
func TestARCFilesSkipped(t *testing.T) {
	c := generate(t, gen.Config{Files: 6, Records: 180, DupRate: 0.5, Seed: 6, MeanPayload: 3 << 10, NonCandidates: true})
	if len(c.arcDups) == 0 {
		t.Fatal("no duplicates in ARC files")
	}
	orig := rewritetest.Snapshot(t, c.dir)
	ref := t.TempDir()
	rewritetest.CopyDir(t, c.dir, ref)
	var warcOnly []manifest.Line
	for _, l := range c.lines {
		if !archname.IsARC(l.File) {
			warcOnly = append(warcOnly, l)
		}
	}
	o := mustRunWith(t, Rewriter{Roots: []string{ref}, InPlace: true}, warcOnly, c.all)

	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	withARC := mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 3}, c.lines)
	arcFiles := byFileName(c.arcDups)
	want := o.stats
	want.Lines = withARC.stats.Lines
	want.Files += int64(len(arcFiles))
	want.ARC = int64(len(arcFiles))
	if withARC.stats != want {
		t.Errorf("stats %+v, want %+v", withARC.stats, want)
	}
	if len(withARC.warns) != len(arcFiles) {
		t.Errorf("warnings %v, want one per ARC file (%d)", withARC.warns, len(arcFiles))
	}
	for _, w := range withARC.warns {
		if !errors.Is(w, errARC) {
			t.Errorf("warning %v is not about an ARC file", w)
		}
	}
	// Entries and "# file" lines, not the text: its "# run" line holds the
	// second the run started.
	if !slices.Equal(withARC.log, o.log) || !slices.Equal(withARC.files, o.files) {
		t.Errorf("the log differs from the run without ARC lines:\n%s\nwant\n%s", withARC.logText, o.logText)
	}
	got, wantFiles := rewritetest.Snapshot(t, dir), rewritetest.Snapshot(t, ref)
	for name := range arcFiles {
		if !bytes.Equal(got[name], orig[name]) {
			t.Errorf("ARC file %s changed", name)
		}
	}
	rewritetest.SameFiles(t, "after the run", got, wantFiles)
}

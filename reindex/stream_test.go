package reindex

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
)

// streamCase is a generated collection's index (in two parts) and a log
// of several runs over it.
type streamCase struct {
	log    string
	inputs []string
}

// genStreamCase makes files of records, a log of three runs that make
// some responses revisits and restore some, and CDX11 lines of the
// records in random order: most at their record, some inside one, some
// over two records (warcio.js after a dns: record), some already
// revisits, some of files the log does not name, some that do not read;
// clean, a line at each record and some of other files.
func genStreamCase(rng *rand.Rand, clean bool) streamCase {
	names := []string{"a b.warc.gz", "a!b.warc.gz", "dir/c.warc.gz", "d.warc.gz"}
	orig := map[string][]int64{}
	cur := map[string][]int64{}
	ours := map[string][]bool{}
	for _, n := range names {
		for range 2 + rng.IntN(10) {
			orig[n] = append(orig[n], int64(100+rng.IntN(900)))
		}
		cur[n] = slices.Clone(orig[n])
		ours[n] = make([]bool, len(orig[n]))
	}
	byEscaped := slices.Clone(names)
	slices.SortFunc(byEscaped, func(a, b string) int { return strings.Compare(manifest.EscapeFile(a), manifest.EscapeFile(b)) })
	var log strings.Builder
	for run := range 3 {
		log.Write(append(rewritelog.AppendRun(nil, time.Date(2024, 1, 1+run, 0, 0, 0, 0, time.UTC)), '\n'))
		for _, n := range byEscaped {
			var off, shift int64
			for i, l := range cur[n] {
				var e *rewritelog.Entry
				switch {
				case !ours[n][i] && rng.IntN(3) == 0:
					nl := 20 + int64(rng.IntN(int(l)-20))
					e = &rewritelog.Entry{File: n, OldOffset: off, OldLength: l, NewOffset: off + shift, NewLength: nl, Kind: rewritelog.Revisit,
						PayloadDigest: fmt.Sprintf("sha1:NEW%d", i), RefersToURI: "http://x/", RefersTo: "2024-01-01T00:00:00Z"}
				case ours[n][i] && rng.IntN(2) == 0:
					e = &rewritelog.Entry{File: n, OldOffset: off, OldLength: l, NewOffset: off + shift, NewLength: orig[n][i], Kind: rewritelog.Restored}
				}
				if e != nil {
					log.Write(append(e.AppendTo(nil), '\n'))
					shift += e.NewLength - l
					cur[n][i], ours[n][i] = e.NewLength, e.Kind == rewritelog.Revisit
				}
				off += l
			}
		}
	}
	var lines []string
	line := func(n string, i int, off, length int64, mime string) {
		lines = append(lines, fmt.Sprintf(`x)/%d %d {"url":"http://x/%d","mime":"%s","status":"200","digest":"OLD%d","length":"%d","offset":"%d","filename":"%s"}`,
			rng.IntN(1000), 20240101000000+i, i, mime, i, length, off, n))
	}
	for _, n := range names {
		var off int64
		for i, l := range orig[n] {
			k := rng.IntN(12)
			if clean {
				if k == 3 {
					line("other.warc.gz", i, off, l, "text/html")
				}
				k = 6
			}
			switch k {
			case 0:
				line(n, i, off+int64(1+rng.IntN(int(l)-1)), 10, "text/html")
			case 1:
				if i+1 < len(orig[n]) {
					line(n, i, off, l+orig[n][i+1], "text/html")
				}
			case 2:
				line(n, i, off, l, "warc/revisit")
			case 3:
				line("other.warc.gz", i, off, l, "text/html")
			case 4:
				lines = append(lines, "not an index line")
			case 5:
				// a record the index lacks
			default:
				line(n, i, off, l, "text/html")
			}
			off += l
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	half := len(lines) / 2
	return streamCase{log: log.String(), inputs: []string{strings.Join(lines[:half], "\n") + "\n", strings.Join(lines[half:], "\n") + "\n"}}
}

// jobResult is everything a Copy gives.
type jobResult struct {
	out, del, add, summary string
	reported               []string
	stats                  Stats
	problems, unmatched    int64
	err                    string
}

func runJob(t *testing.T, c streamCase, u Updater, strict bool) jobResult {
	t.Helper()
	var r jobResult
	var out, del, add bytes.Buffer
	j := &Copy{Updater: u, Out: cdx.NewWriter(&out), Delete: cdx.NewWriter(&del), Add: cdx.NewWriter(&add),
		Strict: strict, Report: func(err error) { r.reported = append(r.reported, err.Error()) }}
	var inputs []Input
	for i, text := range c.inputs {
		inputs = append(inputs, Input{Name: fmt.Sprintf("index-%d", i), Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(text)), nil
		}})
	}
	if err := j.Indexes(context.Background(), inputs); err != nil {
		r.err = err.Error() // and no Finish, as warccdx stops
	} else {
		r.unmatched = j.Finish()
	}
	for _, w := range []*cdx.Writer{j.Out, j.Delete, j.Add} {
		w.Flush()
	}
	var sum bytes.Buffer
	j.Summary(&sum)
	r.out, r.del, r.add, r.summary, r.stats, r.problems = out.String(), del.String(), add.String(), sum.String(), j.Stats, j.Problems
	return r
}

// TestCopyLogOnDisk proves that a Copy following a log on disk (stream.go)
// gives what one holding it in memory gives: the same lines, OutbackCDX
// batches, counts, summary and problems in the same order (lines that do
// not read or cannot be updated, log entries without their line), with
// --strict the same error, on generated indexes of two inputs and logs of
// three runs, and leaves no file in its temporary directory.
func TestCopyLogOnDisk(t *testing.T) {
	dir := t.TempDir()
	reported := 0
	for seed := range 40 {
		c := genStreamCase(rand.New(rand.NewPCG(uint64(seed), 9)), seed%2 == 0)
		for _, strict := range []bool{false, true} {
			want := runJob(t, c, updater(t, c.log, logModes[0]), strict)
			u := updater(t, c.log, logModes[1])
			u.Sort.TempDir = dir
			got := runJob(t, c, u, strict)
			if got.out != want.out || got.del != want.del || got.add != want.add {
				t.Fatalf("seed %d strict %v: output on disk\n%s%s%s\nin memory\n%s%s%s", seed, strict, got.out, got.del, got.add, want.out, want.del, want.add)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d strict %v: on disk\n%q\n%+v %s\nin memory\n%q\n%+v %s", seed, strict, got.reported, got.stats, got.err, want.reported, want.stats, want.err)
			}
			reported += len(want.reported)
		}
	}
	if reported == 0 {
		t.Error("no problem was reported: the test proves less than it says")
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("%d files left in the temporary directory", len(left))
	}
}

// TestJobStdin proves that an index read from a stream is read twice from
// a copy in the temporary directory, which is then removed.
func TestJobStdin(t *testing.T) {
	dir := t.TempDir()
	c := genStreamCase(rand.New(rand.NewPCG(3, 9)), false)
	want := runJob(t, c, updater(t, c.log, logModes[0]), false)
	var out bytes.Buffer
	u := updater(t, c.log, logModes[1])
	u.Sort.TempDir = dir
	j := &Copy{Updater: u, Out: cdx.NewWriter(&out), Report: func(error) {}}
	in, err := StreamInput("-", strings.NewReader(strings.Join(c.inputs, "")), j.Sort)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Indexes(context.Background(), []Input{in}); err != nil {
		t.Fatal(err)
	}
	j.Finish()
	j.Out.Flush()
	if out.String() != want.out {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want.out)
	}
	in.Remove()
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("%d files left in the temporary directory: %s", len(left), filepath.Join(dir, left[0].Name()))
	}
}

// TestInPlaceLogOnDisk proves that an update in place following a log on
// disk leaves the files, counts and refusal (its problems, the first of
// them) that one holding the log in memory leaves, on the generated
// indexes sorted, as plain CDXJ and as a ZipNum of blocks of 3 lines,
// clean ones updated and the others refused.
func TestInPlaceLogOnDisk(t *testing.T) {
	for seed := range 20 {
		c := genStreamCase(rand.New(rand.NewPCG(uint64(seed), 10)), seed%2 == 0)
		lines := strings.Split(strings.TrimSuffix(strings.Join(c.inputs, ""), "\n"), "\n")
		slices.Sort(lines)
		for _, f := range []form{{name: "plain", file: "index.cdxj"}, {name: "zipnum", file: "index.idx", zipnum: style(cdx.CDXJIndexerStyle, 3)}} {
			var results []string
			for _, mode := range logModes {
				dir := t.TempDir()
				writeFiles(t, dir, f.encode(t, lines))
				p, err := rewriteInPlace(t, filepath.Join(dir, f.file), c.log, mode, nil)
				r := fmt.Sprintf("%v\n%+v %d %d %d\n%v", err, p.Stats, p.Problems, p.Blocks, p.BlocksRewritten, snapshot(t, dir))
				results = append(results, strings.ReplaceAll(r, dir, "DIR"))
			}
			if seed%2 == 0 && !strings.HasPrefix(results[0], "<nil>") {
				t.Errorf("seed %d %s: a clean index refused: %s", seed, f.name, results[0])
			}
			if results[0] != results[1] {
				t.Fatalf("seed %d %s: in memory\n%s\non disk\n%s", seed, f.name, results[0], results[1])
			}
		}
	}
}

// readRecords is a RecordSource that notes what it is asked for: fields
// made of the file and offset, and an error for one offset in seven.
type readRecords struct {
	calls []string // ESCAPED-FILE OFFSET, as asked
	order []readCall
	opens int // files opened: a call of another file than the one before
}

type readCall struct {
	file string
	off  int64
}

func (r *readRecords) Fields(file string, off int64) (string, string, error) {
	r.calls = append(r.calls, fmt.Sprintf("%s %d", file, off))
	if len(r.order) == 0 || r.order[len(r.order)-1].file != file {
		r.opens++
	}
	r.order = append(r.order, readCall{file, off})
	if off%7 == 3 {
		return "", "", fmt.Errorf("%s: offset %d: no record", file, off)
	}
	return fmt.Sprintf("text/x-%d", off%5), fmt.Sprintf("sha1:R%s%d", strings.ReplaceAll(file, " ", "_"), off), nil
}

// TestRestoredRecordsReadInFileOrder proves that an update following the
// log on disk reads the records it restores whose lines the index does
// not have (lines already revisits, the index written after the run) in
// file and offset order, each file's once in one stretch, not in the
// index's order (a file opened and a record read for each line, which
// made undo --cdx take minutes at 10^6 records), and gives the lines,
// counts and problems (reads that failed among them) that reading them
// in the index's order gives with the log in memory.
func TestRestoredRecordsReadInFileOrder(t *testing.T) {
	reads := 0
	for seed := range 40 {
		c := genRestoreCase(rand.New(rand.NewPCG(uint64(seed), 12)))
		for _, strict := range []bool{false, true} {
			mem := &readRecords{}
			u := updater(t, c.log, logModes[0])
			u.Records = mem
			want := runJob(t, c, u, strict)
			disk := &readRecords{}
			u = updater(t, c.log, logModes[1])
			u.Records = disk
			got := runJob(t, c, u, strict)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d strict %v: on disk\n%s%q\n%+v %s\nin memory\n%s%q\n%+v %s", seed, strict, got.out, got.reported, got.stats, got.err, want.out, want.reported, want.stats, want.err)
			}
			sorted := slices.IsSortedFunc(disk.order, func(a, b readCall) int {
				if c := strings.Compare(manifest.EscapeFile(a.file), manifest.EscapeFile(b.file)); c != 0 {
					return c
				}
				return int(a.off - b.off)
			})
			files := map[string]bool{}
			for _, c := range disk.order {
				files[c.file] = true
			}
			if !sorted || disk.opens != len(files) {
				t.Errorf("seed %d: records read on disk in the order %v (%d files, %d opened)", seed, disk.calls, len(files), disk.opens)
			}
			if !strict {
				slices.Sort(mem.calls)
				slices.Sort(disk.calls)
				if !slices.Equal(mem.calls, disk.calls) {
					t.Errorf("seed %d: records read on disk %v, in memory %v", seed, disk.calls, mem.calls)
				}
			}
			reads += len(disk.calls)
		}
	}
	if reads < 20 {
		t.Errorf("%d records read in all: the test proves less than it says", reads)
	}
}

// genRestoreCase is an undo's: an index of files as a run left them,
// updated by it (its revisits' lines are revisits), and a log of one run
// that restores most of the revisits; the lines in random order, some of
// another file, some revisits the log leaves.
func genRestoreCase(rng *rand.Rand) streamCase {
	names := []string{"a b.warc.gz", "a!b.warc.gz", "dir/c.warc.gz", "d.warc.gz", "e.warc"}
	byEscaped := slices.Clone(names)
	slices.SortFunc(byEscaped, func(a, b string) int { return strings.Compare(manifest.EscapeFile(a), manifest.EscapeFile(b)) })
	var log strings.Builder
	log.Write(append(rewritelog.AppendRun(nil, time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)), '\n'))
	var lines []string
	line := func(n string, i int, off, length int64, mime string) {
		lines = append(lines, fmt.Sprintf(`x)/%d %d {"url":"http://x/%d","mime":"%s","status":"200","digest":"OLD%d","length":"%d","offset":"%d","filename":"%s"}`,
			rng.IntN(1000), 20240101000000+i, i, mime, i, length, off, n))
	}
	for _, n := range byEscaped {
		var off, shift int64
		for i := range 3 + rng.IntN(12) {
			l, mime := int64(100+rng.IntN(900)), "text/html"
			if rng.IntN(2) == 0 {
				mime = "warc/revisit"
				if rng.IntN(5) > 0 {
					e := rewritelog.Entry{File: n, OldOffset: off, OldLength: l, NewOffset: off + shift, NewLength: l + 50, Kind: rewritelog.Restored}
					log.Write(append(e.AppendTo(nil), '\n'))
					shift += 50
				}
			}
			line(n, i, off, l, mime)
			if rng.IntN(6) == 0 {
				line("other.warc.gz", i, off, l, mime)
			}
			off += l
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	half := len(lines) / 2
	return streamCase{log: log.String(), inputs: []string{strings.Join(lines[:half], "\n") + "\n", strings.Join(lines[half:], "\n") + "\n"}}
}

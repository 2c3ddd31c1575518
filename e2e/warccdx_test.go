package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/scripts/gen"
)

// The proof that warccdx updates an index exactly: index a collection
// with warcio.js before deduplicating it, deduplicate, update the index
// with warccdx and the rewrite log, index the rewritten files with
// warcio.js again, and compare the two, sorted, line for line. In both
// formats warcio.js writes (CDXJ and CDX11), and with --all (every
// record, requests and warcinfo too).

// warcioIndex is the output of warcio cdx-index for one file, or why
// there is none.
type warcioIndex struct {
	out  []byte
	err  error
	file string
}

// indexWithWarcio runs warcio cdx-index with args on files: all in one
// run (node starts in half a second), or, when that fails, one file per
// run, a few at a time, so a file warcio.js cannot read costs only its own
// lines.
func indexWithWarcio(t *testing.T, cli string, files []string, args ...string) []warcioIndex {
	t.Helper()
	run := func(files []string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append(append([]string{"cdx-index"}, files...), args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%v: %s", err, firstLine(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
	if out, err := run(files); err == nil {
		return []warcioIndex{{out: out, file: strings.Join(files, " ")}}
	}
	out := make([]warcioIndex, len(files))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := run([]string{f})
			out[i] = warcioIndex{out: b, err: err, file: f}
		}()
	}
	wg.Wait()
	return out
}

// sortedLines splits an index into its lines, sorted.
func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(b) == 0 {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// lineDiff describes how two sorted line lists differ, at most a few lines.
func lineDiff(got, want []string) string {
	var b strings.Builder
	shown := 0
	i, j := 0, 0
	for (i < len(got) || j < len(want)) && shown < 12 {
		switch {
		case j >= len(want) || i < len(got) && got[i] < want[j]:
			fmt.Fprintf(&b, "  warccdx only: %s\n", got[i])
			i++
			shown++
		case i >= len(got) || want[j] < got[i]:
			fmt.Fprintf(&b, "  warcio only:  %s\n", want[j])
			j++
			shown++
		default:
			i, j = i+1, j+1
		}
	}
	return b.String()
}

// warccdxCase is one comparison: warcio.js options and what warccdx got.
type warccdxCase struct {
	name string
	args []string // for warcio cdx-index
}

var warccdxCases = []warccdxCase{
	{"cdxj", []string{"--format", "cdxj"}},
	{"cdx", []string{"--format", "cdx"}},
	{"cdxj --all", []string{"--format", "cdxj", "--all"}},
}

// checkWarccdx indexes the WARC files of a dedup run as they were (under
// orig) and as they are, updates the first with warccdx and the completed
// log, and compares. It returns the number of revisit lines warccdx wrote.
func checkWarccdx(t *testing.T, cli string, r *dedupRun, orig string, cases []warccdxCase) int {
	t.Helper()
	log := filepath.Join(r.work, r.keep, "rewrite.log")
	coll := filepath.Join(r.work, r.coll)
	var names []string
	err := filepath.WalkDir(coll, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isWARCName(d.Name()) {
			rel, _ := filepath.Rel(coll, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	revisits := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after []string
			for _, n := range names {
				before = append(before, filepath.Join(orig, filepath.FromSlash(n)))
				after = append(after, filepath.Join(coll, filepath.FromSlash(n)))
			}
			b := indexWithWarcio(t, cli, before, c.args...)
			a := indexWithWarcio(t, cli, after, c.args...)
			if len(a) != len(b) {
				// One run read every file before, or after, but not both.
				b = indexWithWarcio(t, cli, before[:1], c.args...)
				for _, f := range before[1:] {
					b = append(b, indexWithWarcio(t, cli, []string{f}, c.args...)...)
				}
				a = nil
				for _, f := range after {
					a = append(a, indexWithWarcio(t, cli, []string{f}, c.args...)...)
				}
			}
			var oldIndex, newIndex []byte
			for i := range a {
				if b[i].err != nil || a[i].err != nil {
					// Damaged on purpose: not the rewrite's doing (checked by
					// TestWarcioCorpus); left out of both.
					t.Logf("%s: warcio.js: before: %v; after: %v", names[i], b[i].err, a[i].err)
					continue
				}
				oldIndex = append(oldIndex, b[i].out...)
				newIndex = append(newIndex, a[i].out...)
			}
			dir := t.TempDir()
			in := filepath.Join(dir, "before.idx")
			if err := os.WriteFile(in, oldIndex, 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := sh(t, dir, fmt.Sprintf("warccdx --log %q --outbackcdx-delete delete.cdx --outbackcdx-add add.cdx -o updated.idx %q", log, in))
			if code != 0 {
				t.Fatalf("warccdx exit %d\n%s%s", code, stdout, stderr)
			}
			t.Logf("warccdx: %s", stderr)
			updated, err := os.ReadFile(filepath.Join(dir, "updated.idx"))
			if err != nil {
				t.Fatal(err)
			}
			got, want := sortedLines(updated), sortedLines(newIndex)
			if !slices.Equal(got, want) {
				t.Errorf("warccdx's index differs from warcio.js's on the rewritten files (%d lines, %d):\n%s", len(got), len(want), lineDiff(got, want))
			}
			n := strings.Count(string(updated), "warc/revisit") - strings.Count(string(oldIndex), "warc/revisit")
			if c.name == "cdxj" {
				revisits = n
			}
			checkOutbackBatches(t, dir, oldIndex, newIndex)
		})
	}
	return revisits
}

// checkOutbackBatches applies the OutbackCDX bodies as OutbackCDX would,
// to the old index as a set of CDX11 lines: without the deleted, with the
// added, it is the new index.
func checkOutbackBatches(t *testing.T, dir string, oldIndex, newIndex []byte) {
	t.Helper()
	set := map[string]bool{}
	for _, l := range cdx11Lines(t, oldIndex) {
		set[l] = true
	}
	del, _ := os.ReadFile(filepath.Join(dir, "delete.cdx"))
	add, _ := os.ReadFile(filepath.Join(dir, "add.cdx"))
	for _, l := range cdx11Lines(t, del) {
		if !set[l] {
			t.Errorf("OutbackCDX delete batch: %s is no line of the old index", l)
		}
		delete(set, l)
	}
	for _, l := range cdx11Lines(t, add) {
		set[l] = true
	}
	var got []string
	for l := range set {
		got = append(got, l)
	}
	slices.Sort(got)
	want := cdx11Lines(t, newIndex)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("the old index with the OutbackCDX batches applied is not the new one:\n%s", lineDiff(got, want))
	}
}

// cdx11Lines is an index as the CDX11 lines OutbackCDX would store.
func cdx11Lines(t *testing.T, b []byte) []string {
	t.Helper()
	r, err := cdx.NewReader(bytes.NewReader(b), "index", cdx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		l, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Kind == cdx.Record {
			out = append(out, string(l.AppendCDX11(nil)))
		}
	}
}

// TestWarccdxGenerated proves warccdx on a generated collection: WARC 1.0
// and 1.1, plain and gzip, requests, warcinfo, metadata, revisits already
// there, URIs with spaces.
func TestWarccdxGenerated(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	cfg := gen.Config{
		Files: 6, Records: 200, DupRate: 0.4, Seed: 11, MeanPayload: 3000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11},
		Chunked: 0.1, NonCandidates: true, Quirks: true,
	}
	if _, err := gen.Write(filepath.Join(work, "coll"), cfg); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	r := runDedup(t, work, "coll", "keep")
	if r.code != 0 || len(r.log) == 0 {
		t.Fatalf("warcdedup exit %d, %d revisits\n%s", r.code, len(r.log), r.stderr)
	}
	if n := checkWarccdx(t, cli, r, filepath.Join(work, "orig"), warccdxCases); n != len(r.log) {
		t.Errorf("%d revisit lines more after warccdx, %d revisits written", n, len(r.log))
	}
}

// TestWarccdxCorpus proves warccdx on the corpus selection of
// TestCorpusDedup: pywb's, wget's, Heritrix's and NetarchiveSuite's files.
func TestWarccdxCorpus(t *testing.T) {
	cli := warcioCLI(t)
	needCorpus(t)
	work := t.TempDir()
	copyCorpus(t, filepath.Join(work, "coll"))
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	r := runDedup(t, work, "coll", "keep")
	if len(r.log) == 0 {
		t.Fatalf("no revisits written:\n%s", r.stderr)
	}
	n := checkWarccdx(t, cli, r, filepath.Join(work, "orig"), warccdxCases[:2])
	t.Logf("%d revisits written, %d revisit lines more after warccdx", len(r.log), n)
}

// TestWarccdxExit checks warccdx's exit statuses and outputs: 0 and the
// updated index; 1 with every line written when a line or log entry is
// reported; 2 and no output file for a bad log.
func TestWarccdxExit(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"ok.log":    "a.warc.gz 100 50 100 20 revisit sha1:D u d\n",
		"bad.log":   "a.warc.gz 100 50 100\n",
		"index.cdx": "a)/ 2024 http://a/ text/html 200 D - - 50 100 a.warc.gz\nb)/ 2024 http://b/ text/html 200 D - - 10 150 a.warc.gz\n",
		"other.cdx": "b)/ 2024 http://b/ text/html 200 D - - 10 150 a.warc.gz\nnot an index line\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, cmd string
		code      int
		stdout    string
		stderr    string
	}{
		{"updated", "warccdx -q --log ok.log index.cdx", 0,
			"a)/ 2024 http://a/ warc/revisit 200 D - - 20 100 a.warc.gz\nb)/ 2024 http://b/ text/html 200 D - - 10 120 a.warc.gz\n", ""},
		{"standard input, -o", "warccdx -q --log ok.log -o out.cdx < index.cdx && cat out.cdx", 0,
			"a)/ 2024 http://a/ warc/revisit 200 D - - 20 100 a.warc.gz\nb)/ 2024 http://b/ text/html 200 D - - 10 120 a.warc.gz\n", ""},
		{"a bad line and an entry without its line", "warccdx -q --log ok.log other.cdx", 1,
			"b)/ 2024 http://b/ text/html 200 D - - 10 120 a.warc.gz\nnot an index line\n",
			"other.cdx: line 2: "},
		{"a bad log", "warccdx --log bad.log -o never.cdx index.cdx; s=$?; test ! -e never.cdx; exit $s", 2, "", "bad.log: line 1: 4 fields"},
		{"no log", "warccdx index.cdx", 2, "", "--log FILE"},
		{"since a later run: nothing to apply", "warccdx -q --since 2030-01-01T00:00:00Z --log ok.log index.cdx", 0, files["index.cdx"], ""},
		{"man page", "warccdx --man | grep -c OutbackCDX", 0, "", ""},
		{"help", "warccdx --help | grep -c OutbackCDX", 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := sh(t, dir, c.cmd)
			if code != c.code || c.stdout != "" && stdout != c.stdout || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
		})
	}
}

// TestRunCDX proves warcdedup run --cdx: a CDXJ index of the collection
// written by warcio.js before the job (kept gzip-compressed, as archives
// keep them) is, after the job, what warcio.js writes for the rewritten
// files, line for line after sorting, and still gzip; the index from
// before is kept in the work directory.
func TestRunCDX(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	cfg := gen.Config{Files: 4, Records: 150, DupRate: 0.4, Seed: 5, MeanPayload: 3000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true}
	if _, err := gen.Write(filepath.Join(work, "coll"), cfg); err != nil {
		t.Fatal(err)
	}
	files := func() []string {
		var out []string
		filepath.WalkDir(filepath.Join(work, "coll"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				out = append(out, p)
			}
			return err
		})
		slices.Sort(out)
		return out
	}
	index := func() []byte {
		var b []byte
		for _, ix := range indexWithWarcio(t, cli, files(), "--format", "cdxj") {
			if ix.err != nil {
				t.Fatalf("warcio.js: %s: %v", ix.file, ix.err)
			}
			b = append(b, ix.out...)
		}
		return b
	}
	before := index()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(before)
	zw.Close()
	if err := os.WriteFile(filepath.Join(work, "coll.cdxj.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runDedup(t, work, "coll", "keep", "--cdx", "coll.cdxj.gz")
	if r.code != 0 || len(r.log) == 0 {
		t.Fatalf("warcdedup exit %d, %d revisits\n%s", r.code, len(r.log), r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(work, "coll.cdxj.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the updated index is no longer gzip: %v", err)
	}
	updated, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedLines(updated), sortedLines(index()); !slices.Equal(got, want) {
		t.Errorf("the index warcdedup updated differs from warcio.js's on the rewritten files:\n%s", lineDiff(got, want))
	}
	kept, _ := filepath.Glob(filepath.Join(work, "keep", "indexes", "*-coll.cdxj.gz.before", "0-coll.cdxj.gz"))
	if len(kept) != 1 {
		t.Fatalf("the index from before is not kept in the work directory: %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); !bytes.Equal(b, gz.Bytes()) {
		t.Errorf("%s is not the index from before", kept[0])
	}
}

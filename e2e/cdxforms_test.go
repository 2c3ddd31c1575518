package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/scripts/gen"
)

// The proof that --cdx keeps every index form right: indexes of a
// collection in each form archives keep, written before the job from
// warcio.js's lines, are after warcdedup run --cdx (and after warcdedup
// undo --cdx) what the same form written afresh from warcio.js's lines of
// the rewritten (restored) files is, line for line, and a ZipNum's blocks
// are where its summary says, with the number of lines they had.

// indexForm writes an index of sorted lines in one form and reads one back.
type indexForm struct {
	name string
	file string // the name --cdx is given
	cdx  bool   // warcio.js's CDX11 lines, else CDXJ
	// zipnum is the ZipNum style, nil for a plain or gzip file.
	zipnum *cdx.ZipNumStyle
	gzip   bool
}

func zipnumStyle(s cdx.ZipNumStyle, lines int) *cdx.ZipNumStyle {
	s.Lines = lines
	return &s
}

var indexForms = []indexForm{
	{name: "cdxj", file: "index.cdxj"},
	{name: "cdx11 gzip", file: "index.cdx.gz", cdx: true, gzip: true},
	// pywb's: CDX11 lines in blocks whose last line has no "\n", the
	// summary tab-separated; --cdx given the block file, as the trial did.
	{name: "zipnum pywb", file: "pywb/index.cdx.gz", cdx: true, zipnum: zipnumStyle(cdx.ZipNumStyle{Form: cdx.IdxTab, Part: "index", Numbered: true}, 50)},
	{name: "zipnum cdxj-indexer", file: "wacz/index.idx", zipnum: zipnumStyle(cdx.CDXJIndexerStyle, 64)},
	{name: "zipnum browsertrix", file: "btrix/index.idx", zipnum: zipnumStyle(cdx.BrowsertrixStyle, 40)},
}

// write writes lines (sorted, no header) in the form under dir.
func (f indexForm) write(t *testing.T, dir string, lines []string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(f.file))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	blocks, idx := f.encode(t, lines)
	switch {
	case f.zipnum == nil:
		if err := os.WriteFile(path, blocks, 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		base := filepath.Join(filepath.Dir(path), "index")
		if err := os.WriteFile(base+".cdx.gz", blocks, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".idx", idx, 0o644); err != nil {
			t.Fatal(err)
		}
		if f.zipnum.Form == cdx.IdxTab {
			if err := os.WriteFile(base+".loc", []byte("index\tindex.cdx.gz\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// encode is the form's bytes for lines: the file, or the blocks and the
// summary.
func (f indexForm) encode(t *testing.T, lines []string) (data, idx []byte) {
	t.Helper()
	var buf, ibuf bytes.Buffer
	switch {
	case f.zipnum != nil:
		w := cdx.NewZipNumWriter(&buf, &ibuf, *f.zipnum)
		for _, l := range lines {
			if err := w.WriteLine([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case f.gzip:
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
		zw.Close()
	default:
		buf.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return buf.Bytes(), ibuf.Bytes()
}

// zipnumRead reads a ZipNum under dir through its summary, checking
// that every block is where the summary says, one gzip member of the
// length it gives, that it starts with its key and that no byte of the
// block file is outside a block; it returns the lines and each block's
// line count.
func zipnumRead(t *testing.T, dir string) ([]string, []int64) {
	t.Helper()
	idx, err := os.ReadFile(filepath.Join(dir, "index.idx"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := os.ReadFile(filepath.Join(dir, "index.cdx.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ir := cdx.NewIdxReader(bytes.NewReader(idx), "index.idx")
	var lines []string
	var counts []int64
	var end int64
	for {
		b, err := ir.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Offset != end {
			t.Errorf("index.idx line %d: block at %d, the one before ends at %d", b.Number, b.Offset, end)
		}
		end = b.Offset + b.Length
		br, err := cdx.NewBlockReader(bytes.NewReader(blocks), "index.cdx.gz", "index.idx", b, nil)
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(br)
		if err != nil {
			t.Fatal(err)
		}
		bl := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
		if !strings.HasPrefix(bl[0], string(b.Key)) {
			t.Errorf("index.idx line %d: key %q does not start the block's first line %q", b.Number, b.Key, bl[0])
		}
		lines = append(lines, bl...)
		counts = append(counts, int64(len(bl)))
	}
	if end != int64(len(blocks)) {
		t.Errorf("index.cdx.gz has %d bytes, its blocks end at %d", len(blocks), end)
	}
	return lines, counts
}

// read returns the lines of the index in the form under dir.
func (f indexForm) read(t *testing.T, dir string) []string {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(f.file))
	if f.zipnum != nil {
		// Read as a stream, as warccdx and pywb's indexers read a block
		// file, and through the summary, as a replay tool looks lines up.
		data, err := os.ReadFile(filepath.Join(filepath.Dir(path), "index.cdx.gz"))
		if err != nil {
			t.Fatal(err)
		}
		var stream []string
		r, err := cdx.NewReader(bytes.NewReader(data), "index.cdx.gz", cdx.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			l, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
			stream = append(stream, string(l.Raw))
		}
		t.Logf("%s: the block file read as a stream has %d lines in %d gzip members", f.name, len(stream), r.Members())
		lines, counts := zipnumRead(t, filepath.Dir(path))
		if !slices.Equal(stream, lines) {
			t.Errorf("%s: the block file read as a stream (%d lines) is not what its summary's blocks hold (%d)", f.name, len(stream), len(lines))
		}
		for i, n := range counts {
			if i < len(counts)-1 && n != int64(f.zipnum.Lines) || n > int64(f.zipnum.Lines) {
				t.Errorf("block %d has %d lines, the blocks had %d", i+1, n, f.zipnum.Lines)
			}
		}
		return lines
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.gzip {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s is no longer gzip: %v", f.file, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// check compares the index in form f under dir with the same form written
// afresh from want: line for line, in order, and byte for byte for the
// files of a ZipNum (this package's writer made both).
func (f indexForm) check(t *testing.T, dir, when string, want []string) {
	t.Helper()
	got := f.read(t, dir)
	if !slices.Equal(got, want) {
		t.Errorf("%s: %s: %d lines, a fresh index has %d; in order:\n%s", f.name, when, len(got), len(want), orderDiff(got, want))
		return
	}
	if f.zipnum != nil {
		blocks, idx := f.encode(t, want)
		base := filepath.Join(dir, filepath.Dir(filepath.FromSlash(f.file)), "index")
		gotBlocks, _ := os.ReadFile(base + ".cdx.gz")
		gotIdx, _ := os.ReadFile(base + ".idx")
		if !bytes.Equal(gotBlocks, blocks) || !bytes.Equal(gotIdx, idx) {
			t.Errorf("%s: %s: the lines are right, but the files are not those a fresh ZipNum has:\nsummary:\n%s\nfresh:\n%s", f.name, when, gotIdx, idx)
		}
	}
}

// orderDiff shows the first lines at which two line lists differ.
func orderDiff(got, want []string) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)); i++ {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			b.WriteString("  line " + strconv.Itoa(i+1) + ":\n    got:   " + g + "\n    fresh: " + w + "\n")
			if b.Len() > 2000 {
				break
			}
		}
	}
	return b.String()
}

// freshLines is warcio.js's index of the collection's WARC files, CDX11 or
// CDXJ, sorted as `LC_ALL=C sort` sorts (what pywb and Browsertrix run),
// without CDX header lines.
func freshLines(t *testing.T, cli, coll string, cdx11 bool) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(coll, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isWARCName(d.Name()) {
			files = append(files, p)
		}
		return err
	})
	slices.Sort(files)
	format := "cdxj"
	if cdx11 {
		format = "cdx"
	}
	var lines []string
	for _, ix := range indexWithWarcio(t, cli, files, "--format", format) {
		if ix.err != nil {
			t.Fatalf("warcio.js: %s: %v", ix.file, ix.err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(ix.out), "\n"), "\n") {
			if l != "" && !strings.HasPrefix(l, " CDX") {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// TestRunCDXForms proves warcdedup run --cdx and undo --cdx on every index
// form: CDXJ, gzip CDX11, and ZipNum as pywb (tab-separated summary, blocks
// without a final newline), cdxj-indexer/py-wacz and Browsertrix write it.
// After the run each index is what that form written afresh from the
// rewritten files gives, line for line (its ZipNum files byte for byte);
// after the undo, that of the restored files: the index from before the run
// where the undo gave the files back byte for byte.
func TestRunCDXForms(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	cfg := gen.Config{Files: 4, Records: 300, DupRate: 0.4, Seed: 5, MeanPayload: 2000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true}
	coll := filepath.Join(work, "coll")
	if _, err := gen.Write(coll, cfg); err != nil {
		t.Fatal(err)
	}
	copyTree(t, coll, filepath.Join(work, "orig"))
	ix := filepath.Join(work, "ix")
	beforeCDXJ, beforeCDX := freshLines(t, cli, coll, false), freshLines(t, cli, coll, true)
	if len(beforeCDXJ) < 300 {
		t.Fatalf("only %d index lines", len(beforeCDXJ))
	}
	t.Logf("before the run: %d CDXJ lines, %d CDX lines", len(beforeCDXJ), len(beforeCDX))
	lines := func(f indexForm, cdxj, cdx11 []string) []string {
		if f.cdx {
			return cdx11
		}
		return cdxj
	}
	var args []string
	for _, f := range indexForms {
		f.write(t, ix, lines(f, beforeCDXJ, beforeCDX))
		args = append(args, "--cdx", filepath.Join(ix, filepath.FromSlash(f.file)))
	}
	r := runDedup(t, work, "coll", "keep", args...)
	if r.code != 0 || len(r.log) == 0 {
		t.Fatalf("warcdedup run: exit %d, %d revisits\n%s", r.code, len(r.log), r.stderr)
	}
	afterCDXJ, afterCDX := freshLines(t, cli, coll, false), freshLines(t, cli, coll, true)
	for _, f := range indexForms {
		f.check(t, ix, "after the run", lines(f, afterCDXJ, afterCDX))
	}
	if t.Failed() {
		return
	}

	_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep "+strings.Join(args, " ")+" coll")
	if code != 0 {
		t.Fatalf("warcdedup undo: exit %d\n%s", code, stderr)
	}
	undoneCDXJ, undoneCDX := freshLines(t, cli, coll, false), freshLines(t, cli, coll, true)
	exact := slices.Equal(undoneCDXJ, beforeCDXJ)
	t.Logf("undo gave back the index from before the run: %v", exact)
	for _, f := range indexForms {
		f.check(t, ix, "after the undo", lines(f, undoneCDXJ, undoneCDX))
		if exact {
			f.check(t, ix, "after the undo, against the index before the run", lines(f, beforeCDXJ, beforeCDX))
		}
	}
}

// dedupForIndexes generates the collection of the --cdx tests, keeps a
// copy of it, writes its indexes in every form under ix, and returns the
// fresh lines from before (CDXJ, CDX11).
func dedupForIndexes(t *testing.T, cli, work string) (ix string, cdxj, cdx11 []string) {
	t.Helper()
	cfg := gen.Config{Files: 4, Records: 300, DupRate: 0.4, Seed: 5, MeanPayload: 2000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true}
	coll := filepath.Join(work, "coll")
	if _, err := gen.Write(coll, cfg); err != nil {
		t.Fatal(err)
	}
	ix = filepath.Join(work, "ix")
	cdxj, cdx11 = freshLines(t, cli, coll, false), freshLines(t, cli, coll, true)
	for _, f := range indexForms {
		f.write(t, ix, f.pick(cdxj, cdx11))
	}
	return ix, cdxj, cdx11
}

func (f indexForm) pick(cdxj, cdx11 []string) []string {
	if f.cdx {
		return cdx11
	}
	return cdxj
}

// TestWarccdxInPlace proves warccdx --in-place on every form: after
// warcdedup run (without --cdx), each index updated in place is what the
// form written afresh from the rewritten files gives; run again with the
// same log, it is refused and left as it is. Without --in-place, a ZipNum
// summary is read through its blocks.
func TestWarccdxInPlace(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	ix, _, _ := dedupForIndexes(t, cli, work)
	r := runDedup(t, work, "coll", "keep")
	if r.code != 0 || len(r.log) == 0 {
		t.Fatalf("warcdedup run: exit %d, %d revisits\n%s", r.code, len(r.log), r.stderr)
	}
	// Read through its summary, a ZipNum is its lines (plain).
	stdout, stderr, code := sh(t, ix, "warccdx -q --log ../keep/rewrite.log wacz/index.idx")
	afterCDXJ, afterCDX := freshLines(t, cli, filepath.Join(work, "coll"), false), freshLines(t, cli, filepath.Join(work, "coll"), true)
	if code != 0 || stdout != strings.Join(afterCDXJ, "\n")+"\n" {
		t.Errorf("warccdx wacz/index.idx: exit %d, %d lines, want %d\n%s", code, strings.Count(stdout, "\n"), len(afterCDXJ), stderr)
	}
	var names []string
	for _, f := range indexForms {
		names = append(names, f.file)
	}
	_, stderr, code = sh(t, ix, "warccdx --log ../keep/rewrite.log --in-place "+strings.Join(names, " "))
	t.Logf("warccdx --in-place:\n%s", stderr)
	if code != 0 {
		t.Fatalf("warccdx --in-place: exit %d", code)
	}
	for _, f := range indexForms {
		f.check(t, ix, "after warccdx --in-place", f.pick(afterCDXJ, afterCDX))
	}
	// Again: the revisits are there already.
	before := treeSums(t, ix)
	_, stderr, code = sh(t, ix, "warccdx --log ../keep/rewrite.log --in-place "+strings.Join(names, " "))
	if code != 1 || !strings.Contains(stderr, "left untouched") || !strings.Contains(stderr, "already is one") {
		t.Errorf("warccdx --in-place again: exit %d\n%s", code, stderr)
	}
	if after := treeSums(t, ix); !maps.Equal(after, before) {
		t.Errorf("a refused update changed files: %v\n%v", before, after)
	}
	_, stderr, code = sh(t, ix, "warccdx --log ../keep/rewrite.log --in-place -o x index.cdxj")
	if code != 2 || !strings.Contains(stderr, "writes no other output") {
		t.Errorf("--in-place -o: exit %d\n%s", code, stderr)
	}
}

// TestRunCDXRefused: warcdedup run --cdx with indexes it cannot keep
// right (a ZipNum summary whose offsets do not match its blocks, a block
// that is not gzip, an index of other files) rewrites the collection,
// leaves each of them byte for byte as it was, names the file and the line
// or offset, and exits 1; the good index given with them is updated.
// Once they are right, run again, the finished job updates them.
func TestRunCDXRefused(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	ix, cdxj, _ := dedupForIndexes(t, cli, work)
	// shifted: every offset of the second summary line on moved by 1.
	wacz := filepath.Join(ix, "wacz")
	idx, _ := os.ReadFile(filepath.Join(wacz, "index.idx"))
	lines := strings.Split(string(idx), "\n")
	b, err := cdx.ParseBlock([]byte(lines[2]), 3)
	if err != nil {
		t.Fatal(err)
	}
	good := string(idx)
	lines[2] = string(b.AppendTo(nil, b.Key, b.Offset+1, b.Length, b.Digest))
	os.WriteFile(filepath.Join(wacz, "index.idx"), []byte(strings.Join(lines, "\n")), 0o644)
	// not gzip: the Browsertrix index's third block overwritten.
	btrix := filepath.Join(ix, "btrix")
	bidx, _ := os.ReadFile(filepath.Join(btrix, "index.idx"))
	b3, _ := cdx.ParseBlock([]byte(strings.Split(string(bidx), "\n")[3]), 4)
	blocks, _ := os.ReadFile(filepath.Join(btrix, "index.cdx.gz"))
	copy(blocks[b3.Offset:], bytes.Repeat([]byte{'x'}, int(b3.Length)))
	os.WriteFile(filepath.Join(btrix, "index.cdx.gz"), blocks, 0o644)
	// other files: a line of a file no collection has.
	other := append(slices.Clone(cdxj), strings.Replace(cdxj[0], `"filename": "`, `"filename": "elsewhere-`, 1))
	other[len(other)-1] = strings.Replace(other[len(other)-1], `"filename":"`, `"filename":"elsewhere-`, 1)
	slices.Sort(other)
	os.WriteFile(filepath.Join(ix, "other.cdxj"), []byte(strings.Join(other, "\n")+"\n"), 0o644)
	otherLine := slices.IndexFunc(other, func(l string) bool { return strings.Contains(l, "elsewhere-") }) + 1

	before := treeSums(t, ix)
	r := runDedup(t, work, "coll", "keep", "--cdx", "ix/wacz/index.idx", "--cdx", "ix/btrix/index.cdx.gz", "--cdx", "ix/other.cdxj", "--cdx", "ix/index.cdxj")
	if r.code != 1 || len(r.log) == 0 {
		t.Fatalf("warcdedup run: exit %d, %d revisits\n%s", r.code, len(r.log), r.stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("ix/wacz/index.cdx.gz: offset %d (the block of ix/wacz/index.idx line 3): the summary puts a block here, but the block before it (line 2) ends at %d", b.Offset+1, b.Offset),
		fmt.Sprintf("ix/btrix/index.cdx.gz: offset %d (the block of ix/btrix/index.idx line 4): not gzip", b3.Offset),
		fmt.Sprintf("ix/other.cdxj: line %d: names the file \"elsewhere-", otherLine),
		"3 indexes left untouched (update indexes stage; see run.log)",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the run does not say %q:\n%s", want, r.stderr)
		}
	}
	after := treeSums(t, ix)
	for name, sum := range before {
		if name != filepath.Join(ix, "index.cdxj") && after[name] != sum {
			t.Errorf("%s changed", name)
		}
	}
	afterCDXJ := freshLines(t, cli, filepath.Join(work, "coll"), false)
	indexForms[0].check(t, ix, "given with refused indexes", afterCDXJ)

	// Mended (the summary as it was), the finished job updates it (its
	// exit status stays the job's: 1).
	os.WriteFile(filepath.Join(wacz, "index.idx"), []byte(good), 0o644)
	out, stderr, code := sh(t, work, "warcdedup run --work-dir keep --cdx ix/wacz/index.idx --cdx ix/index.cdxj coll")
	if code != 1 || !strings.Contains(out, "nothing to do") || !strings.Contains(stderr, "ix/index.cdxj: up to date") {
		t.Errorf("run again: exit %d\n%s", code, stderr)
	}
	indexForms[3].check(t, ix, "run again on the finished job", afterCDXJ)
}

// TestUndoCDXLater: an undo without --cdx, then undo --cdx (nothing left
// to restore), brings the index run --cdx updated back to the restored
// files: the work directory knows which log entries it lacks.
func TestUndoCDXLater(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	ix, cdxj, cdx11 := dedupForIndexes(t, cli, work)
	f := indexForms[2] // pywb's ZipNum
	r := runDedup(t, work, "coll", "keep", "--cdx", filepath.Join(ix, f.file))
	if r.code != 0 {
		t.Fatalf("warcdedup run: exit %d\n%s", r.code, r.stderr)
	}
	if _, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll"); code != 0 {
		t.Fatalf("undo: exit %d\n%s", code, stderr)
	}
	out, stderr, code := sh(t, work, "warcdedup undo --work-dir keep --cdx "+filepath.Join(ix, f.file)+" coll")
	if code != 0 || !strings.Contains(out, "nothing to undo") {
		t.Fatalf("undo --cdx: exit %d\n%s", code, stderr)
	}
	undoneCDXJ, undoneCDX := freshLines(t, cli, filepath.Join(work, "coll"), false), freshLines(t, cli, filepath.Join(work, "coll"), true)
	f.check(t, ix, "after undo, then undo --cdx", f.pick(undoneCDXJ, undoneCDX))
	if slices.Equal(undoneCDXJ, cdxj) {
		f.check(t, ix, "against the index before the run", f.pick(cdxj, cdx11))
	}
}

// TestWarccdxInPlaceKilled kills warccdx --in-place at random moments of
// its update of a ZipNum (60,000 lines, 30% of them rewritten; half the
// kills near its end, where the files are replaced) and checks
// after each kill that the summary and the block file are both the old
// ones or both the new ones, or that the journal of their replacement is
// there; then the same command again ends with the new ones, whatever the
// moment of the kill.
func TestWarccdxInPlaceKilled(t *testing.T) {
	dir := t.TempDir()
	const lines, files = 60000, 50
	var index bytes.Buffer
	next := make([]int64, files)
	var log bytes.Buffer
	log.WriteString("# run 2026-01-01T00:00:00Z\n")
	shift := make([]int64, files)
	var entries [files][]string
	for i := range lines {
		f := i % files
		length := int64(500 + (i*7919)%30000)
		off := next[f]
		next[f] += length
		fmt.Fprintf(&index, `com,example,h%03d)/p/%07d 20240601120000 {"url":"https://h.example.com/p/%07d","mime":"text/html","status":"200","digest":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567","length":"%d","offset":"%d","filename":"c-%02d.warc.gz"}`+"\n",
			i/1000, i, i, length, off, f)
		if i%10 < 3 {
			entries[f] = append(entries[f], fmt.Sprintf("c-%02d.warc.gz %d %d %d 530 revisit sha1:ZYXWVUTSRQPONMLKJIHGFEDCBA765432 https://h.example.com/ 2024-06-01T00:00:00Z\n", f, off, length, off+shift[f]))
			shift[f] += 530 - length
		}
	}
	for f := range files {
		for _, e := range entries[f] {
			log.WriteString(e)
		}
	}
	os.WriteFile(filepath.Join(dir, "rewrite.log"), log.Bytes(), 0o644)
	var blocks, idx bytes.Buffer
	w := cdx.NewZipNumWriter(&blocks, &idx, cdx.BrowsertrixStyle)
	for _, l := range strings.Split(strings.TrimSuffix(index.String(), "\n"), "\n") {
		w.WriteLine([]byte(l))
	}
	w.Close()
	oldIdx, oldBlocks := idx.Bytes(), blocks.Bytes()
	ix := filepath.Join(dir, "ix")
	reset := func() {
		os.RemoveAll(ix)
		os.MkdirAll(ix, 0o755)
		os.WriteFile(filepath.Join(ix, "index.idx"), oldIdx, 0o644)
		os.WriteFile(filepath.Join(ix, "index.cdx.gz"), oldBlocks, 0o644)
	}
	cmd := "warccdx -q --log ../rewrite.log --in-place index.idx"
	reset()
	start := time.Now()
	if _, stderr, code := sh(t, ix, cmd); code != 0 {
		t.Fatalf("warccdx --in-place: exit %d\n%s", code, stderr)
	}
	took := time.Since(start)
	newIdx, _ := os.ReadFile(filepath.Join(ix, "index.idx"))
	newBlocks, _ := os.ReadFile(filepath.Join(ix, "index.cdx.gz"))
	t.Logf("an update takes %s", took)

	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	journal := filepath.Join(ix, ".index.idx.pending")
	var outcomes []string
	for i := range 10 {
		reset()
		c := exec.Command("bash", "-c", "exec "+cmd)
		c.Dir = ix
		// Killed, warccdx leaves its sort files where TMPDIR says, as
		// sort(1) does: in the test's directory, not the machine's /tmp.
		c.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		at := rng.Int64N(int64(took))
		if i%2 == 1 {
			at = int64(took)/2 + rng.Int64N(int64(took)/2)
		}
		time.Sleep(time.Duration(at))
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		gotIdx, _ := os.ReadFile(filepath.Join(ix, "index.idx"))
		gotBlocks, _ := os.ReadFile(filepath.Join(ix, "index.cdx.gz"))
		_, jerr := os.Stat(journal)
		switch {
		case bytes.Equal(gotIdx, oldIdx) && bytes.Equal(gotBlocks, oldBlocks):
			outcomes = append(outcomes, "old")
		case bytes.Equal(gotIdx, newIdx) && bytes.Equal(gotBlocks, newBlocks):
			outcomes = append(outcomes, "new")
		case jerr == nil:
			outcomes = append(outcomes, "journal")
		default:
			t.Fatalf("killed: a summary and blocks of different versions, and no journal")
		}
		_, stderr, code := sh(t, ix, cmd)
		gotIdx, _ = os.ReadFile(filepath.Join(ix, "index.idx"))
		gotBlocks, _ = os.ReadFile(filepath.Join(ix, "index.cdx.gz"))
		done := outcomes[len(outcomes)-1] == "new"
		if !bytes.Equal(gotIdx, newIdx) || !bytes.Equal(gotBlocks, newBlocks) || code != 0 && !(done && code == 1 && strings.Contains(stderr, "already is one")) {
			t.Fatalf("after a kill (%s), the same command: exit %d, the new files: %v\n%s", outcomes[len(outcomes)-1], code, bytes.Equal(gotIdx, newIdx), stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(ix, ".*")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	t.Logf("the files as each kill left them: %v", outcomes)
}

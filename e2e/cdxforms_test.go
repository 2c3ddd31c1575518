package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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

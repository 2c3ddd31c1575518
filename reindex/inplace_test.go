package reindex

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/cdx"
	"warcdedup/internal/corpustest"
	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// The log of the in-place tests: in a.warc.gz the records at 1000 and 5000
// became revisits, in b.warc.gz the record at 200.
const inPlaceLog = "# run 2026-01-01T00:00:00Z\n" +
	"a.warc.gz 1000 2000 1000 500 revisit sha1:NEWA http://a/1 2025-01-01T00:00:00Z\n" +
	"a.warc.gz 5000 1000 3500 400 revisit sha1:NEWB http://a/5 2025-01-01T00:00:00Z\n" +
	"b.warc.gz 200 800 200 300 revisit sha1:NEWC http://b/2 2025-01-01T00:00:00Z\n"

func loadLog(t *testing.T, log string) *rewritelog.Moves {
	t.Helper()
	m, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(log), "log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// inPlaceLines are an index of a.warc.gz, b.warc.gz and z.warc.gz (which
// the log does not name), CDX11, sorted. a)/1 is captured twice in the
// same second: its text/html line (a.warc.gz) becomes warc/revisit and
// sorts after its text/plain one (z.warc.gz) then.
func inPlaceLines() []string {
	lines := []string{
		"a)/1 20250101000000 http://a/1 text/html 200 OLDA - - 2000 1000 a.warc.gz",
		"a)/1 20250101000000 http://a/1 text/plain 200 OLDZ - - 100 0 z.warc.gz",
		"a)/5 20250101000000 http://a/5 image/png 200 OLDB - - 1000 5000 a.warc.gz",
		"b)/2 20250101000000 http://b/2 text/html 200 OLDC - - 800 200 b.warc.gz",
		"b)/3 20250101000000 http://b/3 text/html 200 D3 - - 100 1000 b.warc.gz",
	}
	for i := range 9 {
		file := "a.warc.gz" // moves
		if i >= 4 {
			file = "z.warc.gz" // stays
		}
		lines = append(lines, fmt.Sprintf("c)/%d 20250101000000 http://c/%d text/html 200 DC - - 100 %d %s", i, i, 6000+100*i, file))
	}
	slices.Sort(lines)
	return lines
}

// updatedLines is lines updated with the log line by line (Copy, which
// TestWarccdx* prove equal to the indexer's) and sorted: what a fresh index
// of the rewritten files has.
func updatedLines(t *testing.T, log string, lines []string) []string {
	t.Helper()
	var out bytes.Buffer
	j := &Copy{Updater: Updater{Moves: loadLog(t, log)}, Out: cdx.NewWriter(&out), Strict: true}
	if err := j.Index(strings.NewReader(strings.Join(lines, "\n")+"\n"), "index"); err != nil {
		t.Fatal(err)
	}
	j.Out.Flush()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	slices.Sort(got)
	return got
}

// form is an index form of the tests.
type form struct {
	name   string
	file   string // what Locate is given
	gzip   bool
	zipnum *cdx.ZipNumStyle
	loc    bool
}

func style(s cdx.ZipNumStyle, lines int) *cdx.ZipNumStyle {
	s.Lines = lines
	return &s
}

var forms = []form{
	{name: "plain", file: "index.cdx"},
	{name: "gzip", file: "index.cdx.gz", gzip: true},
	{name: "zipnum pywb, given the blocks", file: "index.cdx.gz", zipnum: style(cdx.ZipNumStyle{Form: cdx.IdxTab, Part: "part-a", Numbered: true}, 3), loc: true},
	{name: "zipnum pywb without .loc", file: "index.idx", zipnum: style(cdx.ZipNumStyle{Form: cdx.IdxTab, Part: "index.cdx.gz"}, 4)},
	{name: "zipnum cdxj-indexer", file: "index.idx", zipnum: style(cdx.CDXJIndexerStyle, 3)},
	{name: "zipnum browsertrix, blocks of 1", file: "index.idx", zipnum: style(cdx.BrowsertrixStyle, 1)},
}

// encode is the files of the form holding lines: name to bytes.
func (f form) encode(t *testing.T, lines []string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	switch {
	case f.zipnum != nil:
		var blocks, idx bytes.Buffer
		w := cdx.NewZipNumWriter(&blocks, &idx, *f.zipnum)
		for _, l := range lines {
			if err := w.WriteLine([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files["index.cdx.gz"], files["index.idx"] = blocks.Bytes(), idx.Bytes()
		if f.loc {
			files["index.loc"] = []byte(f.zipnum.Part + "\tindex.cdx.gz\n")
		}
	case f.gzip:
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
		zw.Close()
		files[f.file] = b.Bytes()
	default:
		files[f.file] = []byte(strings.Join(lines, "\n") + "\n")
	}
	return files
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot is every file of dir: name to SHA-256.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

// logOnDisk writes the log to a file and reads its catalog, to follow it
// on disk (stream.go).
func logOnDisk(t *testing.T, log string) *rewritelog.Catalog {
	t.Helper()
	name := filepath.Join(t.TempDir(), "rewrite.log")
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := rewritelog.OpenCatalog(name, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// logModes are the two ways an Updater follows a log: held in memory,
// and followed on disk through the system sort (sort forced, however
// small the index).
var logModes = []string{"log in memory", "log on disk"}

func updater(t *testing.T, log, mode string) Updater {
	t.Helper()
	if mode == logModes[1] {
		return Updater{Log: logOnDisk(t, log), Sort: syssort.Sorter{TempDir: t.TempDir(), InMemory: -1}}
	}
	return Updater{Moves: loadLog(t, log)}
}

func rewriteInPlace(t *testing.T, path, log, mode string, known func([]byte) bool) (*InPlace, error) {
	t.Helper()
	ix, err := Locate(path)
	if err != nil {
		return nil, err
	}
	p := &InPlace{Updater: updater(t, log, mode), Known: known}
	return p, p.Rewrite(ix, ix)
}

// TestInPlaceForms updates an index of each form in place and compares
// its files with those of the same form written afresh from the updated
// lines, sorted: byte for byte (this package's writer made both; a block
// whose lines stay is copied as read, one that changes is compressed as
// the writer compresses). The pair of a.warc.gz's a)/1 lines changes order,
// across a block boundary where blocks are of 1 line.
func TestInPlaceForms(t *testing.T) {
	before := inPlaceLines()
	after := updatedLines(t, inPlaceLog, before)
	if slices.Equal(after[:2], []string{before[0], before[1]}) || !strings.Contains(after[1], "warc/revisit") {
		t.Fatalf("the test's lines do not change order: %q", after[:2])
	}
	for _, f := range forms {
		for _, mode := range logModes {
			t.Run(f.name+", "+mode, func(t *testing.T) {
				dir := t.TempDir()
				writeFiles(t, dir, f.encode(t, before))
				p, err := rewriteInPlace(t, filepath.Join(dir, f.file), inPlaceLog, mode, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := f.encode(t, after)
				got := snapshot(t, dir)
				if len(got) != len(want) {
					t.Errorf("files after: %v", got)
				}
				for name, b := range want {
					if got[name] != fmt.Sprintf("%x", sha256.Sum256(b)) {
						data, _ := os.ReadFile(filepath.Join(dir, name))
						t.Errorf("%s is not what a fresh index has:\n%s\nfresh:\n%s", name, show(data), show(b))
					}
				}
				if p.Stats.Revisits != 3 || p.Changed() == 0 {
					t.Errorf("stats %+v", p.Stats)
				}
				if f.zipnum != nil && (p.BlocksRewritten == 0 || p.BlocksRewritten == p.Blocks) {
					t.Errorf("%d blocks, %d rewritten", p.Blocks, p.BlocksRewritten)
				}
			})
		}
	}
}

func show(b []byte) string {
	if len(b) > 1 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			if t, err := io.ReadAll(zr); err == nil {
				return fmt.Sprintf("(gzip, %d bytes)\n%s", len(b), t)
			}
		}
	}
	return string(b)
}

// TestInPlaceUnsorted: an index that was not sorted keeps its order, each
// line where it was.
func TestInPlaceUnsorted(t *testing.T) {
	for _, mode := range logModes {
		lines := inPlaceLines()
		slices.Reverse(lines)
		dir := t.TempDir()
		path := filepath.Join(dir, "index.cdx")
		writeFiles(t, dir, map[string][]byte{"index.cdx": []byte(strings.Join(lines, "\n") + "\n")})
		if _, err := rewriteInPlace(t, path, inPlaceLog, mode, nil); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		j := &Copy{Updater: Updater{Moves: loadLog(t, inPlaceLog)}, Out: cdx.NewWriter(&want), Strict: true}
		j.Index(strings.NewReader(strings.Join(lines, "\n")+"\n"), "index")
		j.Out.Flush()
		got, _ := os.ReadFile(path)
		if string(got) != want.String() {
			t.Errorf("%s: got\n%s\nwant\n%s", mode, got, want.String())
		}
	}
}

// TestInPlaceRefused: an index that does not match its blocks or its
// collection, or that the update cannot keep right, is left untouched
// (every file as it was, no temporary file) with an error naming the file
// and the line or offset.
func TestInPlaceRefused(t *testing.T) {
	lines := inPlaceLines()
	pywb := form{file: "index.idx", zipnum: style(cdx.ZipNumStyle{Form: cdx.IdxTab, Part: "index.cdx.gz", Numbered: true}, 3)}
	btrix := form{file: "index.idx", zipnum: style(cdx.BrowsertrixStyle, 3)}
	summaryLine := func(files map[string][]byte, n int) (*cdx.Block, []string) {
		idx := strings.Split(strings.TrimSuffix(string(files["index.idx"]), "\n"), "\n")
		b, err := cdx.ParseBlock([]byte(idx[n-1]), int64(n))
		if err != nil {
			t.Fatal(err)
		}
		return b, idx
	}
	type edit func(files map[string][]byte)
	cases := []struct {
		name  string
		form  form
		edit  edit
		log   string
		known func([]byte) bool
		want  string
	}{
		{"summary offsets shifted", pywb, func(fs map[string][]byte) {
			b, idx := summaryLine(fs, 2)
			idx[1] = string(b.AppendTo(nil, b.Key, b.Offset+5, b.Length, ""))
			fs["index.idx"] = []byte(strings.Join(idx, "\n") + "\n")
		}, "", nil, "index.cdx.gz: offset %d (the block of %s line 2): the summary puts a block here, but the block before it (line 1) ends at"},
		{"summary length wrong", pywb, func(fs map[string][]byte) {
			b, idx := summaryLine(fs, 1)
			idx[0] = string(b.AppendTo(nil, b.Key, b.Offset, b.Length-4, ""))
			fs["index.idx"] = []byte(strings.Join(idx, "\n") + "\n")
		}, "", nil, "index.cdx.gz: offset 0 (the block of %s line 1): the gzip member does not end within"},
		{"a block that is not gzip", pywb, func(fs map[string][]byte) {
			b, _ := summaryLine(fs, 2)
			data := fs["index.cdx.gz"]
			copy(data[b.Offset:], bytes.Repeat([]byte("x"), int(b.Length)))
		}, "", nil, "index.cdx.gz: offset %d (the block of %s line 2): not gzip"},
		{"bytes after the last block", pywb, func(fs map[string][]byte) {
			fs["index.cdx.gz"] = append(fs["index.cdx.gz"], "junk"...)
		}, "", nil, "4 bytes after the last block the summary gives"},
		{"a key that does not start its block", pywb, func(fs map[string][]byte) {
			b, idx := summaryLine(fs, 2)
			idx[1] = string(b.AppendTo(nil, []byte("a)/1 20250101000001"), b.Offset, b.Length, ""))
			fs["index.idx"] = []byte(strings.Join(idx, "\n") + "\n")
		}, "", nil, "%s: line 2: key \"a)/1 20250101000001\" does not start its block's first line"},
		{"a block's digest", btrix, func(fs map[string][]byte) {
			b, idx := summaryLine(fs, 3)
			d := []byte(b.Digest)
			d[len(d)-1] ^= 1
			idx[2] = string(b.AppendTo(nil, b.Key, b.Offset, b.Length, string(d)))
			fs["index.idx"] = []byte(strings.Join(idx, "\n") + "\n")
		}, "", nil, "(the block of %s line 3): the block's digest is sha256:"},
		{"keys out of order", pywb, func(fs map[string][]byte) {
			b, idx := summaryLine(fs, 2)
			idx[1] = string(b.AppendTo(nil, []byte("a)/0"), b.Offset, b.Length, ""))
			fs["index.idx"] = []byte(strings.Join(idx, "\n") + "\n")
		}, "", nil, "%s: line 2: key \"a)/0\" sorts before line 1's"},
		{"a summary line that is none", btrix, func(fs map[string][]byte) {
			fs["index.idx"] = append(fs["index.idx"], "x 1 {\"offset\": 1}\n"...)
		}, "", nil, "%s: line 7: JSON without \"offset\" and \"length\""},
		{"an index of other files", form{file: "index.cdx"}, nil, "", func(f []byte) bool { return string(f) != "z.warc.gz" },
			"index.cdx: line 2: names the file \"z.warc.gz\", which is no file of the collection"},
		{"a log entry without its line", form{file: "index.cdx"}, nil,
			inPlaceLog + "b.warc.gz 5000 800 4500 300 revisit sha1:NEWD http://b/9 2025-01-01T00:00:00Z\n", nil,
			"b.warc.gz: no index line at offset 5000"},
		{"a line that cannot be updated", form{file: "index.cdx"}, func(fs map[string][]byte) {
			fs["index.cdx"] = bytes.Replace(fs["index.cdx"], []byte(" 2000 1000 a.warc.gz"), []byte(" 1996 1000 a.warc.gz"), 1)
		}, "", nil, "index.cdx: line 1: the index gives the record at 1000 length 1996"},
		{"a gzip of many members and no summary", form{file: "index.cdx.gz", gzip: true}, func(fs map[string][]byte) {
			fs["index.cdx.gz"] = append(fs["index.cdx.gz"], fs["index.cdx.gz"]...)
		}, "", nil, "index.cdx.gz: gzip of 2 members, as a ZipNum's block file is, and no ZipNum summary"},
		{"a part with two copies in .loc", form{file: "index.idx", zipnum: style(cdx.ZipNumStyle{Form: cdx.IdxTab, Part: "p"}, 3)}, func(fs map[string][]byte) {
			fs["index.loc"] = []byte("p\tindex.cdx.gz\thttp://mirror/index.cdx.gz\n")
		}, "", nil, "index.loc: part \"p\" has 2 copies"},
	}
	for _, c := range cases {
		for _, mode := range logModes {
			t.Run(c.name+", "+mode, func(t *testing.T) {
				dir := t.TempDir()
				files := c.form.encode(t, lines)
				if c.edit != nil {
					c.edit(files)
				}
				writeFiles(t, dir, files)
				before := snapshot(t, dir)
				log := c.log
				if log == "" {
					log = inPlaceLog
				}
				_, err := rewriteInPlace(t, filepath.Join(dir, c.form.file), log, mode, c.known)
				want := c.want
				if strings.Contains(want, "%") {
					b, _ := cdx.ParseBlock(bytes.SplitN(files["index.idx"], []byte("\n"), 3)[1], 2)
					args := []any{filepath.Join(dir, "index.idx")}
					if strings.Count(want, "%") == 2 {
						args = []any{b.Offset, args[0]}
					}
					want = fmt.Sprintf(want, args...)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v\nwant %s", err, want)
				}
				if after := snapshot(t, dir); !equalMaps(after, before) {
					t.Errorf("files changed: %v, before %v", after, before)
				}
			})
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInPlaceInterrupted: an update of a ZipNum killed after its journal,
// between the renames of its two files, leaves a journal that the next
// update completes before anything else, so that no summary is left with
// the blocks of the other version; killed before the journal, it leaves
// the old files and temporary files the next update removes.
func TestInPlaceInterrupted(t *testing.T) {
	f := form{file: "index.idx", zipnum: style(cdx.CDXJIndexerStyle, 3)}
	lines := inPlaceLines()
	want := f.encode(t, updatedLines(t, inPlaceLog, lines))
	for _, renamed := range []int{-1, 0, 1} { // -1: killed before the journal
		t.Run(fmt.Sprintf("renamed %d", renamed), func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, f.encode(t, lines))
			before := snapshot(t, dir)
			ix, err := Locate(filepath.Join(dir, "index.idx"))
			if err != nil {
				t.Fatal(err)
			}
			p := &InPlace{Updater: Updater{Moves: loadLog(t, inPlaceLog)}, Note: "the test's"}
			r := &replacement{index: ix.Path, note: p.Note}
			if err := p.zipnum(ix, ix, r); err != nil {
				t.Fatal(err)
			}
			if renamed < 0 {
				for _, nf := range r.files {
					nf.close() // written, never renamed: a kill
				}
			} else {
				j, _, err := r.prepare()
				if err != nil || j == nil {
					t.Fatal(err)
				}
				for _, jf := range j.Files[:renamed] {
					if err := os.Rename(jf.Temp, jf.Final); err != nil {
						t.Fatal(err)
					}
				}
			}
			note, finished, err := FinishPending(ix)
			if err != nil || finished != (renamed >= 0) || finished && note != "the test's" {
				t.Fatalf("FinishPending: %q %v %v", note, finished, err)
			}
			got := snapshot(t, dir)
			if renamed < 0 {
				if !equalMaps(got, before) {
					t.Errorf("killed before the journal: %v, want the old files %v", got, before)
				}
				return
			}
			for name, b := range want {
				if got[name] != fmt.Sprintf("%x", sha256.Sum256(b)) {
					t.Errorf("%s is not the new version", name)
				}
			}
			if len(got) != len(want) {
				t.Errorf("files left: %v", got)
			}
		})
	}
}

// TestOpenZipNum reads a ZipNum through its summary as one index.
func TestOpenZipNum(t *testing.T) {
	lines := inPlaceLines()
	for _, f := range forms[2:] {
		dir := t.TempDir()
		writeFiles(t, dir, f.encode(t, lines))
		ix, err := Locate(filepath.Join(dir, f.file))
		if err != nil || ix.Form != ZipNum {
			t.Fatalf("%s: %+v %v", f.name, ix, err)
		}
		rc, err := OpenZipNum(ix)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != strings.Join(lines, "\n")+"\n" {
			t.Errorf("%s: %v\n%s", f.name, err, b)
		}
	}
	// A block that is not where the summary says fails the read.
	dir := t.TempDir()
	files := forms[3].encode(t, lines)
	files["index.cdx.gz"] = append([]byte{0}, files["index.cdx.gz"]...)
	writeFiles(t, dir, files)
	ix, _ := Locate(filepath.Join(dir, "index.idx"))
	rc, _ := OpenZipNum(ix)
	_, err := io.ReadAll(rc)
	var be *cdx.BlockError
	if !errors.As(err, &be) {
		t.Errorf("got %v, want a BlockError", err)
	}
}

func TestFileSet(t *testing.T) {
	s := NewFileSet([]string{"a.warc.gz", "sub/b.warc.gz", "x/y/c.warc"})
	for name, want := range map[string]bool{
		"a.warc.gz": true, "b.warc.gz": true, "sub/b.warc.gz": true, "/data/coll/sub/b.warc.gz": true,
		"http://store/warcs/x/y/c.warc": true, "c.warc": true, "d.warc.gz": false, "sub/": false, "": false,
	} {
		if got := s.Knows([]byte(name)); got != want {
			t.Errorf("%q: %v", name, got)
		}
	}
}

// TestInPlaceCorpus updates copies of the ZipNums of the corpus: pywb's
// sample (tab-separated summary and .loc, blocks of 5 lines without a
// final newline, written by Python's zlib) and py-wacz's WACZ index. With
// an empty log every file stays byte for byte (each block copied); with a
// log that rewrote a record of iana.warc.gz, the lines are those the
// stream update gives, each block has the lines it had and no final
// newline, and its summary matches it.
func TestInPlaceCorpus(t *testing.T) {
	src := filepath.Join("..", "..", "shared", "corpus", "webrecorder+pywb", "sample_archive", "zipcdx")
	idx, err := os.ReadFile(filepath.Join(src, "zipnum-sample.idx"))
	if err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	blocks, err := os.ReadFile(filepath.Join(src, "zipnum-sample.cdx.gz"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"zipnum-sample.idx": idx, "zipnum-sample.cdx.gz": blocks,
		"zipnum-sample.loc": []byte("zipnum\tzipnum-sample.cdx.gz\n")}
	readLines := func(dir string) ([]string, []int64) {
		ix, err := Locate(filepath.Join(dir, "zipnum-sample.idx"))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := openBlocks(ix, ix)
		if err != nil {
			t.Fatal(err)
		}
		defer bs.close()
		var lines []string
		var counts []int64
		for {
			b, br, err := bs.next()
			if err == io.EOF {
				return lines, counts
			}
			if err != nil {
				t.Fatal(err)
			}
			text, err := io.ReadAll(br)
			if err != nil {
				t.Fatal(err)
			}
			if br.EndsWithNewline() {
				t.Errorf("block %d ends with a newline", b.Number)
			}
			if !bytes.HasPrefix(text, b.Key) {
				t.Errorf("block %d does not start with its key %q", b.Number, b.Key)
			}
			lines = append(lines, strings.Split(string(text), "\n")...)
			counts = append(counts, br.Lines())
		}
	}
	orig := t.TempDir()
	writeFiles(t, orig, files)
	before, counts := readLines(orig)

	for _, mode := range logModes {
		t.Run(mode, func(t *testing.T) { inPlaceCorpus(t, mode, files, orig, before, counts, readLines) })
	}
}

func inPlaceCorpus(t *testing.T, mode string, files map[string][]byte, orig string, before []string, counts []int64, readLines func(string) ([]string, []int64)) {
	dir := t.TempDir()
	writeFiles(t, dir, files)
	p, err := rewriteInPlace(t, filepath.Join(dir, "zipnum-sample.cdx.gz"), "", mode, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, dir); !equalMaps(got, snapshot(t, orig)) || p.BlocksRewritten != 0 || p.Blocks != 38 {
		t.Errorf("an empty log changed the files (%d of %d blocks rewritten)", p.BlocksRewritten, p.Blocks)
	}

	log := "# run 2026-01-01T00:00:00Z\n" +
		"iana.warc.gz 7311 33449 7311 500 revisit sha1:AAW2RS7JB7HTF666XNZDQYJFA6PDQBPO http://www.iana.org/_js/2013.1/jquery.js 2014-01-26T20:06:25Z\n"
	if p, err = rewriteInPlace(t, filepath.Join(dir, "zipnum-sample.idx"), log, mode, nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	j := &Copy{Updater: Updater{Moves: loadLog(t, log)}, Out: cdx.NewWriter(&out), Strict: true}
	if err := j.Index(strings.NewReader(strings.Join(before, "\n")+"\n"), "index"); err != nil {
		t.Fatal(err)
	}
	j.Out.Flush()
	want := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if slices.IsSorted(before) {
		slices.Sort(want)
	}
	got, gotCounts := readLines(dir)
	if !slices.Equal(got, want) || !slices.Equal(gotCounts, counts) {
		t.Errorf("%d lines in blocks of %v, want %d in %v", len(got), gotCounts, len(want), counts)
	}
	if p.Stats.Revisits != 1 || p.Stats.Moved == 0 || p.BlocksRewritten == 0 || p.BlocksRewritten == p.Blocks {
		t.Errorf("%+v; %d of %d blocks rewritten", p.Stats, p.BlocksRewritten, p.Blocks)
	}
}

// TestLocate tells the forms of index files.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	lines := inPlaceLines()
	writeFiles(t, dir, map[string][]byte{
		"plain.idx":     []byte(strings.Join(lines, "\n") + "\n"), // a CDX index called .idx
		"cdx.gz":        forms[1].encode(t, lines)["index.cdx.gz"],
		"z.idx":         []byte(`a)/ 2025 {"offset": "0", "length": "9", "filename": "a.warc.gz"}` + "\n"),
		"blocks.cdx.gz": forms[4].encode(t, lines)["index.cdx.gz"],
		"summary.idx":   bytes.ReplaceAll(forms[4].encode(t, lines)["index.idx"], []byte("index.cdx.gz"), []byte("blocks.cdx.gz")),
		"other.summary": []byte("not a summary\n"),
		"orphan.cdx.gz": append(forms[1].encode(t, lines)["index.cdx.gz"], forms[1].encode(t, lines)["index.cdx.gz"]...),
	})
	for name, want := range map[string]string{
		"plain.idx": "plain", "cdx.gz": "gzip", "summary.idx": "ZipNum", "blocks.cdx.gz": "ZipNum summary.idx",
		"orphan.cdx.gz": "gzip", "z.idx": `names "a.warc.gz" as a block file: a WARC or ARC file is no ZipNum's`,
	} {
		ix, err := Locate(filepath.Join(dir, name))
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case ix.Form == ZipNum:
			got = "ZipNum " + filepath.Base(ix.Path)
		default:
			got = ix.Form.String()
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

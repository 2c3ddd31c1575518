package cdx

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
)

// readZipNum reads every block of a ZipNum through its summary and
// returns the lines, checking each block with BlockReader.
func readZipNum(t *testing.T, idx, blocks []byte) ([]string, []*Block) {
	t.Helper()
	ir := NewIdxReader(bytes.NewReader(idx), "index.idx")
	r, err := NewReader(bytes.NewReader(nil), "index.cdx.gz", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var bs []*Block
	for {
		b, err := ir.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
		br, err := NewBlockReader(bytes.NewReader(blocks), "index.cdx.gz", "index.idx", b, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Continue(br)
		first := true
		for {
			l, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if first && !bytes.HasPrefix(l.Raw, b.Key) {
				t.Errorf("line %d: key %q does not start its block's first line %q", b.Number, b.Key, l.Raw)
			}
			first = false
			lines = append(lines, string(l.Raw))
		}
	}
	return lines, bs
}

// TestZipNumCorpus reads pywb's ZipNum sample and py-wacz's WACZ index
// through their summaries: every block is where its line says, starts with
// its key, and every summary line is written back byte for byte.
func TestZipNumCorpus(t *testing.T) {
	dir := filepath.Join(corpusDir, "webrecorder+pywb", "sample_archive", "zipcdx")
	idx, err := os.ReadFile(filepath.Join(dir, "zipnum-sample.idx"))
	if err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	blocks, err := os.ReadFile(filepath.Join(dir, "zipnum-sample.cdx.gz"))
	if err != nil {
		t.Fatal(err)
	}
	lines, bs := readZipNum(t, idx, blocks)
	if len(bs) != 38 || len(lines) != 188 {
		t.Errorf("%d blocks, %d lines; pywb's sample has 38 blocks of 5 lines (the last 3)", len(bs), len(lines))
	}
	for i, b := range bs {
		if b.Form != IdxTab || b.Part != "zipnum" || b.Seq != int64(i+1) {
			t.Errorf("line %d: %+v", i+1, b)
		}
		if got := b.AppendTo(nil, b.Key, b.Offset, b.Length, b.Digest); !bytes.Equal(got, b.Raw) {
			t.Errorf("line %d written back as %q", i+1, got)
		}
	}

	// py-wacz's WACZ: "!meta", then Python's JSON without a digest.
	zr, err := zip.OpenReader(filepath.Join(corpusDir, "webrecorder+py-wacz", "tests", "fixtures", "valid_example_1.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	member := func(name string) []byte {
		f, err := zr.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	idx, blocks = member("indexes/index.idx"), member("indexes/index.cdx.gz")
	lines, bs = readZipNum(t, idx, blocks)
	if len(bs) != 1 || len(lines) != 1 || bs[0].Form != IdxJSON || bs[0].Length != int64(len(blocks)) {
		t.Errorf("%d blocks %+v, %d lines", len(bs), bs, len(lines))
	}
	ir := NewIdxReader(bytes.NewReader(idx), "index.idx")
	ir.Next()
	if ir.Meta == nil || ir.Meta.Filename != "index.cdx.gz" || ir.Meta.Format != MetaFormat {
		t.Errorf("meta %+v", ir.Meta)
	}
	if got := bs[0].AppendTo(nil, bs[0].Key, 7, 8, ""); string(got) != `com,example)/ 20201007212236 {"offset": 7, "length": 8}` {
		t.Errorf("edited: %s", got)
	}
}

// TestZipNumStyles writes the same lines in the three writers' styles and
// reads them back: the summary lines as each writer spells them, every
// block where its line says, and an edit keeps the spelling.
func TestZipNumStyles(t *testing.T) {
	var in []string
	for i := range 11 {
		in = append(in, fmt.Sprintf(`com,example)/p%02d 20240101000000 {"url": "http://example.com/p%02d", "mime": "text/html", "status": "200", "digest": "sha1:AAAA", "length": "100", "offset": "%d", "filename": "a.warc.gz"}`, i, i, i*100))
	}
	cases := []struct {
		name  string
		style ZipNumStyle
		first string // the summary's first lines
	}{
		{"pywb", ZipNumStyle{Form: IdxTab, Lines: 4, Part: "index", Numbered: true}, "com,example)/p00 20240101000000\tindex\t0\t"},
		{"cdxj-indexer", ZipNumStyle{Form: IdxJSON, Lines: 4, FinalNewline: true, Filename: "index.cdx.gz", Meta: true, Digest: true},
			"!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}\ncom,example)/p00 20240101000000 {\"offset\": 0, \"length\": "},
		{"browsertrix", ZipNumStyle{Form: IdxJSON, Lines: 4, FinalNewline: true, Filename: "index.cdx.gz", Meta: true, LineFilename: true, Digest: true, Compact: true},
			"!meta 0 {\"format\":\"cdxj-gzip-1.0\",\"filename\":\"index.cdx.gz\"}\ncom,example)/p00 20240101000000 {\"offset\":0,\"length\":"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var blocks, idx bytes.Buffer
			w := NewZipNumWriter(&blocks, &idx, c.style)
			for _, l := range in {
				if err := w.WriteLine([]byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(idx.String(), c.first) {
				t.Errorf("summary:\n%s", idx.String())
			}
			lines, bs := readZipNum(t, idx.Bytes(), blocks.Bytes())
			if strings.Join(lines, "\n") != strings.Join(in, "\n") || len(bs) != 3 {
				t.Fatalf("%d blocks, lines:\n%s", len(bs), strings.Join(lines, "\n"))
			}
			if c.style.Form == IdxJSON && bs[0].Digest == "" || c.style.LineFilename && bs[0].Part != "index.cdx.gz" {
				t.Errorf("%+v", bs[0])
			}
			for _, b := range bs {
				if got := b.AppendTo(nil, b.Key, b.Offset, b.Length, b.Digest); !bytes.Equal(got, b.Raw) {
					t.Errorf("written back as %q, read %q", got, b.Raw)
				}
			}
			// The last block has 3 lines; its last ends with "\n" as the style says.
			br, _ := NewBlockReader(bytes.NewReader(blocks.Bytes()), "b", "i", bs[2], nil)
			io.Copy(io.Discard, br)
			if br.EndsWithNewline() != c.style.FinalNewline || br.Lines() != 3 {
				t.Errorf("last block: newline %v, %d lines", br.EndsWithNewline(), br.Lines())
			}
		})
	}
}

// TestZipNumBad: summary lines that are no ZipNum's, and blocks that are
// not where or what their summary line says, are errors naming the file
// and the line or offset.
func TestZipNumBad(t *testing.T) {
	for _, c := range []struct{ name, idx, want string }{
		{"three fields", "a 1\tp\t0\n", "line 1: 3 tab-separated fields"},
		{"offset no number", "a 1\tp\tx\t10\n", `line 1: offset "x"`},
		{"no JSON", "a 1 2 3\n", "line 1: neither"},
		{"unknown key", `a 1 {"offset": 0, "length": 5, "lines": 3}` + "\n", `line 1: JSON key "lines"`},
		{"no length", `a 1 {"offset": 0}` + "\n", `line 1: JSON without "offset" and "length"`},
		{"bad digest", `a 1 {"offset": 0, "length": 5, "digest": "md5:00"}` + "\n", "line 1: digest"},
		{"meta later", "a 1\tp\t0\t5\n!meta 0 {}\n", "line 2: a \"!\" line after"},
		{"unknown format", `!meta 0 {"format": "cdxj-zstd"}` + "\n", "line 1: \"!meta\" format"},
		{"empty line", "a 1\tp\t0\t5\n\nb 1\tp\t5\t5\n", "line 2: an empty line"},
		{"mixed", "a 1\tp\t0\t5\n" + `b 1 {"offset": 5, "length": 5}` + "\n", "line 2: a JSON line in a tab-separated summary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ir := NewIdxReader(strings.NewReader(c.idx), "x.idx")
			var err error
			for err == nil {
				_, err = ir.Next()
			}
			var ie *IdxError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "x.idx: "+c.want) {
				t.Errorf("got %v, want x.idx: %s", err, c.want)
			}
		})
	}

	var blocks, idx bytes.Buffer
	w := NewZipNumWriter(&blocks, &idx, ZipNumStyle{Form: IdxJSON, Lines: 1, Digest: true})
	w.WriteLine([]byte(`a)/ 1 {"offset": "0"}`))
	w.WriteLine([]byte(`b)/ 1 {"offset": "1"}`))
	w.Close()
	ir := NewIdxReader(bytes.NewReader(idx.Bytes()), "x.idx")
	b1, _ := ir.Next()
	b2, _ := ir.Next()
	garbage := append([]byte("not gzip at all"), blocks.Bytes()...)
	tampered := bytes.Clone(blocks.Bytes())
	tampered[b2.Offset+20] ^= 0xff
	for _, c := range []struct {
		name   string
		data   []byte
		b      Block
		digest string
		want   string
	}{
		{"not gzip", garbage, *b1, "", "x.cdx.gz: offset 0 (the block of x.idx line 1): not gzip"},
		{"length too short", blocks.Bytes(), Block{Number: 1, Offset: 0, Length: b1.Length - 3}, "", "does not end within the"},
		{"length too long: two members", blocks.Bytes(), Block{Number: 1, Offset: 0, Length: b1.Length + b2.Length}, "", "ends " + fmt.Sprint(b2.Length) + " bytes before the end"},
		{"beyond the file", blocks.Bytes(), Block{Number: 2, Offset: 1000, Length: 10}, "", "offset 1000 (the block of x.idx line 2): not gzip: nothing there"},
		{"digest", blocks.Bytes(), *b2, b1.Digest, "the block's digest is " + b2.Digest},
		{"damaged", tampered, *b2, "", "offset " + fmt.Sprint(b2.Offset) + " (the block of x.idx line 2): gzip"},
		{"no length", blocks.Bytes(), Block{Number: 1}, "", "length 0: a block is a gzip member"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b
			if c.digest != "" {
				b.Digest = c.digest
			}
			br, err := NewBlockReader(bytes.NewReader(c.data), "x.cdx.gz", "x.idx", &b, nil)
			if err == nil {
				_, err = io.Copy(io.Discard, br)
			}
			var be *BlockError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
}

func TestZipNumKey(t *testing.T) {
	for line, want := range map[string]string{
		`com,a)/ 20240101000000 {"url": "http://a/"}`:                        "com,a)/ 20240101000000",
		"com,a)/ 20240101000000 http://a/ text/html 200 D - - 1 0 f.warc.gz": "com,a)/ 20240101000000",
		"one-field":    "one-field",
		"two fields\r": "two fields",
	} {
		if got := ZipNumKey([]byte(line)); string(got) != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
}

// TestFixed: the part of a line no edit changes.
func TestFixed(t *testing.T) {
	for line, want := range map[string]string{
		`com,a)/ 2024 {"url": "http://a/", "mime": "t"}`:   "com,a)/ 2024",
		"com,a)/ 2024 http://a/ text/html 200 D - - 1 0 f": "com,a)/ 2024 http://a/ ",
		"http://a/ 1.2.3.4 2024 text/html 5 f.arc 7":       "http://a/ 1.2.3.4 2024 ",
		" CDX N b a m s k r M S V g":                       " CDX N b a m s k r M S V g",
	} {
		lines, _ := readAll(t, []byte(line+"\n"), Options{})
		if got := string(lines[0].Fixed()); got != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
}

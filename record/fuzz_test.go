package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// fuzzSeeds are hand-built files: well-formed and damaged WARC and ARC.
func fuzzSeeds() [][]byte {
	a := warcRec("WARC/1.0", "response", "http://a/", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nA")
	b := warcRec("WARC/1.1", "request", "http://b/", "GET / HTTP/1.1\r\nHost: b\r\n\r\n")
	chunked := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
	lf := rec("\n", append(warcLines("warc/0.17", "resource", "urn:lf"), "Content-Length:", " 3"), "abc", "\n")
	crcrlf := rec("\r\r\n", append(warcLines("WARC/0.18", "metadata", "urn:cr"), "Content-Length: 3"), "abc", "\r\r\n\r\r\n")
	short := rec("\r\n", append(warcLines("WARC/1.0", "response", "http://s/"), "Content-Length: 2"), "abcdef", "\r\n\r\n")
	noLength := rec("\r\n", warcLines("WARC/1.0", "response", "http://n/"), "abc", "\r\n\r\n")
	desc := arcFiledesc(76)
	v2body := "2 0 Alexa Internet\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
	v2 := fmt.Sprintf("filedesc://x.arc 0.0.0.0 19960923142103 text/plain 200 - - 0 x.arc %d\n%s\n", len(v2body), v2body) +
		arcRec("http://a b/ 1.2.3.4 19961104142103 text/html 200 - - 209 x.arc", httpBlock)
	seeds := []string{
		"", "WARC/1.0\r\n", a + b, a + chunked + b, lf + crcrlf, a + short + b, noLength + a, a[:len(a)-20],
		"junk\nWARC/1.0\r\nContent-Length: 0\r\n\r\n",
		desc + arcRec("http://example.com/ 1.2.3.4 20140216050221 text/html", httpBlock),
		arcFiledesc(75) + arcRec("dns:example.com 1.2.3.4 2014 text/dns", "x") + arcRec("http://x/ - - ", "y"),
		arcFiledesc(77) + "garbage\n" + arcRec("http://alexa/ 1.2.3.4 19961104142103", "z"),
		v2,
		desc + "http://t/ 1.2.3.4 20140216050221 text/html 500\n" + httpBlock,
	}
	out := make([][]byte, 0, 2*len(seeds))
	for _, s := range seeds {
		out = append(out, []byte(s))
	}
	// The same as gzip files of one member per record or per file.
	for _, parts := range [][]string{{a, b, chunked}, {a + b}, {desc, arcRec("http://e/ 1.2.3.4 20140216050221 text/html", httpBlock)}, {a, short, b}} {
		out = append(out, gzFile(nopTB{}, parts...).data)
	}
	return out
}

// nopTB lets the file builders run outside a test.
type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Fatal(args ...any)     { panic(fmt.Sprint(args...)) }
func (nopTB) Fatalf(string, ...any) { panic("fatal") }

// smallCorpusFiles are the corpus's WARC and ARC files under 20 KB.
func smallCorpusFiles() [][]byte {
	var out [][]byte
	filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := strings.ToLower(d.Name())
		if d.IsDir() || !strings.Contains(name, ".warc") && !strings.Contains(name, ".arc") {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() >= 20<<10 {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			out = append(out, data)
		}
		return nil
	})
	return out
}

func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	for _, s := range smallCorpusFiles() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		starts := fuzzRead(t, data, nil)
		if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
			return // a gzip file already
		}
		// The same bytes as a gzip file, one member per record found.
		gz, members := gzipAt(t, data, starts)
		fuzzRead(t, gz, members)
	})
}

// gzipAt compresses data as gzip members cut at the offsets cuts, and
// returns the file and the span of each member.
func gzipAt(t *testing.T, data []byte, cuts []int64) ([]byte, map[[2]int64]bool) {
	var buf bytes.Buffer
	members := map[[2]int64]bool{}
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	from := int64(0)
	cuts = append(cuts, int64(len(data)))
	for _, c := range cuts {
		if c <= from {
			continue
		}
		start := int64(buf.Len())
		zw.Reset(&buf)
		zw.Write(data[from:c])
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		members[[2]int64{start, int64(buf.Len()) - start}] = true
		from = c
	}
	return buf.Bytes(), members
}

// fuzzRead reads data with every method a caller uses and checks what can
// always be checked. members, if given, are the spans of data's gzip
// members: a record read whole is one of them. It returns the offsets of the
// records Next returned.
func fuzzRead(t *testing.T, data []byte, members map[[2]int64]bool) []int64 {
	rr, err := NewReader(bytes.NewReader(data), "fuzz")
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	end := int64(0) // where the last record read whole ends
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		if i >= 10000 || time.Now().After(deadline) {
			t.Fatalf("no io.EOF after %d calls of Next", i)
		}
		r, err := rr.Next()
		if err == io.EOF {
			return starts
		}
		var e *Error
		if errors.As(err, &e) {
			if e.Offset < 0 || e.Offset > int64(len(data)) {
				t.Fatalf("damage at offset %d of %d bytes: %v", e.Offset, len(data), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v (%T)", err, err)
		}
		if len(starts) > 0 && r.Offset <= starts[len(starts)-1] {
			t.Fatalf("record at %d after one at %d", r.Offset, starts[len(starts)-1])
		}
		if r.Offset < end {
			t.Fatalf("record at %d inside the one before, which ends at %d", r.Offset, end)
		}
		starts = append(starts, r.Offset)
		var got bytes.Buffer
		var head []byte
		if i%3 != 2 {
			h, err := rr.ReadHTTPHead()
			if err != nil {
				if errors.Is(err, ErrHeaderTooLong) {
					continue
				}
				if errors.As(err, &e) {
					continue
				}
				t.Fatalf("ReadHTTPHead: %v", err)
			}
			head = append(head, h.Raw...)
			if h.Status == 0 && len(h.Raw) != 0 {
				t.Fatalf("no status, but %d bytes of head", len(h.Raw))
			}
		}
		if i%3 != 1 {
			if _, err := rr.WriteTo(&got); err != nil {
				if errors.As(err, &e) {
					continue
				}
				t.Fatalf("WriteTo: %v", err)
			}
		}
		if err := rr.Finish(); err != nil {
			if errors.As(err, &e) {
				continue
			}
			t.Fatalf("Finish: %v", err)
		}
		rec := *r
		if rec.Offset < 0 || rec.Length <= 0 || rec.Offset+rec.Length > int64(len(data)) {
			t.Fatalf("record at %d+%d in %d bytes", rec.Offset, rec.Length, len(data))
		}
		end = rec.Offset + rec.Length
		if i%3 == 0 && int64(len(head)+got.Len()) != rec.BlockLength {
			t.Fatalf("head %d + payload %d bytes, block %d", len(head), got.Len(), rec.BlockLength)
		}
		if members != nil {
			if !members[[2]int64{rec.Offset, rec.Length}] {
				t.Fatalf("record at %d+%d is no gzip member", rec.Offset, rec.Length)
			}
			continue
		}
		// Each Reader buffers 512 KiB: re-read a few records only, to keep
		// the fuzzer fast.
		if data[0] != 0x1f && len(starts) <= 8 {
			checkAlone(t, data, rec)
		}
	}
}

// checkAlone re-reads a plain record's bytes as a file of their own: they
// must give the same record, whole, and nothing else. An ARC record line
// may be read with other field meanings without the file's version.
func checkAlone(t *testing.T, data []byte, want Record) {
	rr, _ := NewReader(bytes.NewReader(data[want.Offset:want.Offset+want.Length]), "alone")
	got, err := rr.Next()
	if err != nil {
		t.Fatalf("record at %d+%d alone: %v", want.Offset, want.Length, err)
	}
	if err := rr.Finish(); err != nil {
		t.Fatalf("record at %d+%d alone: %v", want.Offset, want.Length, err)
	}
	g := *got
	if want.Format == ARC {
		g.Version, g.ARCFields, g.URI, g.Date = want.Version, want.ARCFields, want.URI, want.Date
	}
	g.Offset = want.Offset
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("record alone differs:\n got %+v\nwant %+v", g, want)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Fatalf("record at %d+%d alone is followed by %v", want.Offset, want.Length, err)
	}
}

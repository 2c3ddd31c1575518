package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// file is a hand-built archive and where each of its parts is stored.
type file struct {
	data []byte
	off  []int64 // offset of part i
	len  []int64 // bytes part i occupies (its gzip member for .gz)
	gz   bool
}

// plainFile concatenates parts.
func plainFile(parts ...string) file {
	var f file
	for _, p := range parts {
		f.off = append(f.off, int64(len(f.data)))
		f.len = append(f.len, int64(len(p)))
		f.data = append(f.data, p...)
	}
	return f
}

// gzFile compresses each part as a gzip member of its own.
func gzFile(t testing.TB, parts ...string) file {
	t.Helper()
	var buf bytes.Buffer
	f := file{gz: true}
	for _, p := range parts {
		start := buf.Len()
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.off = append(f.off, int64(start))
		f.len = append(f.len, int64(buf.Len()-start))
	}
	f.data = buf.Bytes()
	return f
}

// both returns the parts as a plain file and as a file of one gzip member
// per part.
func both(t testing.TB, parts ...string) map[string]file {
	return map[string]file{"plain": plainFile(parts...), "gz": gzFile(t, parts...)}
}

// rec builds a record: header lines joined by eol, the empty line, the block
// and the terminator end.
func rec(eol string, lines []string, block, end string) string {
	return strings.Join(lines, eol) + eol + eol + block + end
}

// warcLines is the header of a WARC record without its Content-Length.
func warcLines(version, typ, uri string) []string {
	return []string{
		version,
		"WARC-Type: " + typ,
		"WARC-Target-URI: " + uri,
		"WARC-Date: 2024-06-04T10:15:02Z",
		"WARC-Record-ID: <urn:uuid:" + fmt.Sprintf("%08x", len(uri)) + "-0000-0000-0000-000000000000>",
	}
}

// warcRec is a well-formed record: CRLF line ends, a Content-Length that fits
// its block, a CRLF CRLF terminator.
func warcRec(version, typ, uri, block string) string {
	lines := append(warcLines(version, typ, uri), fmt.Sprintf("Content-Length: %d", len(block)))
	return rec("\r\n", lines, block, "\r\n\r\n")
}

// headerLen is the length of a header written by rec, through its empty line.
func headerLen(eol string, lines []string) int64 {
	return int64(len(strings.Join(lines, eol) + eol + eol))
}

// event is one thing reading a file gave: a record read whole, or damage.
type event struct {
	rec  Record
	body string // the block, as WriteTo wrote it
	err  error
}

func (e event) String() string {
	if e.err != nil {
		return "damage: " + e.err.Error()
	}
	return fmt.Sprintf("record %s at %d+%d", e.rec.URI, e.rec.Offset, e.rec.Length)
}

// readAll reads f with Next, WriteTo and Finish until io.EOF, and fails the
// test on any error that is not an *Error or on a loop that does not end. A
// damage report from WriteTo is the record's report: Finish is not called.
func readAll(t testing.TB, name string, data []byte) []event {
	t.Helper()
	rr, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatalf("%s: Next does not reach io.EOF", name)
		}
		r, err := rr.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			checkDamage(t, name, err)
			evs = append(evs, event{err: err})
			continue
		}
		var body bytes.Buffer
		if _, err := rr.WriteTo(&body); err != nil {
			checkDamage(t, name, err)
			evs = append(evs, event{err: err})
			continue
		}
		if err := rr.Finish(); err != nil {
			checkDamage(t, name, err)
			evs = append(evs, event{err: err})
			continue
		}
		evs = append(evs, event{rec: *r, body: body.String()})
	}
}

// checkDamage fails the test unless err is an *Error naming the file.
func checkDamage(t testing.TB, name string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not an *Error", name, err, err)
	}
	if e.Name != name {
		t.Fatalf("%s: error names file %q", name, e.Name)
	}
}

// want is one expected event: the record of part `part` read whole, or
// damage err reported at the offset of part `part`. msg, if set, must be in
// the error's text.
type want struct {
	part int
	err  error
	msg  string
}

func whole(part int) want               { return want{part: part} }
func damage(part int, err error) want   { return want{part: part, err: err} }
func (w want) saying(msg string) want   { w.msg = msg; return w }
func (w want) at(f file) (int64, int64) { return f.off[w.part], f.len[w.part] }
func fmtSkipped(n, from, to int64) string {
	return fmt.Sprintf("%d bytes at offset %d skipped up to the next record at offset %d", n, from, to)
}

// check compares what reading gave with what was wanted, record by record:
// every damage once, every whole record where its bytes really are.
func check(t *testing.T, f file, evs []event, wants []want) {
	t.Helper()
	if len(evs) != len(wants) {
		t.Errorf("got %d events, want %d:", len(evs), len(wants))
		for _, e := range evs {
			t.Errorf("  %v", e)
		}
		return
	}
	for i, w := range wants {
		e := evs[i]
		off, length := w.at(f)
		if w.err == nil {
			if e.err != nil {
				t.Errorf("event %d: %v, want the record of part %d whole", i, e.err, w.part)
				continue
			}
			if e.rec.Offset != off || e.rec.Length != length {
				t.Errorf("event %d: record at %d+%d, want %d+%d", i, e.rec.Offset, e.rec.Length, off, length)
			}
			continue
		}
		if !errors.Is(e.err, w.err) {
			t.Errorf("event %d: %v, want %v", i, e, w.err)
			continue
		}
		var de *Error
		errors.As(e.err, &de)
		if de.Offset != off {
			t.Errorf("event %d: %v: offset %d, want %d", i, e.err, de.Offset, off)
		}
		if w.msg != "" && !strings.Contains(e.err.Error(), w.msg) {
			t.Errorf("event %d: %q does not say %q", i, e.err, w.msg)
		}
	}
}

func TestWARCVersionsAndLineEnds(t *testing.T) {
	const block = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, world\n"
	tests := []struct {
		name, version, eol string
	}{
		{"0.17", "WARC/0.17", "\r\n"},
		{"0.18", "WARC/0.18", "\r\n"},
		{"1.0", "WARC/1.0", "\r\n"},
		{"1.1", "WARC/1.1", "\r\n"},
		{"lower-case version line", "warc/1.0", "\r\n"},
		{"LF-only header lines", "WARC/1.0", "\n"},
		{"CR CR LF header lines", "WARC/1.0", "\r\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []string
			var headers [][]string
			for i, uri := range []string{"http://example.com/a", "http://example.com/bb"} {
				lines := append(warcLines(tt.version, "response", uri), fmt.Sprintf("Content-Length: %d", len(block)+i))
				headers = append(headers, lines)
				parts = append(parts, rec(tt.eol, lines, block+strings.Repeat("x", i), tt.eol+tt.eol))
			}
			for kind, f := range both(t, parts...) {
				evs := readAll(t, kind, f.data)
				check(t, f, evs, []want{whole(0), whole(1)})
				for i, e := range evs {
					if e.err != nil {
						continue
					}
					r := e.rec
					if r.Format != WARC || r.Version != tt.version || r.Type != "response" ||
						r.URI != []string{"http://example.com/a", "http://example.com/bb"}[i] ||
						r.Date != "2024-06-04T10:15:02Z" || r.BlockLength != int64(len(block)+i) {
						t.Errorf("%s record %d: %+v", kind, i, r)
					}
					if r.HeaderLength != headerLen(tt.eol, headers[i]) {
						t.Errorf("%s record %d: HeaderLength %d, want %d", kind, i, r.HeaderLength, headerLen(tt.eol, headers[i]))
					}
					if e.body != block+strings.Repeat("x", i) {
						t.Errorf("%s record %d: block %q", kind, i, e.body)
					}
				}
			}
		})
	}
}

func TestWARCHeaderFields(t *testing.T) {
	block := strings.Repeat("b", 483)
	lines := []string{
		"WARC/1.0",
		"warc-type: Response",
		"WARC-Target-URI: http://example.com/first",
		"WARC-Target-URI: http://example.com/second",
		"WARC-Description: folded",
		"  over two",
		"\tcontinuation lines",
		"X-Trailing-Blank: value",
		"   ",
		"content-length:",
		" 483",
		"X-Empty:",
		"X-Spaced  :   padded value   ",
	}
	for kind, f := range both(t, rec("\r\n", lines, block, "\r\n\r\n"), warcRec("WARC/1.0", "metadata", "urn:x", "m")) {
		evs := readAll(t, kind, f.data)
		check(t, f, evs, []want{whole(0), whole(1)})
		if len(evs) == 0 || evs[0].err != nil {
			continue
		}
		r := evs[0].rec
		fields := []struct{ name, value string }{
			{"WARC-Type", "Response"},
			{"WARC-TYPE", "Response"},
			{"WARC-Target-URI", "http://example.com/first"},
			{"WARC-Description", "folded over two continuation lines"},
			{"X-Trailing-Blank", "value"},
			{"Content-Length", "483"},
			{"X-Empty", ""},
			{"x-spaced", "padded value"},
		}
		for _, fl := range fields {
			v, ok := r.Header.Lookup(fl.name)
			if !ok || v != fl.value {
				t.Errorf("%s: %s = %q, %v; want %q", kind, fl.name, v, ok, fl.value)
			}
		}
		if r.Header.Has("Continuation-Lines") || r.Header.Get("X-Missing") != "" {
			t.Errorf("%s: a field that is not there", kind)
		}
		if len(r.Header) != 8 {
			t.Errorf("%s: %d fields, want 8: %q", kind, len(r.Header), r.Header)
		}
		if r.Type != "response" || r.URI != "http://example.com/first" || r.BlockLength != 483 {
			t.Errorf("%s: Type %q URI %q BlockLength %d", kind, r.Type, r.URI, r.BlockLength)
		}
	}
}

// TestWARCTerminators: whatever run of CR and LF follows a block is its
// terminator, and belongs to the record's Length.
func TestWARCTerminators(t *testing.T) {
	lines := append(warcLines("WARC/1.1", "resource", "urn:a"), "Content-Length: 4")
	for _, end := range []string{"\r\n\r\n", "\r\n", "\n", "\n\n", "", "\r\n\r\n\r\n\r\n\n", "\r\r\n\r\r\n"} {
		t.Run(fmt.Sprintf("%q", end), func(t *testing.T) {
			for kind, f := range both(t, rec("\r\n", lines, "data", end), rec("\r\n", lines, "more", end)) {
				check(t, f, readAll(t, kind, f.data), []want{whole(0), whole(1)})
			}
		})
	}
}

func TestWARCDamage(t *testing.T) {
	good := func(uri string) string {
		return warcRec("WARC/1.0", "response", uri, "HTTP/1.1 200 OK\r\n\r\nbody of "+uri)
	}
	withLength := func(uri, cl, block string) string {
		lines := warcLines("WARC/1.0", "response", uri)
		if cl != "-" {
			lines = append(lines, "Content-Length: "+cl)
		}
		return rec("\r\n", lines, block, "\r\n\r\n")
	}
	a, c, d := good("http://a/"), good("http://c/"), good("http://d/")
	// A Content-Length 5 bytes short: "12345" and the terminator are junk.
	short := withLength("http://b/", "10", "0123456789"+"12345")
	// A Content-Length 9 bytes long: the block takes the terminator and
	// "WARC/" of the next record, whose rest is junk up to the one after.
	long := withLength("http://b/", "19", "0123456789")
	misfolded := rec("\r\n", []string{"WARC/1.0", "WARC-Type: revisit", "this line has no colon",
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI: http://example.com/", "Content-Length: 4"}, "body", "\r\n\r\n")

	tests := []struct {
		name  string
		parts []string
		wants []want
		plain []want // what the plain file gives, when it differs
		gz    []want // what the gzip file gives, when it differs
	}{
		{name: "missing Content-Length", parts: []string{a, withLength("http://b/", "-", "body"), c},
			wants: []want{whole(0), damage(1, ErrBadHeader).saying("no Content-Length"), whole(2)}},
		{name: "non-numeric Content-Length", parts: []string{a, withLength("http://b/", "12x", "body"), c},
			wants: []want{whole(0), damage(1, ErrBadHeader).saying(`"12x"`), whole(2)}},
		{name: "negative Content-Length", parts: []string{a, withLength("http://b/", "-4", "body"), c},
			wants: []want{whole(0), damage(1, ErrBadHeader), whole(2)}},
		{name: "empty Content-Length", parts: []string{withLength("http://b/", "", ""), c},
			wants: []want{damage(0, ErrBadHeader), whole(1)}},
		{name: "header line without a colon", parts: []string{a, misfolded, c},
			// "warc/1.0/revisit" in the profile URI starts no record.
			wants: []want{whole(0), damage(1, ErrBadHeader).saying("no colon"), whole(2)}},
		{name: "continuation line first", parts: []string{rec("\r\n", []string{"WARC/1.0", " folded", "Content-Length: 1"}, "x", "\r\n\r\n"), c},
			wants: []want{damage(0, ErrBadHeader), whole(1)}},
		{name: "block cut short at the end of the file", parts: []string{a, strings.TrimSuffix(withLength("http://b/", "100", "only 22 bytes are here"), "\r\n\r\n")},
			wants: []want{whole(0), damage(1, ErrTruncated).saying("22 of its 100 bytes")}},
		{name: "header cut short at the end of the file", parts: []string{a, "WARC/1.0\r\nWARC-Type: response\r\nContent-Len"},
			wants: []want{whole(0), damage(1, ErrTruncated)}},
		{name: "Content-Length too short", parts: []string{a, short, c},
			wants: []want{whole(0), damage(1, ErrRecordEnd), whole(2)}},
		{name: "Content-Length too long", parts: []string{a, long, c, d},
			// In a gzip file the member ends the record: it is cut short and
			// the next member is whole.
			wants: []want{whole(0), damage(1, ErrTruncated), whole(2), whole(3)},
			plain: []want{whole(0), damage(1, ErrRecordEnd), whole(3)}},
		{name: "junk before the first record", parts: []string{"junk\r\nmore junk", a},
			wants: []want{damage(0, ErrNoRecord), whole(1)}},
		{name: "junk with no line end before the next record", parts: []string{strings.TrimSuffix(a, "\r\n\r\n") + "garbage", c},
			wants: []want{damage(0, ErrRecordEnd), whole(1)}},
		{name: "junk after the last record", parts: []string{a, "\x00\x01 trailing junk \r\n"},
			wants: []want{damage(0, ErrRecordEnd).saying("skipped up to the end of the file")},
			// In a gzip file the junk is a member of its own, which holds no record.
			gz: []want{whole(0), damage(1, ErrNoRecord)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for kind, f := range both(t, tt.parts...) {
				wants := tt.wants
				if kind == "plain" && tt.plain != nil {
					wants = tt.plain
				}
				if kind == "gz" && tt.gz != nil {
					wants = tt.gz
				}
				check(t, f, readAll(t, kind, f.data), wants)
			}
		})
	}
}

// TestWARCResyncReportsSkippedBytes: after a Content-Length that is wrong,
// the one report says which bytes were skipped, and the next record's Offset
// is where it really starts.
func TestWARCResyncReportsSkippedBytes(t *testing.T) {
	a := warcRec("WARC/1.0", "response", "http://a/", "HTTP/1.1 200 OK\r\n\r\nA")
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\nC")
	lines := append(warcLines("WARC/1.0", "response", "http://b/"), "Content-Length: 10")
	short := rec("\r\n", lines, "0123456789JUNK!", "\r\n\r\n")
	f := plainFile(a, short, c)
	junk := f.off[1] + headerLen("\r\n", lines) + 10
	check(t, f, readAll(t, "short.warc", f.data), []want{
		whole(0),
		damage(1, ErrRecordEnd).saying(fmt.Sprintf("unexpected bytes at offset %d after its 10-byte block; ", junk) +
			fmtSkipped(f.off[2]-junk, junk, f.off[2])),
		whole(2),
	})

	// Too long: the block ends 3 bytes into the next record's version line,
	// whose record is lost with the bytes skipped.
	d := warcRec("WARC/1.0", "response", "http://d/", "HTTP/1.1 200 OK\r\n\r\nD")
	lines = append(warcLines("WARC/1.0", "response", "http://b/"), "Content-Length: 17")
	long := rec("\r\n", lines, "0123456789", "\r\n\r\n")
	f = plainFile(a, long, c, d)
	junk = f.off[2] + 3
	check(t, f, readAll(t, "long.warc", f.data), []want{
		whole(0),
		damage(1, ErrRecordEnd).saying(fmtSkipped(f.off[3]-junk, junk, f.off[3])),
		whole(3),
	})
}

// TestWARCGzipMembers: damage confined to a gzip member costs only its
// record, and a member must hold exactly one record.
func TestWARCGzipMembers(t *testing.T) {
	a := warcRec("WARC/1.0", "warcinfo", "", "software: test\r\n")
	b := warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\n\r\nB")
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\nC")
	d := warcRec("WARC/1.0", "response", "http://d/", "HTTP/1.1 200 OK\r\n\r\nD")

	t.Run("whole file in one member", func(t *testing.T) {
		f := gzFile(t, a+b+c)
		check(t, f, readAll(t, "one.warc.gz", f.data), []want{damage(0, ErrMultiRecord)})
	})
	t.Run("one member with two records among others", func(t *testing.T) {
		f := gzFile(t, a, b+c, d)
		check(t, f, readAll(t, "two.warc.gz", f.data), []want{whole(0), damage(1, ErrMultiRecord), whole(2)})
	})
	t.Run("member with junk after its record", func(t *testing.T) {
		f := gzFile(t, a, b+"junk", c)
		check(t, f, readAll(t, "junk.warc.gz", f.data), []want{whole(0), damage(1, ErrRecordEnd), whole(2)})
	})
	t.Run("member of line ends only", func(t *testing.T) {
		f := gzFile(t, a, "\r\n\r\n", b)
		check(t, f, readAll(t, "blank.warc.gz", f.data), []want{whole(0), whole(2)})
	})
	t.Run("last member clipped", func(t *testing.T) {
		big := warcRec("WARC/1.0", "resource", "urn:big", strings.Repeat("0123456789abcdef", 4096))
		f := gzFile(t, a, big)
		f.data = f.data[:f.off[1]+f.len[1]/2]
		evs := readAll(t, "clipped.warc.gz", f.data)
		check(t, f, evs, []want{whole(0), damage(1, ErrTruncated)})
		if len(evs) == 2 && !errors.Is(evs[1].err, gzmulti.ErrTruncated) {
			t.Errorf("%v does not say the gzip member is truncated", evs[1].err)
		}
	})
	t.Run("gzip trailer missing", func(t *testing.T) {
		f := gzFile(t, a, b)
		f.data = f.data[:len(f.data)-8]
		check(t, f, readAll(t, "trailer.warc.gz", f.data), []want{whole(0), damage(1, ErrTruncated)})
	})
	t.Run("member cut inside the header", func(t *testing.T) {
		f := gzFile(t, a, b[:20], c)
		check(t, f, readAll(t, "header.warc.gz", f.data), []want{whole(0), damage(1, ErrTruncated), whole(2)})
	})
	t.Run("garbage between members", func(t *testing.T) {
		f := gzFile(t, a, b)
		g := file{gz: true, data: append(append(append([]byte{}, f.data[:f.len[0]]...), "not gzip"...), f.data[f.off[1]:]...),
			off: []int64{0, f.len[0], f.len[0] + 8}, len: []int64{f.len[0], 8, f.len[1]}}
		check(t, g, readAll(t, "garbage.warc.gz", g.data), []want{whole(0), damage(1, gzmulti.ErrGarbage), whole(2)})
	})
}

// TestDamageReportedOnce: however the block of a truncated record is read,
// its damage is reported once, and the next Next goes on.
func TestDamageReportedOnce(t *testing.T) {
	a := warcRec("WARC/1.0", "response", "http://a/", "HTTP/1.1 200 OK\r\n\r\nA")
	cut := strings.TrimSuffix(warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\nX: y\r\n\r\n"+strings.Repeat("z", 5000)), "\r\n\r\n")
	cut = cut[:len(cut)-100]
	ways := []struct {
		name string
		read func(*Reader) error
	}{
		{"Finish", func(rr *Reader) error { return rr.Finish() }},
		{"Next without Finish", func(rr *Reader) error { return nil }},
		{"WriteTo", func(rr *Reader) error { _, err := rr.WriteTo(io.Discard); return err }},
		{"Read", func(rr *Reader) error { _, err := io.Copy(io.Discard, struct{ io.Reader }{rr}); return err }},
		{"ReadHTTPHead then WriteTo", func(rr *Reader) error {
			if _, err := rr.ReadHTTPHead(); err != nil {
				return err
			}
			_, err := rr.WriteTo(io.Discard)
			return err
		}},
	}
	for name, f := range both(t, a, cut) {
		for _, w := range ways {
			t.Run(name+"/"+w.name, func(t *testing.T) {
				rr, _ := NewReader(bytes.NewReader(f.data), name)
				var reports []error
				for i := 0; i < 10; i++ {
					r, err := rr.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						reports = append(reports, err)
						continue
					}
					if r.Offset == f.off[0] {
						if err := rr.Finish(); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if err := w.read(rr); err != nil {
						reports = append(reports, err)
						// Finish answers for the record, with the same report.
						if ferr := rr.Finish(); ferr != err {
							t.Errorf("Finish after %v: %v", err, ferr)
						}
					}
				}
				if len(reports) != 1 || !errors.Is(reports[0], ErrTruncated) {
					t.Errorf("reports %v, want one ErrTruncated", reports)
				}
			})
		}
	}
}

// TestNextWithoutFinish: Next finishes the record before it and gives its
// damage first; a plain Read of part of a block is enough.
func TestNextWithoutFinish(t *testing.T) {
	a := warcRec("WARC/1.0", "response", "http://a/", "HTTP/1.1 200 OK\r\n\r\nA")
	lines := append(warcLines("WARC/1.0", "response", "http://b/"), "Content-Length: 3")
	bad := rec("\r\n", lines, "0123", "\r\n\r\n")
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\nC")
	for kind, f := range both(t, a, bad, c) {
		rr, _ := NewReader(bytes.NewReader(f.data), kind)
		var got []string
		for i := 0; i < 10; i++ {
			r, err := rr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				got = append(got, "damage")
				continue
			}
			got = append(got, r.URI)
			if _, err := rr.Read(make([]byte, 2)); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Join(got, " ") != "http://a/ http://b/ damage http://c/" {
			t.Errorf("%s: %v", kind, got)
		}
	}
}

func TestReadAfterFinish(t *testing.T) {
	f := plainFile(warcRec("WARC/1.0", "resource", "urn:a", "block"))
	rr, _ := NewReader(bytes.NewReader(f.data), "f")
	if _, err := rr.Next(); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 3)
	if n, err := rr.Read(p); n != 3 || err != nil || string(p) != "blo" || rr.BlockLeft() != 2 {
		t.Fatalf("Read: %d %v %q, %d left", n, err, p, rr.BlockLeft())
	}
	if err := rr.Finish(); err != nil {
		t.Fatal(err)
	}
	if n, err := rr.Read(p); n != 0 || err != io.EOF {
		t.Errorf("Read after Finish: %d %v", n, err)
	}
	if err := rr.Finish(); err != nil {
		t.Errorf("second Finish: %v", err)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Errorf("Next: %v", err)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Errorf("Next after io.EOF: %v", err)
	}
}

func TestEmptyInput(t *testing.T) {
	for name, data := range map[string][]byte{"empty": nil, "line ends": []byte("\r\n\n"), "empty gzip": gzFile(t, "").data} {
		if evs := readAll(t, name, data); len(evs) != 0 {
			t.Errorf("%s: %v", name, evs)
		}
	}
}

// TestReset proves that a reset Reader reads a file exactly as a new one,
// whatever state the previous file left it in (half-read block, damage,
// gzip or plain, WARC or ARC).
func TestReset(t *testing.T) {
	warc := "WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 20\r\n\r\nHTTP/1.1 200 OK\r\n\r\nab\r\n\r\n"
	arc := "filedesc://x.arc 0.0.0.0 20240102030405 text/plain 3\nabc\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(warc))
	zw.Close()
	files := [][]byte{[]byte(warc + warc), gz.Bytes(), []byte(arc), []byte("junk"), []byte(warc[:30])}
	summary := func(rr *Reader) string {
		var b strings.Builder
		for i := 0; i < 10; i++ {
			rec, err := rr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				fmt.Fprintf(&b, "err %v;", err)
				continue
			}
			block, err := io.ReadAll(rr)
			fmt.Fprintf(&b, "%s %d %q %v %v;", rec.Type, rec.Offset, block, err, rr.Finish())
		}
		return b.String()
	}
	var rr *Reader
	for i, f := range files {
		fresh, _ := NewReader(bytes.NewReader(f), "f")
		want := summary(fresh)
		if rr == nil {
			rr, _ = NewReader(bytes.NewReader(f), "f")
		} else if err := rr.Reset(bytes.NewReader(f), "f"); err != nil {
			t.Fatal(err)
		}
		if got := summary(rr); got != want {
			t.Errorf("file %d after Reset:\n%s\nwant\n%s", i, got, want)
		}
		// Leave the next file half read before the next Reset.
		rr.Reset(bytes.NewReader(files[(i+1)%len(files)]), "g")
		rr.Next()
		rr.Read(make([]byte, 3))
	}
}

// ownField finds exactly the names Header.Get finds, in any case, and no
// other: no letter of the four names folds to a rune outside ASCII.
func TestOwnField(t *testing.T) {
	for k, own := range ownFieldNames {
		for _, c := range own {
			for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
				if f >= utf8.RuneSelf {
					t.Errorf("%s: %q folds to %q: a matching name may be longer", own, c, f)
				}
			}
		}
		for _, name := range []string{own, strings.ToLower(own), strings.ToUpper(own)} {
			if got := ownField(name); got != k {
				t.Errorf("ownField(%q) = %d, want %d", name, got, k)
			}
		}
	}
	for _, name := range []string{"", "WARC-Typ", "WARC-Types", "WARC-Record-ID", "Content-Type", "WARC-IP-Address", "Content-Lengtk"} {
		if got := ownField(name); got != -1 {
			t.Errorf("ownField(%q) = %d, want -1", name, got)
		}
	}
}

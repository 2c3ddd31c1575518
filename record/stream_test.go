package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// readStream is readAll with a Reader of NewStreamReader.
func readStream(t testing.TB, name string, data []byte) []event {
	t.Helper()
	rr, err := NewStreamReader(bytes.NewReader(data), name)
	if err != nil {
		t.Fatal(err)
	}
	return readEvents(t, rr, name)
}

// readEvents reads rr as readAll does.
func readEvents(t testing.TB, rr *Reader, name string) []event {
	t.Helper()
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

// gzipParts compresses each part as a member of its own.
func gzipParts(t testing.TB, parts ...string) []byte {
	return gzFile(t, parts...).data
}

// TestStreamReaderReadsAnyMembers: whatever the members hold (the whole
// file, several records, part of a record), a stream Reader reads the
// records of the inflated stream whole, at their offsets in it, as
// NewReader reads the plain file.
func TestStreamReaderReadsAnyMembers(t *testing.T) {
	a := warcRec("WARC/1.0", "warcinfo", "", "software: test\r\n")
	b := warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\n\r\nB")
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\nC")
	d := warcRec("WARC/1.1", "resource", "urn:d", strings.Repeat("d", 300<<10)) // over the read buffer
	desc := arcFiledesc(76)
	h := arcRec("http://example.com/ 93.184.216.34 20140216050222 text/html", httpBlock)
	dns := arcRec("dns:example.com 10.0.0.1 20140216050223 text/dns", "20140216050223\nexample.com.\t300\tIN\tA\t93.184.216.34\n")
	cases := []struct {
		name    string
		records []string // the plain file, record by record
		data    []byte   // the file as stored
	}{
		{"whole WARC in one member", []string{a, b, c, d}, gzipParts(t, a+b+c+d)},
		{"whole ARC in one member", []string{desc, h, dns}, gzipParts(t, desc+h+dns)},
		{"members of several records among single ones", []string{a, b, c, d}, gzipParts(t, a, b+c, d)},
		{"records cut across members", []string{a, b, c, d}, gzipParts(t, a+b[:10], b[10:]+c[:len(c)-3], c[len(c)-3:], d[:100<<10], d[100<<10:])},
		{"one member per record", []string{a, b, c}, gzipParts(t, a, b, c)},
		{"empty members between", []string{desc, h}, gzipParts(t, "", desc, "", h, "")},
		{"plain file", []string{a, b, c}, []byte(a + b + c)},
		{"line ends before, between and after", []string{"\r\n" + a, b + "\n\n", c + "\r\n"}, gzipParts(t, "\r\n"+a+b+"\n\n"+c+"\r\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := plainFile(tc.records...)
			if strings.HasPrefix(tc.records[0], "\r\n") {
				// Leading line ends belong to no record.
				f.off[0] += 2
				f.len[0] -= 2
			}
			evs := readStream(t, "s", tc.data)
			wants := make([]want, len(tc.records))
			for i := range wants {
				wants[i] = whole(i)
			}
			check(t, f, evs, wants)
			plain := readAll(t, "s", f.data)
			for i := range min(len(evs), len(plain)) {
				if evs[i].body != plain[i].body || evs[i].rec.URI != plain[i].rec.URI || evs[i].rec.Type != plain[i].rec.Type {
					t.Errorf("record %d: %v %q, plain reading gives %v %q", i, evs[i], clip([]byte(evs[i].body)), plain[i], clip([]byte(plain[i].body)))
				}
			}
		})
	}
}

// TestStreamReaderEveryCut: a file cut into two members at any byte, its
// records damaged or not, reads as the plain file does: the same records
// and the same damage at the same offsets.
func TestStreamReaderEveryCut(t *testing.T) {
	a := warcRec("WARC/1.0", "response", "http://a/", "HTTP/1.1 200 OK\r\n\r\nA")
	lines := append(warcLines("WARC/1.0", "response", "http://b/"), "Content-Length: 3")
	bad := rec("\r\n", lines, "0123", "\r\n\r\n") // one byte longer than it says
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\nC")
	for name, plain := range map[string]string{
		"whole": a + c,
		"bad":   a + bad + "junk\r\n" + c,
		"arc":   arcFiledesc(76) + arcRec("http://example.com/ 93.184.216.34 20140216050222 text/html", httpBlock),
	} {
		want := summarize(readAll(t, name, []byte(plain)))
		for cut := 0; cut <= len(plain); cut++ {
			data, _ := gzipAt(t, []byte(plain), []int64{int64(cut)})
			if got := summarize(readStream(t, name, data)); got != want {
				t.Errorf("%s cut at %d:\n%s\nwant\n%s", name, cut, got, want)
			}
		}
	}
}

// summarize writes events as offsets, lengths, blocks and kinds of damage.
func summarize(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.err != nil {
			var de *Error
			errors.As(e.err, &de)
			fmt.Fprintf(&b, "damage at %d: %v\n", de.Offset, errors.Unwrap(de))
			continue
		}
		fmt.Fprintf(&b, "%s %s at %d+%d: %q\n", e.rec.Type, e.rec.URI, e.rec.Offset, e.rec.Length, e.body)
	}
	return b.String()
}

// TestStreamReaderDamage: damage in the gzip layer is reported once, with
// the member's offset in the file, and reading goes on with the next member
// where the file has one; record damage names its inflated offset.
func TestStreamReaderDamage(t *testing.T) {
	a := warcRec("WARC/1.0", "warcinfo", "", "software: test\r\n")
	b := warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\n\r\nB")
	c := warcRec("WARC/1.0", "response", "http://c/", "HTTP/1.1 200 OK\r\n\r\n"+strings.Repeat("c", 4000))
	d := warcRec("WARC/1.0", "response", "http://d/", "HTTP/1.1 200 OK\r\n\r\nD")
	whole := gzipParts(t, a+b+c)
	// Incompressible, so that the inflater hands a and b out before it
	// reaches a cut in the middle of the file.
	noise := make([]byte, 100<<10)
	for i, x := 0, uint32(1); i < len(noise); i++ {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	big := gzipParts(t, a+b+warcRec("WARC/1.0", "resource", "urn:noise", string(noise)))
	// A member of a+b, then c's member, then d's.
	ab := gzipParts(t, a+b)
	cm := gzipParts(t, c)
	multi := append(append(append([]byte{}, ab...), cm...), gzipParts(t, d)...)
	corrupt := append([]byte{}, multi...)
	for i := len(ab) + 20; i < len(ab)+60; i++ {
		corrupt[i] ^= 0x55 // c's deflate data
	}
	// Junk, and a header that does not parse, in the member before the
	// corrupt one: each is reported, with the bytes skipped up to the
	// damage, and then the damage.
	junkThenCorrupt := append(gzipParts(t, a+b+"junk"), corrupt[len(ab):]...)
	badHeader := "WARC/1.0\r\nno colon here\r\n\r\n"
	headerThenCorrupt := append(gzipParts(t, a+badHeader), corrupt[len(ab):]...)
	badCRC := append([]byte{}, whole...)
	badCRC[len(badCRC)-8] ^= 1
	cases := []struct {
		name string
		data []byte
		want []string // records by URI, or "damage: " and the kind
	}{
		{"whole file clipped", big[:len(big)/2], []string{"", "http://b/", "damage: " + ErrTruncated.Error()}},
		// The CRC-32 is checked at the end of the member: the damage is
		// reported there, with the member's offset in the file, and makes
		// all of its records suspect.
		{"whole file fails its CRC", badCRC, []string{"", "http://b/", "http://c/", "damage: " + gzmulti.ErrChecksum.Error()}},
		{"garbage after the member", append(append([]byte{}, whole...), "not gzip"...), []string{"", "http://b/", "http://c/", "damage: " + gzmulti.ErrGarbage.Error()}},
		{"corrupt member among others", corrupt, []string{"", "http://b/", "damage: " + gzmulti.ErrCorrupt.Error(), "http://d/"}},
		{"junk up to a corrupt member", junkThenCorrupt, []string{"", "damage: " + ErrRecordEnd.Error(), "damage: " + gzmulti.ErrCorrupt.Error(), "http://d/"}},
		{"bad header up to a corrupt member", headerThenCorrupt, []string{"", "damage: " + ErrBadHeader.Error(), "damage: " + gzmulti.ErrCorrupt.Error(), "http://d/"}},
		{"garbage between members", append(append(append([]byte{}, ab...), "junk"...), cm...), []string{"", "http://b/", "damage: " + gzmulti.ErrGarbage.Error(), "http://c/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs := readStream(t, "s.warc.gz", tc.data)
			var got []string
			for _, e := range evs {
				if e.err == nil {
					got = append(got, e.rec.URI)
					continue
				}
				kind := "?"
				for _, k := range []error{ErrTruncated, gzmulti.ErrChecksum, gzmulti.ErrCorrupt, gzmulti.ErrGarbage, ErrNoRecord, ErrRecordEnd, ErrBadHeader} {
					if errors.Is(e.err, k) {
						kind = k.Error()
						break
					}
				}
				got = append(got, "damage: "+kind)
				if (kind == ErrRecordEnd.Error() || kind == ErrBadHeader.Error()) && !strings.Contains(e.err.Error(), "skipped up to damage in the gzip stream") {
					t.Errorf("%v does not say what was skipped", e.err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got\n  %s\nwant\n  %s\n(%v)", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "), evs)
			}
		})
	}

	t.Run("record damage names the inflated offset", func(t *testing.T) {
		evs := readStream(t, "s.warc.gz", gzipParts(t, a+b+"junk\r\n"+c))
		if len(evs) != 3 || evs[1].err == nil {
			t.Fatalf("%v", evs)
		}
		var de *Error
		errors.As(evs[1].err, &de)
		if !de.Inflated || de.Offset != int64(len(a)) || !strings.Contains(de.Error(), fmt.Sprintf("inflated offset %d", len(a))) {
			t.Errorf("%v (Inflated %v, offset %d)", de, de.Inflated, de.Offset)
		}
	})
}

// TestStreamReaderDefaultUnchanged: the same whole-file gzip that a stream
// Reader reads is still refused by NewReader, which deduplication needs.
func TestStreamReaderDefaultUnchanged(t *testing.T) {
	a := warcRec("WARC/1.0", "warcinfo", "", "software: test\r\n")
	b := warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\n\r\nB")
	f := gzFile(t, a+b)
	check(t, f, readAll(t, "one.warc.gz", f.data), []want{damage(0, ErrMultiRecord)})
	if evs := readStream(t, "one.warc.gz", f.data); len(evs) != 2 || evs[0].err != nil || evs[1].err != nil {
		t.Errorf("stream reading: %v", evs)
	}
}

// TestStreamReaderReset: a reset stream Reader stays one.
func TestStreamReaderReset(t *testing.T) {
	a := warcRec("WARC/1.0", "warcinfo", "", "software: test\r\n")
	b := warcRec("WARC/1.0", "response", "http://b/", "HTTP/1.1 200 OK\r\n\r\nB")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(a + b))
	zw.Close()
	rr, err := NewStreamReader(bytes.NewReader(buf.Bytes()), "x")
	if err != nil {
		t.Fatal(err)
	}
	rr.Next()
	for i := 0; i < 2; i++ {
		if err := rr.Reset(bytes.NewReader(buf.Bytes()), "y"); err != nil {
			t.Fatal(err)
		}
		if evs := readEvents(t, rr, "y"); len(evs) != 2 || evs[1].err != nil || evs[1].rec.Offset != int64(len(a)) {
			t.Errorf("after Reset %d: %v", i, evs)
		}
	}
}

// TestStreamCorpus reads every corpus file with a stream Reader: reading
// ends, every record read whole is, read alone from the inflated stream,
// the same record, and the whole-file gzip files that NewReader refuses
// read whole.
func TestStreamCorpus(t *testing.T) {
	wholeFile := map[string]struct {
		whole  int
		damage []error
	}{
		"webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz":  {6, nil},
		"webrecorder+pywb/sample_archive/warcs/example-bad.warc.gz.bad": {6, nil},
		"datatogether+warc/testdata/test.warc.gz":                       {10, nil},
		"internetarchive+gowarc/testdata/warcs/good.warc.gz.open":       {50, nil},
		"internetarchive+gowarc/testdata/warcs/skip-non-open.warc.gz":   {10, nil},
		// One member, then garbage that no member follows.
		"internetarchive+gowarc/testdata/warcs/corrupted-mid-record.warc.gz.open":     {12, []error{gzmulti.ErrGarbage}},
		"internetarchive+gowarc/testdata/warcs/corrupted-trailing-bytes.warc.gz.open": {30, []error{gzmulti.ErrGarbage}},
	}
	seen := 0
	for _, p := range corpusFiles(t) {
		rel, _ := filepath.Rel(corpusDir, p)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			evs := readStream(t, rel, data)
			var whole []Record
			var damage []error
			for _, e := range evs {
				if e.err != nil {
					damage = append(damage, e.err)
				} else {
					whole = append(whole, e.rec)
				}
			}
			if want, ok := wholeFile[filepath.ToSlash(rel)]; ok {
				seen++
				if len(whole) != want.whole || len(damage) != len(want.damage) {
					t.Errorf("%d whole, damage %v; want %d whole, damage %v", len(whole), damage, want.whole, want.damage)
				}
				for i := range min(len(damage), len(want.damage)) {
					if !errors.Is(damage[i], want.damage[i]) {
						t.Errorf("damage %d: %v, want %v", i, damage[i], want.damage[i])
					}
				}
			}
			inflated, err := inflateAll(data)
			if err != nil {
				return // damaged gzip: the offsets of records after it are not those of this copy
			}
			for _, r := range whole {
				checkIsolated(t, inflated, r)
			}
		})
	}
	if seen != len(wholeFile) {
		t.Errorf("%d of the %d whole-file gzip files found", seen, len(wholeFile))
	}
}

// inflateAll returns a file's bytes inflated, all members one after
// another, or the file itself if it is not gzip.
func inflateAll(data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// FuzzStreamReader: any bytes, compressed as one gzip member or cut into
// two, read with a stream Reader as the plain bytes read with NewReader.
func FuzzStreamReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint16(0))
	}
	for _, s := range smallCorpusFiles() {
		f.Add(s, uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			// A gzip file already, likely damaged: reading ends, and
			// reports damage as *Error.
			readStream(t, "f", data)
			return
		}
		want := summarize(readAll(t, "f", data))
		cuts := []int64{}
		if int(cut) < len(data) {
			cuts = append(cuts, int64(cut))
		}
		gz, _ := gzipAt(t, data, cuts)
		if got := summarize(readStream(t, "f", gz)); got != want {
			t.Errorf("cut at %v:\n%s\nwant\n%s", cuts, got, want)
		}
	})
}

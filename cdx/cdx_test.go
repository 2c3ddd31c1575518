package cdx

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll reads every line of input with opts, returning clones and the
// errors of bad lines.
func readAll(t *testing.T, input []byte, opts Options) ([]*Line, []error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(input), "in", opts)
	if err != nil {
		t.Fatal(err)
	}
	var lines []*Line
	var bad []error
	for {
		l, err := r.Next()
		if err == io.EOF {
			return lines, bad
		}
		var le *LineError
		if errors.As(err, &le) {
			bad = append(bad, err)
		} else if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l.Clone())
	}
}

type want struct {
	urlkey, ts, url, mime, status, digest, file string
	offset, length                              int64
}

func got(l *Line) want {
	return want{string(l.URLKey), string(l.Timestamp), string(l.URL), string(l.MIME), string(l.Status), string(l.Digest), string(l.Filename), l.Offset, l.Length}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name   string
		line   string
		format Format
		want   want
	}{
		{"warcio.js CDXJ", `com,example)/ 20140127171200 {"url":"http://example.com","mime":"text/html","status":"200","digest":"B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A","length":"1046","offset":"334","filename":"dupes.warc.gz"}`,
			CDXJ, want{"com,example)/", "20140127171200", "http://example.com", "text/html", "200", "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "dupes.warc.gz", 334, 1046}},
		{"cdxj-indexer CDXJ, labelled digest, no mime", `com,example)/ 20140127171200 {"url": "http://example.com", "status": "200", "digest": "sha1:B2LT", "length": "1046", "offset": "334", "filename": "dupes.warc.gz"}`,
			CDXJ, want{"com,example)/", "20140127171200", "http://example.com", "", "200", "sha1:B2LT", "dupes.warc.gz", 334, 1046}},
		{"CDXJ with numbers, escapes and an unknown nested value", `org,x)/ 2014 {"url": "http://x.org/\u00e9\"\ud83d\ude00", "extra": {"a": [1, "}"]}, "length": 12, "offset": 0, "filename": "a b.warc"}`,
			CDXJ, want{"org,x)/", "2014", "http://x.org/é\"😀", "", "", "", "a b.warc", 0, 12}},
		{"CDXJ urlkey with spaces (--noSurt)", `http://x.org/a b 20240101000000 {"url":"http://x.org/a b","offset":"5","length":"6","filename":"f"}`,
			CDXJ, want{"http://x.org/a b", "20240101000000", "http://x.org/a b", "", "", "", "f", 5, 6}},
		{"CDX11", `com,example)/ 20140127171251 http://example.com warc/revisit - B2LT - - 553 11875 dupes.warc.gz`,
			CDX, want{"com,example)/", "20140127171251", "http://example.com", "warc/revisit", "", "B2LT", "dupes.warc.gz", 11875, 553}},
		{"CDX11 from warcio.js with spaces in the URL", `uk,co,example)/search%20results/page%2088.html 20240601000250 https://www.example.co.uk/search results/page 88.html warc/revisit 200 BOHF - - 556 95287 gen-00002.warc.gz`,
			CDX, want{"uk,co,example)/search%20results/page%2088.html", "20240601000250", "https://www.example.co.uk/search results/page 88.html", "warc/revisit", "200", "BOHF", "gen-00002.warc.gz", 95287, 556}},
		{"CDX9 (NetarchiveSuite)", `netarkivet.dk/ 20100909163328 http://netarkivet.dk/ text/html 302 3I42 http://netarkivet.dk/index-da.php 2438 NAS.warc`,
			CDX, want{"netarkivet.dk/", "20100909163328", "http://netarkivet.dk/", "text/html", "302", "3I42", "NAS.warc", 2438, -1}},
		{"CDX10", `a)/ 20100909163328 http://a/ text/html 200 DIG - - 77 f.warc`,
			CDX, want{"a)/", "20100909163328", "http://a/", "text/html", "200", "DIG", "f.warc", 77, -1}},
		{"NetarchiveSuite ARC layout, 8 fields", `http://www.fyens.dk/x.php 194.255.126.118 20040511211249 image/jpeg 6345 fyensdk.arc 6950 56bf412e`,
			CDX, want{"http://www.fyens.dk/x.php", "20040511211249", "http://www.fyens.dk/x.php", "image/jpeg", "", "56bf412e", "fyensdk.arc", 6950, 6345}},
		{"CRLF line end", "a)/ 2014 http://a/ text/html 200 D - - 1 2 f.warc\r",
			CDX, want{"a)/", "2014", "http://a/", "text/html", "200", "D", "f.warc", 2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines, bad := readAll(t, []byte(c.line+"\n"), Options{})
			if len(bad) > 0 || len(lines) != 1 {
				t.Fatalf("lines %d, errors %v", len(lines), bad)
			}
			l := lines[0]
			if l.Kind != Record || l.Format != c.format {
				t.Errorf("kind %d format %s, want a %s record", l.Kind, l.Format, c.format)
			}
			if g := got(l); g != c.want {
				t.Errorf("got  %+v\nwant %+v", g, c.want)
			}
			if s := string(l.AppendTo(nil)); s != c.line {
				t.Errorf("unedited line written as %q", s)
			}
		})
	}
}

func TestEdit(t *testing.T) {
	type edit struct {
		offset, length int64
		mime, digest   string
	}
	revisit := edit{offset: 900, length: 553, mime: "warc/revisit", digest: "NEWDIGEST"}
	cases := []struct {
		name, line string
		edit       edit
		want       string
	}{
		{"warcio.js CDXJ",
			`a)/ 2014 {"url":"http://a/","mime":"text/html","status":"200","digest":"OLD","length":"1046","offset":"334","filename":"f.warc.gz"}`, revisit,
			`a)/ 2014 {"url":"http://a/","mime":"warc/revisit","status":"200","digest":"NEWDIGEST","length":"553","offset":"900","filename":"f.warc.gz"}`},
		{"warcio.js CDXJ without mime and digest: inserted in the indexer's order",
			`a)/ 2014 {"url":"http://a/","status":"200","length":"1046","offset":"334","filename":"f.warc.gz"}`, revisit,
			`a)/ 2014 {"url":"http://a/","mime":"warc/revisit","status":"200","digest":"NEWDIGEST","length":"553","offset":"900","filename":"f.warc.gz"}`},
		{"Python CDXJ separators and numbers kept",
			`a)/ 2014 {"url": "http://a/", "length": 1046, "offset": 334, "filename": "f.warc.gz", "method": "POST"}`, revisit,
			`a)/ 2014 {"url": "http://a/", "mime": "warc/revisit", "digest": "NEWDIGEST", "length": 553, "offset": 900, "filename": "f.warc.gz", "method": "POST"}`},
		{"CDXJ with none of the keys: appended",
			`a)/ 2014 {"x": 1}`, revisit,
			`a)/ 2014 {"x": 1, "mime": "warc/revisit", "digest": "NEWDIGEST", "length": "553", "offset": "900"}`},
		{"CDXJ offset only",
			`a)/ 2014 {"offset":"334","length":"9","filename":"f"}`, edit{offset: 10, length: 9},
			`a)/ 2014 {"offset":"10","length":"9","filename":"f"}`},
		{"CDX11",
			`a)/ 2014 http://a/ text/html 200 OLD - - 1046 334 f.warc.gz`, revisit,
			`a)/ 2014 http://a/ warc/revisit 200 NEWDIGEST - - 553 900 f.warc.gz`},
		{"CDX11 with spaces in the URL",
			`a)/a%20b 2014 http://a/a b text/html 200 OLD - - 1046 334 f.warc.gz`, revisit,
			`a)/a%20b 2014 http://a/a b warc/revisit 200 NEWDIGEST - - 553 900 f.warc.gz`},
		{"CDX9 has no length column",
			`a)/ 2014 http://a/ text/html 200 OLD - 334 f.warc.gz`, revisit,
			`a)/ 2014 http://a/ warc/revisit 200 NEWDIGEST - 900 f.warc.gz`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines, bad := readAll(t, []byte(c.line+"\n"), Options{})
			if len(bad) > 0 {
				t.Fatal(bad)
			}
			l := lines[0]
			l.SetOffset(c.edit.offset)
			l.SetLength(c.edit.length)
			if c.edit.mime != "" {
				l.SetMIME(c.edit.mime)
			}
			if c.edit.digest != "" {
				l.SetDigest(c.edit.digest)
			}
			if s := string(l.AppendTo(nil)); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
			// What is written reads back with the edited values.
			back, bad := readAll(t, l.AppendTo(nil), Options{})
			if len(bad) > 0 {
				t.Fatal(bad)
			}
			b := back[0]
			if b.Offset != c.edit.offset || c.edit.mime != "" && string(b.MIME) != c.edit.mime {
				t.Errorf("reads back as %+v", got(b))
			}
			var w bytes.Buffer
			wr := NewWriter(&w)
			if err := wr.Write(l); err != nil {
				t.Fatal(err)
			}
			wr.Flush()
			if w.String() != c.want+"\n" {
				t.Errorf("Writer wrote %q", w.String())
			}
		})
	}
}

func TestRemove(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"middle", `a)/ 1 {"url":"u","mime":"text/html","status":"200"}`, `a)/ 1 {"url":"u","status":"200"}`},
		{"first", `a)/ 1 {"mime": "text/html", "status": "200"}`, `a)/ 1 {"status": "200"}`},
		{"only", `a)/ 1 {"mime": "text/html"}`, `a)/ 1 {}`},
		{"last", `a)/ 1 {"url": "u", "mime": "text/html"}`, `a)/ 1 {"url": "u"}`},
		{"absent", `a)/ 1 {"url": "u"}`, `a)/ 1 {"url": "u"}`},
		{"CDX", `a)/ 2014 http://a/ text/html 200 D - - 10 5 f`, `a)/ 2014 http://a/ - 200 D - - 10 5 f`},
	}
	for _, c := range cases {
		lines, bad := readAll(t, []byte(c.line+"\n"), Options{})
		if len(bad) > 0 {
			t.Fatal(bad)
		}
		l := lines[0]
		l.SetMIME("")
		if s := string(l.AppendTo(nil)); s != c.want || l.MIME != nil {
			t.Errorf("%s: got %s, want %s", c.name, s, c.want)
		}
		l.Revert()
		if s := string(l.AppendTo(nil)); s != c.line || l.IsEdited() {
			t.Errorf("%s: reverted to %s", c.name, s)
		}
	}
}

func TestCDX11(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"CDXJ", `a)/ 2014 {"url":"http://a/b c","mime":"text/html","status":"200","digest":"D","length":"10","offset":"5","filename":"f.warc.gz"}`,
			`a)/ 2014 http://a/b%20c text/html 200 D - - 10 5 f.warc.gz`},
		{"CDXJ without status", `a)/ 2014 {"url":"http://a/","mime":"warc/revisit","offset":"5","filename":"f"}`,
			`a)/ 2014 http://a/ warc/revisit - - - - - 5 f`},
		{"CDX11 as is", `a)/ 2014 http://a/ text/html 200 D - M 10 5 f.warc.gz`, `a)/ 2014 http://a/ text/html 200 D - M 10 5 f.warc.gz`},
		{"CDX9", `a)/ 2014 http://a/ text/html 200 D - 5 f.warc.gz`, `a)/ 2014 http://a/ text/html 200 D - - - 5 f.warc.gz`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines, bad := readAll(t, []byte(c.line+"\n"), Options{})
			if len(bad) > 0 {
				t.Fatal(bad)
			}
			if s := string(lines[0].AppendCDX11(nil)); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
}

func TestBadLines(t *testing.T) {
	input := strings.Join([]string{
		" CDX N b a m s k r M S V g",
		"a)/ 2014 http://a/ text/html 200 D - - 10 5 f.warc.gz",
		"a)/ 2014 too few fields",
		"a)/ 2014 http://a/ text/html 200 D - - ten 5 f.warc.gz",
		`b)/ 2014 {"url": "x", "offset": "1"`,
		"",
		"a)/ 2014 http://a/ text/html 200 D - - 10 6 f.warc.gz",
	}, "\n")
	lines, bad := readAll(t, []byte(input), Options{})
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7", len(lines))
	}
	wantBad := []string{"in: line 3: ", "in: line 4: length \"ten\"", "in: line 5: JSON"}
	if len(bad) != len(wantBad) {
		t.Fatalf("errors %v, want %d", bad, len(wantBad))
	}
	for i, w := range wantBad {
		if !strings.HasPrefix(bad[i].Error(), w) {
			t.Errorf("error %q, want it to start %q", bad[i], w)
		}
	}
	kinds := []Kind{Header, Record, Bad, Bad, Bad, Meta, Record}
	for i, l := range lines {
		if l.Kind != kinds[i] || l.Number != int64(i+1) {
			t.Errorf("line %d: kind %d number %d, want kind %d", i+1, l.Kind, l.Number, kinds[i])
		}
		if string(l.Raw) != strings.Split(input, "\n")[i] {
			t.Errorf("line %d: raw %q", i+1, l.Raw)
		}
	}
	if lines[6].Offset != 6 {
		t.Errorf("reading did not go on after the bad lines: %+v", got(lines[6]))
	}
}

func TestHeaderLayout(t *testing.T) {
	// A header naming another layout: the columns follow it.
	input := " CDX a b m g V\nhttp://a/ 2014 text/html f.arc 77\n"
	lines, bad := readAll(t, []byte(input), Options{})
	if len(bad) > 0 {
		t.Fatal(bad)
	}
	if g := got(lines[1]); g != (want{url: "http://a/", urlkey: "http://a/", ts: "2014", mime: "text/html", file: "f.arc", offset: 77, length: -1}) {
		t.Errorf("%+v", g)
	}
}

func TestGzipMembers(t *testing.T) {
	// Two members, the first without a final newline (pywb's ZipNum).
	var buf bytes.Buffer
	for _, part := range []string{"a)/ 2014 http://a/ t 200 D - - 1 0 f", "b)/ 2014 http://b/ t 200 D - - 1 1 f\nc)/ 2014 http://c/ t 200 D - - 1 2 f\n"} {
		z := gzip.NewWriter(&buf)
		z.Write([]byte(part))
		z.Close()
	}
	lines, bad := readAll(t, buf.Bytes(), Options{})
	if len(bad) > 0 || len(lines) != 3 {
		t.Fatalf("%d lines, errors %v", len(lines), bad)
	}
	for i, l := range lines {
		if l.Offset != int64(i) {
			t.Errorf("line %d: offset %d", i+1, l.Offset)
		}
	}
}

func TestForcedFormat(t *testing.T) {
	// A CDX line whose URL starts with "{" is CDXJ to detection, CDX when
	// forced.
	line := "a)/ 2014 {x} text/html 200 D - - 1 0 f\n"
	if _, bad := readAll(t, []byte(line), Options{}); len(bad) != 1 {
		t.Errorf("detected: %v, want one bad line", bad)
	}
	lines, bad := readAll(t, []byte(line), Options{Format: CDX})
	if len(bad) > 0 || string(lines[0].URL) != "{x}" {
		t.Errorf("forced CDX: %v %+v", bad, got(lines[0]))
	}
}

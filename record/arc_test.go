package record

import (
	"fmt"
	"strings"
	"testing"
)

// The version block and field-definition line of a v1 filedesc: 76 bytes.
const arcV1Body = "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"

// arcFiledesc is a v1 filedesc record declaring length n for arcV1Body,
// with the LF that ends a record.
func arcFiledesc(n int) string {
	return fmt.Sprintf("filedesc://test.arc 0.0.0.0 20140216050221 text/plain %d\n", n) + arcV1Body + "\n"
}

// arcRec is a record line (fields joined by spaces, the length last) and
// its block, with the LF that ends a record.
func arcRec(line, block string) string {
	return fmt.Sprintf("%s %d\n%s\n", line, len(block), block)
}

const httpBlock = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hi</html>"

func TestARCFiledescLength(t *testing.T) {
	if len(arcV1Body) != 76 {
		t.Fatalf("the version block is %d bytes", len(arcV1Body))
	}
	http := arcRec("http://example.com/ 93.184.216.34 20140216050222 text/html", httpBlock)
	dns := arcRec("dns:example.com 10.0.0.1 20140216050223 text/dns", "20140216050223\nexample.com.\t300\tIN\tA\t93.184.216.34\n")
	for _, n := range []int{75, 76, 77} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for kind, f := range both(t, arcFiledesc(n), http, dns) {
				evs := readAll(t, kind, f.data)
				check(t, f, evs, []want{whole(0), whole(1), whole(2)})
				if len(evs) != 3 {
					continue
				}
				desc, resp, res := evs[0].rec, evs[1].rec, evs[2].rec
				if desc.Format != ARC || desc.Type != "filedesc" || desc.Version != "1" || desc.BlockLength != int64(n) ||
					desc.URI != "filedesc://test.arc" || desc.Date != "2014-02-16T05:02:21Z" {
					t.Errorf("%s filedesc: %+v", kind, desc)
				}
				if evs[0].body != (arcV1Body + "\n")[:n] {
					t.Errorf("%s filedesc block %q", kind, evs[0].body)
				}
				if resp.Type != "response" || resp.URI != "http://example.com/" || evs[1].body != httpBlock ||
					resp.HeaderLength != int64(strings.IndexByte(http, '\n')+1) {
					t.Errorf("%s http record: %+v", kind, resp)
				}
				if res.Type != "resource" || res.URI != "dns:example.com" || res.ARCFields.ContentType != "text/dns" {
					t.Errorf("%s dns record: %+v", kind, res)
				}
			}
		})
	}
}

func TestARCRecordLines(t *testing.T) {
	tests := []struct {
		name   string
		line   string // without the length
		block  string
		fields ARCFields
		typ    string
		date   string
	}{
		{"URL with spaces, parsed from the right", "http://example.com/a b  c.html 1.2.3.4 20140216050221 text/html", httpBlock,
			ARCFields{URL: "http://example.com/a b  c.html", IP: "1.2.3.4", Date: "20140216050221", ContentType: "text/html"},
			"response", "2014-02-16T05:02:21Z"},
		{"dashes for missing fields", "http://example.com/ - - -", "payload",
			ARCFields{URL: "http://example.com/", IP: "-", Date: "-", ContentType: "-"}, "resource", ""},
		{"Alexa four-field line", "http://alexa.com/ 209.247.40.99 19961104142103", "payload",
			ARCFields{URL: "http://alexa.com/", IP: "209.247.40.99", Date: "19961104142103"}, "resource", "1996-11-04T14:21:03Z"},
		{"Alexa four-field line with a space in the URL", "http://alexa.com/a b 209.247.40.99 19961104142103", "payload",
			ARCFields{URL: "http://alexa.com/a b", IP: "209.247.40.99", Date: "19961104142103"}, "resource", "1996-11-04T14:21:03Z"},
		{"five fields, empty content type", "http://example.com/ 1.2.3.4 19961104142103 ", httpBlock,
			ARCFields{URL: "http://example.com/", IP: "1.2.3.4", Date: "19961104142103"}, "response", "1996-11-04T14:21:03Z"},
		{"dns record is a resource", "dns:www.example.com 192.168.1.1 20110922131213 text/dns", "20110922131213\nwww.example.com.\t3600\tIN\tA\t1.2.3.4\n",
			ARCFields{URL: "dns:www.example.com", IP: "192.168.1.1", Date: "20110922131213", ContentType: "text/dns"}, "resource", "2011-09-22T13:12:13Z"},
		{"metadata record is a resource", "metadata://netarkivet.dk/crawl/setup?x=1 130.225.27.140 20110922131213 text/xml", "<xml/>",
			ARCFields{URL: "metadata://netarkivet.dk/crawl/setup?x=1", IP: "130.225.27.140", Date: "20110922131213", ContentType: "text/xml"}, "resource", "2011-09-22T13:12:13Z"},
		{"HTTP record with a non-HTTP content type is a response", "http://example.com/x 1.2.3.4 20110922131213 no-type", "HTTP/1.0 404 Not Found\r\n\r\n",
			ARCFields{URL: "http://example.com/x", IP: "1.2.3.4", Date: "20110922131213", ContentType: "no-type"}, "response", "2011-09-22T13:12:13Z"},
		{"short date padded", "http://example.com/ 1.2.3.4 2014021605 text/html", httpBlock,
			ARCFields{URL: "http://example.com/", IP: "1.2.3.4", Date: "2014021605", ContentType: "text/html"}, "response", "2014-02-16T05:00:00Z"},
		{"long date cut", "http://example.com/ 1.2.3.4 201402160502219999 text/html", httpBlock,
			ARCFields{URL: "http://example.com/", IP: "1.2.3.4", Date: "201402160502219999", ContentType: "text/html"}, "response", "2014-02-16T05:02:21Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := fmt.Sprintf("%s %d", tt.line, len(tt.block))
			for kind, f := range both(t, arcFiledesc(76), line+"\n"+tt.block+"\n", arcRec("http://next/ 1.2.3.4 20140216050221 text/plain", "next")) {
				evs := readAll(t, kind, f.data)
				check(t, f, evs, []want{whole(0), whole(1), whole(2)})
				if len(evs) != 3 {
					continue
				}
				r := evs[1].rec
				if r.ARCFields != tt.fields || r.ARCLine != line || r.URI != tt.fields.URL || r.Type != tt.typ || r.Date != tt.date ||
					r.BlockLength != int64(len(tt.block)) || r.Version != "1" || len(r.Header) != 0 {
					t.Errorf("%s: %+v", kind, r)
				}
				if evs[1].body != tt.block {
					t.Errorf("%s: block %q", kind, evs[1].body)
				}
			}
		})
	}
}

// TestARCCRLFLines: record lines ended by CR LF (as in jwat's test files).
func TestARCCRLFLines(t *testing.T) {
	desc := "filedesc://crlf.arc 0.0.0.0 20140216050221 text/plain 78\r\n1 0 InternetArchive\r\nURL IP-address Archive-date Content-type Archive-length\r\n\r\n"
	line := "http://example.com/ 1.2.3.4 20140216050221 text/html 4"
	for kind, f := range both(t, desc, line+"\r\nbody\r\n") {
		evs := readAll(t, kind, f.data)
		check(t, f, evs, []want{whole(0), whole(1)})
		if len(evs) == 2 && (evs[1].rec.ARCLine != line || evs[1].rec.HeaderLength != int64(len(line)+2) || evs[1].body != "body") {
			t.Errorf("%s: %+v %q", kind, evs[1].rec, evs[1].body)
		}
	}
}

func TestARCDate(t *testing.T) {
	tests := map[string]string{
		"20140216050221":       "2014-02-16T05:02:21Z",
		"19961104142103":       "1996-11-04T14:21:03Z",
		"201402160502":         "2014-02-16T05:02:00Z",
		"20140216":             "2014-02-16T00:00:00Z",
		"201402":               "2014-02-01T00:00:00Z",
		"2014":                 "2014-01-01T00:00:00Z",
		"20140216050221123456": "2014-02-16T05:02:21Z",
		"-":                    "",
		"201":                  "",
	}
	for in, want := range tests {
		if got := arcDate(in); got != want {
			t.Errorf("arcDate(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestARCv2: ten-field record lines of Alexa's ARC version 2, from the
// filedesc line on.
func TestARCv2(t *testing.T) {
	body := "2 0 Alexa Internet\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
	desc := fmt.Sprintf("filedesc://IA-001102.arc 0.0.0.0 19960923142103 text/plain 200 - - 0 IA-001102.arc %d\n%s\n", len(body), body)
	line1 := "http://www.dryswamp.edu:80/index.html 127.10.100.2 19961104142103 text/html 200 fac069150613fe55599cc7fa88aa089d - 209 IA-001102.arc"
	line2 := "http://www.example.com/a b.html 127.10.100.3 19961104142104 text/html 404 - http://www.example.com/ 512 IA-001102.arc"
	for kind, f := range both(t, desc, arcRec(line1, httpBlock), arcRec(line2, "HTTP/1.0 404 Not Found\r\n\r\n")) {
		evs := readAll(t, kind, f.data)
		check(t, f, evs, []want{whole(0), whole(1), whole(2)})
		if len(evs) != 3 {
			continue
		}
		wantFields := []ARCFields{
			{URL: "filedesc://IA-001102.arc", IP: "0.0.0.0", Date: "19960923142103", ContentType: "text/plain", ResultCode: "200",
				Checksum: "-", Location: "-", Offset: "0", Filename: "IA-001102.arc"},
			{URL: "http://www.dryswamp.edu:80/index.html", IP: "127.10.100.2", Date: "19961104142103", ContentType: "text/html",
				ResultCode: "200", Checksum: "fac069150613fe55599cc7fa88aa089d", Location: "-", Offset: "209", Filename: "IA-001102.arc"},
			{URL: "http://www.example.com/a b.html", IP: "127.10.100.3", Date: "19961104142104", ContentType: "text/html",
				ResultCode: "404", Checksum: "-", Location: "http://www.example.com/", Offset: "512", Filename: "IA-001102.arc"},
		}
		for i, e := range evs {
			if e.rec.ARCFields != wantFields[i] || e.rec.Version != "2" {
				t.Errorf("%s record %d: version %q %+v", kind, i, e.rec.Version, e.rec.ARCFields)
			}
		}
		if evs[0].rec.Type != "filedesc" || evs[0].rec.Date != "1996-09-23T14:21:03Z" || evs[1].rec.Type != "response" {
			t.Errorf("%s: types %q %q", kind, evs[0].rec.Type, evs[1].rec.Type)
		}
	}
}

// TestARCv1XMLFiledesc: a "1 1" version block followed by XML metadata.
func TestARCv1XMLFiledesc(t *testing.T) {
	body := "1 1 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n<?xml version=\"1.0\"?>\n<arcmetadata>\n</arcmetadata>\n"
	desc := fmt.Sprintf("filedesc://IAH-20080430204825-00000-blackbook.arc 0.0.0.0 20080430204825 text/plain %d\n%s\n", len(body), body)
	for kind, f := range both(t, desc, arcRec("http://example.com/ 1.2.3.4 20080430204826 text/html", httpBlock)) {
		evs := readAll(t, kind, f.data)
		check(t, f, evs, []want{whole(0), whole(1)})
		if len(evs) == 2 && (evs[0].rec.Version != "1" || evs[0].body != body) {
			t.Errorf("%s: %+v", kind, evs[0].rec)
		}
	}
}

func TestARCDamage(t *testing.T) {
	desc := arcFiledesc(76)
	a := arcRec("http://a.example/ 1.2.3.4 20140216050221 text/html", httpBlock)
	b := arcRec("http://b.example/ 1.2.3.4 20140216050222 text/html", httpBlock)
	c := arcRec("http://c.example/ 1.2.3.4 20140216050223 text/html", httpBlock)
	truncated := "http://t.example/ 1.2.3.4 20140216050224 text/html 500\n" + httpBlock
	tests := []struct {
		name  string
		parts []string
		plain []want
		gz    []want
	}{
		{"truncated last record", []string{desc, a, truncated},
			[]want{whole(0), whole(1), damage(2, ErrTruncated).saying(fmt.Sprintf("%d of its 500 bytes", len(httpBlock)))},
			[]want{whole(0), whole(1), damage(2, ErrTruncated)}},
		{"garbage between records", []string{desc, a + "this is no record line\nnor is this one 12\n", b},
			[]want{whole(0), damage(1, ErrRecordEnd).saying("skipped up to the next record at offset"), whole(2)},
			[]want{whole(0), damage(1, ErrRecordEnd), whole(2)}},
		{"garbage member", []string{desc, a, "garbage\n", b},
			[]want{whole(0), damage(1, ErrRecordEnd), whole(3)},
			[]want{whole(0), whole(1), damage(2, ErrNoRecord), whole(3)}},
		{"length too long", []string{desc, "http://a.example/ 1.2.3.4 20140216050221 text/html 70\n" + httpBlock + "\n", b, c},
			// The block takes the start of b's record line.
			[]want{whole(0), damage(1, ErrRecordEnd), whole(3)},
			[]want{whole(0), damage(1, ErrTruncated), whole(2), whole(3)}},
		{"negative length", []string{desc, "http://a.example/ 1.2.3.4 20140216050221 text/html -1\n" + httpBlock + "\n", b},
			[]want{whole(0), damage(1, ErrBadHeader), whole(2)},
			[]want{whole(0), damage(1, ErrBadHeader), whole(2)}},
		{"record line cut short", []string{desc, a, "http://t.example/ 1.2.3.4 2014"},
			[]want{whole(0), damage(1, ErrRecordEnd)},
			[]want{whole(0), whole(1), damage(2, ErrNoRecord)}},
		{"junk before the filedesc", []string{"\x00\x00junk\n", desc, a},
			[]want{damage(0, ErrNoRecord), whole(1), whole(2)},
			[]want{damage(0, ErrNoRecord), whole(1), whole(2)}},
		{"line ends before the filedesc", []string{"\n" + desc, a},
			// The leading LF belongs to no record.
			nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for kind, f := range both(t, tt.parts...) {
				wants := tt.plain
				if kind == "gz" {
					wants = tt.gz
				}
				if wants == nil {
					f.off[0]++
					f.len[0]--
					if kind == "gz" {
						f = gzFile(t, tt.parts...)
					}
					wants = []want{whole(0), whole(1)}
				}
				check(t, f, readAll(t, kind, f.data), wants)
			}
		})
	}
}

func TestParseARCLine(t *testing.T) {
	tests := []struct {
		line    string
		version int
		url     string
		ok      bool
	}{
		{"http://a/ 1.2.3.4 20140216050221 text/html 5", 1, "http://a/", true},
		{"http://a/ 1.2.3.4 20140216050221 text/html 5 ", 1, "http://a/", true},
		{"http://a/ 1.2.3.4 20140216050221 text/html", 1, "", false}, // no length
		{"no-colon 1.2.3.4 20140216050221 text/html 5", 1, "", false},
		{"http://a/ 1.2.3.4 2014-02-16 text/html 5", 1, "", false},
		{"http://a/ 1.2.3.4 20140216050221 text/html five", 1, "", false},
		{"http://a/ 1.2.3.4 20140216050221 text/html -", 1, "", false},
		{"", 1, "", false},
		{"http://a/\x00 1.2.3.4 20140216050221 text/html 5", 1, "", false},
		// In a v1 file, a ten-field line is read from the right as five fields.
		{"http://a/ 1.2.3.4 20140216050221 text/html 200 - - 1234 x.arc 5", 1, "http://a/ 1.2.3.4 20140216050221 text/html 200 -", true},
		{"http://a/ 1.2.3.4 20140216050221 text/html 200 - - 1234 x.arc 5", 2, "http://a/", true},
		{"http://a/ 1.2.3.4 20140216050221 text/html 200 - - 1234 x.arc 5", 0, "http://a/", true},
		// A v1 line in a v2 file.
		{"http://a/ 1.2.3.4 20140216050221 text/html 5", 2, "http://a/", true},
		// A filedesc line of a v2 file, its offset field short.
		{"filedesc://x.arc 0.0.0.0 19960923142103 text/plain 200 - - 0 x.arc 122", 0, "filedesc://x.arc", true},
	}
	for _, tt := range tests {
		a, ok := parseARCLine([]byte(tt.line), tt.version)
		if ok != tt.ok || ok && a.URL != tt.url {
			t.Errorf("v%d %q: %q %v, want %q %v", tt.version, tt.line, a.URL, ok, tt.url, tt.ok)
		}
	}
}

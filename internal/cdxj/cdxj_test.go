package cdxj

import (
	"bytes"
	"strings"
	"testing"
)

// line makes a CDXJ line for a test index.
func line(t *testing.T, key, ts, url, mime, status, digest, file string, offset int) Line {
	t.Helper()
	s := key + " " + ts + ` {"url":"` + url + `","mime":"` + mime + `","status":"` + status + `","digest":"` + digest + `","offset":"` + itoa(offset) + `","length":"10","filename":"` + file + `"}`
	l, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// TestResolvePywb proves each of pywb's lookups on a small index: which
// line a revisit's payload comes from, or that none is found.
func TestResolvePywb(t *testing.T) {
	lines := []Line{
		line(t, "com,example)/a", "20200101000000", "http://example.com/a", "text/html", "200", "AAAA", "f1", 0),
		line(t, "com,example)/a", "20200102000000", "http://example.com/a", "text/html", "200", "AAAA", "f1", 100),
		line(t, "com,example)/a", "20200103000000", "http://example.com/a", "warc/revisit", "200", "sha1:aaaa", "f2", 0),
		line(t, "com,example)/b", "20200101000000", "http://example.com/b", "image/png", "200", "BBBB", "f1", 200),
		line(t, "com,example)/b", "20200105000000", "http://example.com/b", "image/png", "200", "BBBB", "f1", 300),
		line(t, "com,example)/b", "20200110000000", "http://example.com/b", "warc/revisit", "200", "CCCC", "f2", 100),
		line(t, "com,example)/c", "20200104000000", "http://example.com/c", "warc/revisit", "200", "BBBB", "f2", 200),
		line(t, "com,example)/d", "20200104000000", "http://example.com/d", "warc/revisit", "200", "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "f2", 300),
		line(t, "com,example)/e", "20200104000000", "http://example.com/e", "warc/revisit", "302", "DDDD", "f2", 400),
		line(t, "com,example)/f", "20200104000000", "http://example.com/f", "warc/revisit", "200", "EEEE", "f2", 500),
		line(t, "com,example)/g", "20200101000000", "http://example.com/g", "warc/revisit", "200", "BBBB", "f2", 600),
		line(t, "com,example)/g", "20200102000000", "http://example.com/g", "text/plain", "200", "BBBB", "f2", 700),
	}
	ix := NewIndex(lines)
	at := func(file string, off int64) *Line {
		for i := range lines {
			if lines[i].Filename == file && lines[i].Offset == off {
				return &lines[i]
			}
		}
		t.Fatalf("no line %s %d", file, off)
		return nil
	}
	tests := []struct {
		name            string
		rev             *Line
		refURI, refDate string
		want            *Line
		how             Lookup
		err             string
	}{
		{"same URL: the first earlier capture with the digest, labels ignored", at("f2", 0), "http://example.com/a", "2020-01-02T00:00:00Z", at("f1", 0), SameURL, ""},
		{"Refers-To: the closest capture with the digest", at("f2", 200), "http://example.com/b", "2020-01-04T00:00:00Z", at("f1", 300), RefersTo, ""},
		{"Refers-To date absent: closest to the revisit's own", at("f2", 200), "http://example.com/b", "", at("f1", 300), RefersTo, ""},
		{"Refers-To: no capture with the digest there", at("f2", 100), "http://example.com/b", "2020-01-01T00:00:00Z", nil, 0, "no non-revisit line with digest CCCC"},
		{"empty payload: the revisit itself", at("f2", 300), "http://example.com/x", "", at("f2", 300), OwnEmptyPayload, ""},
		{"redirect: no lookup", at("f2", 400), "", "", at("f2", 400), Redirect, ""},
		{"no Refers-To-Target-URI", at("f2", 500), "", "", nil, 0, "no WARC-Refers-To-Target-URI"},
		{"Refers-To URI no line has", at("f2", 500), "http://example.com/zzz", "2020-01-01T00:00:00Z", nil, 0, "no line has the URL"},
		{"a later capture of the same URL is no same-URL original", at("f2", 600), "http://example.com/b", "2020-01-01T00:00:00Z", at("f1", 200), RefersTo, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, err := ix.ResolvePywb(tt.rev, tt.refURI, tt.refDate)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || how != tt.how {
				t.Errorf("resolved to %s by %s, want %s by %s", got.Raw, how, tt.want.Raw, tt.how)
			}
		})
	}
	if _, _, err := ix.ResolvePywb(at("f1", 0), "", ""); err == nil {
		t.Error("a response resolved as a revisit")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     Line
		err      bool
	}{
		{"warcio strings", `org,iana)/ 20140127171238 {"url":"http://iana.org","status":"302","digest":"3I42","length":"343","offset":"1858","filename":"dupes.warc.gz"}`,
			Line{URLKey: "org,iana)/", Timestamp: "20140127171238", URL: "http://iana.org", Status: "302", Digest: "3I42", Length: 343, Offset: 1858, Filename: "dupes.warc.gz"}, false},
		{"numbers", `a)/ 2014 {"url":"u","offset":5,"length":7}`, Line{URLKey: "a)/", Timestamp: "2014", URL: "u", Offset: 5, Length: 7}, false},
		{"no offset", `a)/ 2014 {"url":"u"}`, Line{URLKey: "a)/", Timestamp: "2014", URL: "u", Offset: -1, Length: -1}, false},
		{"CDX, not CDXJ", `a)/ 2014 u text/html 200`, Line{}, true},
		{"bad JSON", `a)/ 2014 {"url":`, Line{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err == nil {
				tt.want.Raw = tt.in
				if got != tt.want {
					t.Errorf("got %+v\nwant %+v", got, tt.want)
				}
			}
		})
	}
}

func TestReadSortWrite(t *testing.T) {
	in := "!meta\nb)/ 2 {\"url\":\"b\"}\n\na)/ 3 {\"url\":\"a\"}\na)/ 1 {\"url\":\"a\"}\n"
	lines, err := Read(strings.NewReader(in), "x")
	if err != nil {
		t.Fatal(err)
	}
	Sort(lines)
	var out bytes.Buffer
	if err := Write(&out, lines); err != nil {
		t.Fatal(err)
	}
	if want := "a)/ 1 {\"url\":\"a\"}\na)/ 3 {\"url\":\"a\"}\nb)/ 2 {\"url\":\"b\"}\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if _, err := Read(strings.NewReader("a)/ 1 {\"url\":\"a\"}\nbroken\n"), "idx"); err == nil || !strings.Contains(err.Error(), "idx: line 2:") {
		t.Errorf("error %v, want one naming idx line 2", err)
	}
}

func TestWithFilename(t *testing.T) {
	l, err := Parse(`a)/ 1 {"url":"http://a/?x=<1>&y","offset":"5","filename":"/tmp/x/a.warc.gz"}`)
	if err != nil {
		t.Fatal(err)
	}
	l, err = l.WithFilename("dir__a.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	want := `a)/ 1 {"filename":"dir__a.warc.gz","offset":"5","url":"http://a/?x=<1>&y"}`
	if l.Raw != want || l.Filename != "dir__a.warc.gz" {
		t.Errorf("got %q, want %q", l.Raw, want)
	}
}

func TestTimestamp(t *testing.T) {
	for in, want := range map[string]string{
		"2024-06-01T08:00:00Z":        "20240601080000",
		"2024-06-01T08:00:00.123456Z": "20240601080000",
		"20240601080000":              "20240601080000",
		"":                            "",
	} {
		if got := Timestamp(in); got != want {
			t.Errorf("Timestamp(%q) = %q, want %q", in, got, want)
		}
	}
	if d := distance("2024", "20240101000001"); d.Seconds() != 1 {
		t.Errorf("a 4-digit timestamp is not its year's first second: %v", d)
	}
}

//go:build browser

package replay

import (
	"path/filepath"
	"testing"

	"warcdedup/internal/replaytest"
	"warcdedup/internal/warctest"
)

// TestReplayHarness pins down, on three hand-written records, what the
// harness measures in ReplayWeb.page: a revisit is served with its
// original's status and headers (so a 203 text/plain capture comes back
// 200 text/html), a revisit whose original is in another WARC file does
// not replay from that file alone, and does from a WACZ holding both.
func TestReplayHarness(t *testing.T) {
	dir := t.TempDir()
	const digest = "WARC-Payload-Digest: sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN"
	revisit := func(uri, date, head string) string {
		return warctest.Record("revisit", uri, date, head,
			"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
			"WARC-Refers-To-Target-URI: http://example.com/", "WARC-Refers-To-Date: 2020-01-01T00:00:00Z",
			digest, "WARC-Truncated: length")
	}
	warctest.WriteFile(t, dir, "a.warc.gz", warctest.Gzip(
		warctest.Record("response", "http://example.com/", "2020-01-01T00:00:00Z",
			"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\nhello world", digest),
		revisit("http://example.com/same-file", "2020-01-03T00:00:00Z", "HTTP/1.1 203 Y\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\n"),
	))
	warctest.WriteFile(t, dir, "b.warc.gz", warctest.Gzip(
		revisit("http://example.com/other-file", "2020-01-02T00:00:00Z", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\n"),
	))
	archives := []replaytest.Archive{{Name: "a.warc.gz", Path: filepath.Join(dir, "a.warc.gz")}, {Name: "b.warc.gz", Path: filepath.Join(dir, "b.warc.gz")}}
	idx, err := replaytest.Index(replaytest.WarcioCLI(t), archives)
	if err != nil {
		t.Fatal(err)
	}
	if err := replaytest.WriteWACZ(filepath.Join(dir, "ab.wacz"), archives, idx, nil); err != nil {
		t.Fatal(err)
	}
	b := replaytest.Start(t, dir)
	caps := []replaytest.Capture{
		{Timestamp: "20200103000000", URL: "http://example.com/same-file"},
		{Timestamp: "20200102000000", URL: "http://example.com/other-file"},
	}
	type want struct {
		status int
		typ    string
		body   string
	}
	tests := []struct {
		source string
		want   []want
	}{
		{"a.warc.gz", []want{{200, "text/html", "hello world"}, {404, "", ""}}},
		{"b.warc.gz", []want{{404, "", ""}, {404, "", ""}}},
		{"ab.wacz", []want{{200, "text/html", "hello world"}, {200, "text/html", "hello world"}}},
	}
	for _, tt := range tests {
		c, err := b.Load(b.SourceURL(tt.source))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := c.Fetch(caps)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range tt.want {
			r := rs[i]
			if r.Status != w.status || (w.status == 200 && (r.Header.Get("Content-Type") != w.typ || string(r.Body) != w.body)) {
				t.Errorf("%s: %s: %d %q %q, want %d %q %q", tt.source, caps[i].URL, r.Status, r.Header.Get("Content-Type"), r.Body, w.status, w.typ, w.body)
			}
		}
		t.Logf("%s loaded in %v", tt.source, c.LoadTime)
	}
	t.Logf("requests refused by the proxy: %q", b.Refused())
}

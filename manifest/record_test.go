package manifest_test

import (
	"crypto/sha1"
	"errors"
	"io"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/record"
)

// TestLineNamesRecord proves the one check that a line still names its
// record, each way it can fail, with the reason every stage wraps.
func TestLineNamesRecord(t *testing.T) {
	const uri, date, payload = "http://example.com/a", "2024-01-01T00:00:00Z", "the payload"
	response := warctest.Response(uri, date, payload)
	sum := sha1.Sum([]byte(payload))
	line := manifest.Line{File: "a.warc", Offset: 0, Length: int64(len(response)), URI: uri, Date: date,
		Digest: digest.SHA1.Format(sum[:]), Fields: 6}
	tests := []struct {
		name   string
		data   string
		change func(l *manifest.Line)
		expect manifest.Expect
		alone  bool
		want   error // nil: the line names the record
	}{
		{"the response the line names", response, nil, manifest.Expect{}, true, nil},
		{"line ends before the record", "\r\n" + response, func(l *manifest.Line) { l.Length += 2 }, manifest.Expect{}, true, manifest.ErrNotARecord},
		{"no record at the offset", "not a record at all", nil, manifest.Expect{}, true, manifest.ErrNotARecord},
		{"nothing at the offset", "", nil, manifest.Expect{}, true, manifest.ErrNotARecord},
		{"another URI", response, func(l *manifest.Line) { l.URI += "?x" }, manifest.Expect{}, true, manifest.ErrFieldsChanged},
		{"another URI, adopted", response, func(l *manifest.Line) { l.URI += "?x" }, manifest.Expect{Adopt: true}, true, nil},
		{"a request", warctest.Record("request", uri, date, "GET / HTTP/1.1\r\n\r\n"), nil, manifest.Expect{}, true, manifest.ErrNotResponse},
		{"a revisit", warctest.Record("revisit", uri, date, warctest.HTTP(200, "")), nil, manifest.Expect{}, true, manifest.ErrNotResponse},
		{"a truncated response", warctest.Record("response", uri, date, warctest.HTTP(200, payload), "WARC-Truncated: length"), nil, manifest.Expect{}, true, manifest.ErrNotResponse},
		{"a segment", warctest.Record("response", uri, date, warctest.HTTP(200, payload), "WARC-Segment-Number: 1"), nil, manifest.Expect{}, true, manifest.ErrNotResponse},
		{"no HTTP head", warctest.Record("response", uri, date, "no head"), nil, manifest.Expect{}, true, manifest.ErrNotResponse},
		{"a byte short", response, func(l *manifest.Line) { l.Length-- }, manifest.Expect{}, true, manifest.ErrNotARecord},
		{"a record after it", response + response, nil, manifest.Expect{}, true, manifest.ErrNotARecord},
		{"a record after it, not alone", response + response, nil, manifest.Expect{}, false, nil},
		{"another digest", response, func(l *manifest.Line) { l.Digest = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, manifest.Expect{}, true, manifest.ErrDigestMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := line
			if tt.change != nil {
				tt.change(&l)
			}
			err := readNamed(&l, tt.data, tt.expect, tt.alone)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if tt.expect.Adopt && err == nil && l.URI != uri {
				t.Errorf("the line kept its URI %q, want the record's", l.URI)
			}
		})
	}
}

// readNamed reads the record data holds as a stage does, checking that l
// names it.
func readNamed(l *manifest.Line, data string, e manifest.Expect, alone bool) error {
	rr, err := record.NewReader(strings.NewReader(data), l.File)
	if err != nil {
		return err
	}
	rec, _, err := l.ReadRecord(rr, e)
	if err != nil {
		return err
	}
	h := l.Algorithm().New()
	if _, err := io.Copy(h, rr); err != nil {
		return err
	}
	if err := l.CheckEnd(rr, rec, alone); err != nil {
		return err
	}
	return l.CheckDigest(h.Sum(nil))
}

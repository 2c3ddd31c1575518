package warcsum

import (
	"testing"

	"warcdedup/manifest"
)

// TestNoLineAStageRefuses proves that warcsum lists nothing that a later
// stage refuses as malformed: the manifest spells "no reference" "-" and
// "any date" "*", so a response whose URI is "-" or whose date is "-" or
// "*" could not be named as an original (warccollres -p wrote "copy 2
// with reference ... -", which warcrefs refused, stopping the whole run),
// and a revisit whose WARC-Refers-To-Target-URI or -Date is "-" gave a
// revisit line every stage refused. Such a response is skipped (it stays
// as it is); such a revisit names its own URI, or any date, as one that
// names none does, which keeps more originals, never fewer.
func TestNoLineAStageRefuses(t *testing.T) {
	const d = "2024-01-02T03:04:05Z"
	tests := []struct {
		name   string
		record string
		listed bool
	}{
		{"response dated -", warcRecord("response", "http://a/", "-", httpResponse(200, "x")), false},
		{"response dated *", warcRecord("response", "http://a/", "*", httpResponse(200, "x")), false},
		{"response at URI -", warcRecord("response", "-", d, httpResponse(200, "x")), false},
		{"revisit referring to date -", warcRecord("revisit", "http://b/", d, httpResponse(200, ""),
			"WARC-Refers-To-Target-URI: http://a/", "WARC-Refers-To-Date: -"), true},
		{"revisit referring to URI -", warcRecord("revisit", "http://b/", d, httpResponse(200, ""),
			"WARC-Refers-To-Target-URI: -", "WARC-Refers-To-Date: "+d), true},
		{"an ordinary response", warcRecord("response", "http://a/", d, httpResponse(200, "x")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, _ := sum(t, Options{}, tt.record)
			if (len(lines) == 1) != tt.listed {
				t.Fatalf("%d lines, want listed %v", len(lines), tt.listed)
			}
			for _, l := range lines {
				if _, err := manifest.Parse([]byte(l.String())); err != nil {
					t.Errorf("line %q: %v", l.String(), err)
				}
				if l.IsRevisit() {
					continue
				}
				// A later capture of it, numbered: its reference must parse.
				dup := manifest.Line{File: "b.warc", Offset: 0, Length: 1, URI: "http://c/", Date: d, Digest: l.Digest,
					Class: 0, Copy: 2, RefURI: l.URI, RefDate: l.Date, Fields: 10}
				if _, err := manifest.Parse([]byte(dup.String())); err != nil {
					t.Errorf("a duplicate of %q: %v", l.String(), err)
				}
			}
		})
	}
}

package convmap

import (
	"bytes"
	"strings"
	"testing"
)

// TestRoundTrip: a map written with AppendFile and AppendRecord reads back
// the same, names with spaces and percent signs included, and Lookup
// takes a plain ARC line's length without its line feed.
func TestRoundTrip(t *testing.T) {
	f := File{ARC: "a dir/x%1.arc", WARC: "a dir/x%1.warc.gz", ARCSize: 100, ARCSHA256: strings.Repeat("a", 64), WARCSize: 90,
		WARCSHA256: strings.Repeat("b", 64), FiledescURI: "filedesc://x 1.arc", FiledescDate: "2024-01-02T03:04:05Z"}
	recs := []Record{
		{OldOffset: 0, OldLength: 40, NewOffset: 300, NewLength: 200, Type: "metadata", MIME: "text/plain"},
		{OldOffset: 40, OldLength: 60, NewOffset: 500, NewLength: 100, Type: "response", Status: "200", MIME: "text/html", Digest: "sha1:ABC"},
	}
	b := AppendFile(nil, &f)
	for i := range recs {
		b = AppendRecord(b, &recs[i])
	}
	m, err := Load(bytes.NewReader(b), "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Resolve("/data/" + f.ARC)
	if err != nil || got == nil || got.File != f {
		t.Fatalf("%+v %v", got, err)
	}
	r, err := m.Lookup(got, 40, 59)
	if err != nil || r != recs[1] {
		t.Errorf("lookup: %+v %v", r, err)
	}
	if _, err := m.Lookup(got, 41, -1); err == nil {
		t.Error("an offset inside a record was found")
	}
	if _, err := m.Lookup(got, 40, 30); err == nil {
		t.Error("a line of another length was taken")
	}
	var unhit []Record
	m.Unhit(got, func(r Record) { unhit = append(unhit, r) })
	if len(unhit) != 1 || unhit[0] != recs[0] {
		t.Errorf("unhit: %+v", unhit)
	}
	// Out of order records are refused.
	bad := AppendRecord(AppendRecord(AppendFile(nil, &f), &recs[1]), &recs[0])
	if _, err := Load(bytes.NewReader(bad), "bad"); err == nil {
		t.Error("records out of order were read")
	}
}

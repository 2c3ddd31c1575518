package reindex

import (
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/scripts/gen"
)

// TestFiles reads responses of a generated collection as a restored
// record is re-indexed: the mime of the HTTP Content-Type, the
// WARC-Payload-Digest.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Write(dir, gen.Config{Files: 2, Records: 20, Seed: 3, MeanPayload: 500,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Files{Roots: []string{filepath.Join(dir, "missing"), dir}}
	for _, l := range res.Expected[:6] {
		mime, digest, err := s.Fields(l.File, l.Offset)
		if err != nil {
			t.Fatalf("%s %d: %v", l.File, l.Offset, err)
		}
		if mime == "" || strings.ContainsAny(mime, "; ") || digest != l.Digest {
			t.Errorf("%s %d: mime %q digest %q; want a bare mime and %s", l.File, l.Offset, mime, digest, l.Digest)
		}
	}
	if _, _, err := s.Fields(res.Expected[0].File, res.Expected[0].Offset+1); err == nil {
		t.Error("no error for an offset that starts no record")
	}
	if _, _, err := s.Fields("nothere.warc", 0); err == nil {
		t.Error("no error for a missing file")
	}
}

func TestContentType(t *testing.T) {
	cases := map[string]string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n": "text/html",
		"HTTP/1.1 200 OK\r\ncontent-type:image/png\r\n\r\n":                 "image/png",
		"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n":                              "",
	}
	for head, want := range cases {
		if got := contentType([]byte(head)); got != want {
			t.Errorf("%q: %q, want %q", head, got, want)
		}
	}
}

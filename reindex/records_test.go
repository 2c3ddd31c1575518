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
	// The file kept open and the reader reused: every record, in file
	// order and back again, then after a failed read.
	for pass := range 2 {
		for i := range res.Expected {
			l := res.Expected[i]
			if pass == 1 {
				l = res.Expected[len(res.Expected)-1-i]
			}
			if l.Digest == "" || l.IsRevisit() {
				continue
			}
			_, digest, err := s.Fields(l.File, l.Offset)
			if err != nil || digest != l.Digest {
				t.Fatalf("pass %d: %s %d: %q %v, want %s", pass, l.File, l.Offset, digest, err, l.Digest)
			}
		}
	}
	if _, _, err := s.Fields(res.Expected[0].File, res.Expected[0].Offset+1); err == nil {
		t.Error("no error for an offset that starts no record")
	}
	if _, _, err := s.Fields("nothere.warc", 0); err == nil {
		t.Error("no error for a missing file")
	}
	if l := res.Expected[2]; true {
		if _, digest, err := s.Fields(l.File, l.Offset); err != nil || digest != l.Digest {
			t.Errorf("after a missing file: %s %d: %q %v", l.File, l.Offset, digest, err)
		}
	}
	if err := s.Close(); err != nil || s.f != nil {
		t.Errorf("close: %v", err)
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

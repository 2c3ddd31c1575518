package show

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRevisitsInLogIncompleteBeforeIsFollowed proves that a replacement
// of a file whose entries are missing, in a run before the one that wrote
// a revisit there, does not make that revisit unfollowable: its offset is
// one in the file as that later run left it, and no replacement since
// moved it.
func TestRevisitsInLogIncompleteBeforeIsFollowed(t *testing.T) {
	const (
		d     = "sha1:QZ6EEDMS73VMYKGSUBNBGBLUO3L6IIPS"
		other = "sha1:ND7VCG2R6EATIKZTELRXI3DJEXLHEO2Z"
		uri   = "http://example.com/logo.png"
		date  = "2024-06-01T00:00:03Z"
		sum   = "blake3:0000000000000000000000000000000000000000000000000000000000000000"
	)
	log := "# run 2025-12-01T00:00:00Z\n" +
		"# file b.warc 9000 " + sum + " 8000 " + sum + "\n" +
		"b.warc 100 100 100 50 revisit " + other + " http://y/ " + date + "\n" +
		"# run 2026-01-01T00:00:00Z\n" +
		"b.warc 2000 600 2000 150 revisit " + d + " " + uri + " " + date + "\n"
	name := filepath.Join(t.TempDir(), "rewrite.log")
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	vs, _, err := revisitsInLog(name, uri, date, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Offset != 2000 || vs[0].err != nil {
		for _, v := range vs {
			t.Logf("found %+v", *v)
		}
		t.Fatalf("want the revisit at b.warc 2000, followable")
	}
}

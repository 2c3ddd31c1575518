package dedup

import "testing"

// TestKindOf names files a run does not read and the kind the report
// gives each: a stopped run's temporary file is named as what it is, not
// as a WARC file in another compression (".tmp-a.warc.gz-123" holds
// ".warc.") or as a file of the archive.
func TestKindOf(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"coll/.tmp-a.warc.gz-1234567", "temporary file of a stopped run"},
		{"coll/.tmp-b.warc-9", "temporary file of a stopped run"},
		{"coll/.tmp-a.warc.gz-", "WARC or ARC file in another compression"},
		{"coll/.tmp-a.warc.gz-12x", "WARC or ARC file in another compression"},
		{"coll/.tmp-notes", "other file"},
		{"coll/a.warc.gz.open", "file still being written"},
		{"coll/index.cdxj", "index"},
		{"coll/a.warc.zst", "WARC or ARC file in another compression"},
		{"coll/readme.txt", "other file"},
	} {
		t.Run(c.path, func(t *testing.T) {
			if k, _ := kindOf(c.path); k.kind != c.want {
				t.Errorf("kindOf(%q) = %q, want %q", c.path, k.kind, c.want)
			}
		})
	}
}

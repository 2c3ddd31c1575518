package inplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
)

// TestVerifyCoversSource proves that a new version passes its check only
// when its segments take every byte of the source once, in order: bytes
// equal to the source's but skipping some of it, or stopping short of
// its end, are refused (a rewrite log, and the listing derived from it,
// would otherwise say nothing of the bytes lost).
func TestVerifyCoversSource(t *testing.T) {
	const source = "AAAABBBBCCCC"
	cases := []struct {
		name     string
		segments []segment
		content  string
		err      string // "" if it passes
	}{
		{"every byte copied once", []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 8, srcOff: 4}}, source, ""},
		{"a stretch of the source skipped", []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 4, srcOff: 8}}, "AAAACCCC", "takes the source from 8, not from 4"},
		{"a stretch of the source copied twice", []segment{{newOff: 0, length: 8, srcOff: 0}, {newOff: 8, length: 8, srcOff: 4}}, "AAAABBBBBBBBCCCC", "takes the source from 4, not from 8"},
		{"the end of the source left out", []segment{{newOff: 0, length: 8, srcOff: 0}}, "AAAABBBB", "cover 8 bytes of the source's 12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, tmp := sourceAndNew(t, []byte(source), []byte(tc.content))
			for _, kind := range sectionKinds {
				v := &Version{Src: f, tmp: tmp, Size: int64(len(source)), segments: tc.segments}
				_, _, err := v.verifyWith(func(int, int64, int64, *os.File) error { return nil }, kind.open)
				switch {
				case tc.err == "" && err != nil:
					t.Fatalf("%s: refused: %v", kind.name, err)
				case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
					t.Fatalf("%s: error %v, want one saying %q", kind.name, err, tc.err)
				}
			}
		})
	}
}

// sourceAndNew writes source as a file and content as a new version being
// written (an atomicfile not yet committed, as a Version's tmp is), both
// in a directory of the test's, and returns them open; they are closed,
// and the new version aborted, when the test ends.
func sourceAndNew(t *testing.T, source, content []byte) (*os.File, *atomicfile.File) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "a.warc")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tmp, err := atomicfile.Create(filepath.Join(dir, "b.warc"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tmp.Abort)
	if _, err := tmp.Write(content); err != nil {
		t.Fatal(err)
	}
	return f, tmp
}

package spool

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestSpoolTemporaryFileNotMade proves that a spool whose temporary file
// cannot be made (TMPDIR gone, no inode left) fails every write after it,
// a small one that would fit in memory included, and WriteTo, instead of
// replaying what was written before as if it were all (warcsum's gzip
// member cut short was committed in a listing no stage can read); and
// that Reset gives the next unit a working spool.
func TestSpoolTemporaryFileNotMade(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		name   string
		writes []int // sizes written; the limit is 100
	}{
		{"the write past the limit", []int{60, 60}},
		{"then a small write that fits in memory", []int{60, 60, 10}},
		{"the first write past the limit", []int{150}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", filepath.Join(tmp, "gone"))
			s := New(100)
			var failed bool
			for i, n := range tc.writes {
				_, err := s.Write(bytes.Repeat([]byte{'a' + byte(i)}, n))
				failed = failed || err != nil
				if failed && err == nil {
					t.Errorf("write %d of %d bytes taken after a failed one", i, n)
				}
			}
			if !failed {
				t.Fatal("no write failed")
			}
			var out bytes.Buffer
			if n, err := s.WriteTo(&out); err == nil {
				t.Errorf("WriteTo replayed %d bytes without an error", n)
			}
			t.Setenv("TMPDIR", tmp)
			if err := s.Reset(); err != nil {
				t.Fatal(err)
			}
			s.Write(bytes.Repeat([]byte{'z'}, 150))
			out.Reset()
			if _, err := s.WriteTo(&out); err != nil || out.Len() != 150 {
				t.Errorf("after Reset: %d bytes, %v", out.Len(), err)
			}
			s.Close()
		})
	}
}

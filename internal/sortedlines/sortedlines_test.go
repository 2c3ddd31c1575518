package sortedlines

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFind proves the merge join: each line found once, in file and
// offset order (numeric offsets, byte-ordered names), lines before it
// passed over, short lines skipped, nothing found past the end.
func TestFind(t *testing.T) {
	name := filepath.Join(t.TempDir(), "lines")
	os.WriteFile(name, []byte("a.warc 9 x\na.warc 10 y\nshort\nb.warc 2 z\n"), 0o644)
	s, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		file   string
		offset int64
		want   []string
	}{
		{"a.warc", 1, nil},
		{"a.warc", 10, []string{"a.warc", "10", "y"}},
		{"a.warc", 10, nil}, // taken already
		{"b.warc", 2, []string{"b.warc", "2", "z"}},
		{"c.warc", 0, nil},
	} {
		if got := s.Find(tt.file, tt.offset); !slices.Equal(got, tt.want) {
			t.Errorf("Find(%s, %d) = %q, want %q", tt.file, tt.offset, got, tt.want)
		}
	}
	if !s.Done || s.Err() != nil {
		t.Errorf("done %v, err %v", s.Done, s.Err())
	}
}

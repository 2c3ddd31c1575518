package show

import (
	"os"
	"path/filepath"
	"testing"
)

// TestParseTarget proves how FILE[:OFFSET] is read: a file named with a
// colon is a file, digits after the last colon are an offset, and
// anything else there is refused.
func TestParseTarget(t *testing.T) {
	dir := t.TempDir()
	colon := filepath.Join(dir, "crawl:2024.warc.gz")
	if err := os.WriteFile(colon, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg, file string
		offset    int64
		bad       bool
	}{
		{"a.warc.gz", "a.warc.gz", -1, false},
		{"a.warc.gz:0", "a.warc.gz", 0, false},
		{"dir/a.warc.gz:48213", "dir/a.warc.gz", 48213, false},
		{colon, colon, -1, false},
		{colon + ":12", colon, 12, false},
		{"a.warc.gz:x", "", 0, true},
		{"a.warc.gz:-5", "", 0, true},
	}
	for _, tt := range tests {
		file, off, err := ParseTarget(tt.arg)
		if (err != nil) != tt.bad || (!tt.bad && (file != tt.file || off != tt.offset)) {
			t.Errorf("%q: %q %d %v", tt.arg, file, off, err)
		}
	}
}

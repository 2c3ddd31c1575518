package split

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/manifest"
)

// TestStalePartsLeaveDirectories proves that a directory named like a
// numbered part (a collection crawl-2012 beside the prefix crawl) stops no
// split: a part is a file, and no earlier split wrote the directory. It
// stopped warcsumsplit -c, -s, --hash-ranges and --hosts alike, exit 2.
func TestStalePartsLeaveDirectories(t *testing.T) {
	input := text(sorted(randomLines(100, digest.SHA1), manifest.ByDigest))
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "crawl-2012"), 0o755); err != nil {
		t.Fatal(err)
	}
	parts := NewParts(filepath.Join(dir, "crawl"))
	defer parts.Abort()
	if err := BySize(manifest.NewReader(strings.NewReader(input), "in"), parts, int64(len(input))); err != nil {
		t.Fatal(err)
	}
	if err := parts.Stale(); err != nil {
		t.Errorf("Stale: %v, want nil: a directory is no part", err)
	}
}

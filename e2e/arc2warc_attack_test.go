package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArc2warcCheckOfNothingFails proves that arc2warc --check on a
// directory with no ARC file in it (one already converted in place, or
// the wrong one) does not exit 0: it did ("0 checked, 0 OK"), so
// "arc2warc --check -o warcs arcs && rm -r arcs" removed files no check
// had read.
func TestArc2warcCheckOfNothingFails(t *testing.T) {
	work := t.TempDir()
	warc := "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: urn:x\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nContent-Length: 1\r\n\r\nx\r\n\r\n"
	if err := os.MkdirAll(filepath.Join(work, "arcs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "arcs", "x.warc"), []byte(warc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"arc2warc --check -o warcs arcs", "arc2warc --check -r arcs"} {
		_, stderr, code := sh(t, work, cmd)
		if code != 2 || !strings.Contains(stderr, "no ARC file") {
			t.Errorf("%s: exit %d, want 2 naming no ARC file\n%s", cmd, code, stderr)
		}
	}
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArc2warcBadWARCVersionIsUsage proves a WARC version arc2warc does
// not write is a usage error (exit 2) before any file is touched: every
// file failed, one by one, with exit 1, as if the files were at fault.
func TestArc2warcBadWARCVersionIsUsage(t *testing.T) {
	body := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
	desc := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	arc := fmt.Sprintf("filedesc://x.arc 0.0.0.0 20240102030405 text/plain %d\n%s\n", len(desc), desc) +
		fmt.Sprintf("http://example.com/ 93.184.216.34 20240102030406 text/html %d\n%s\n", len(body), body)
	for _, cmd := range []string{
		"arc2warc --warc-version 2.0 -o warcs arcs",
		"arc2warc --warc-version 1.2 --in-place --work-dir work arcs",
	} {
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "arcs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "arcs", "x.arc"), []byte(arc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := sh(t, dir, cmd)
			if code != 2 || !strings.Contains(stderr, "--warc-version") {
				t.Errorf("exit %d, want 2 naming --warc-version\n%s", code, stderr)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, "arcs"))
			if len(entries) != 1 {
				t.Errorf("arcs holds %d files after the refusal, want the ARC alone", len(entries))
			}
			if _, err := os.Stat(filepath.Join(dir, "warcs")); err == nil {
				t.Error("warcs was made")
			}
		})
	}
}

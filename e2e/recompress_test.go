package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wholeFileWARC is a WARC of n responses compressed as one gzip member, as
// `gzip x.warc` leaves it.
func wholeFileWARC(n int) (plain string, gz []byte) {
	var b strings.Builder
	for i := range n {
		// Incompressible payloads, so that a revisit is smaller than its
		// record; three classes of equal ones.
		body := "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + noise(uint32(i%3), 2000)
		fmt.Fprintf(&b, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/%d\r\nWARC-Date: 2024-01-02T03:04:%02dZ\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-%012d>\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n",
			i, i%60, i, len(body), body)
	}
	return b.String(), gzipWhole(b.String())
}

// noise is n pseudo-random bytes from seed.
func noise(seed uint32, n int) string {
	b := make([]byte, n)
	x := seed*2654435761 + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return string(b)
}

func digestOf(t *testing.T, name string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestWarcrecompress runs the command as users do: a whole-file gzip WARC,
// which warcsum refuses, becomes one that it lists record by record;
// damaged and hard-linked files are left untouched with exit status 1.
func TestWarcrecompress(t *testing.T) {
	plain, whole := wholeFileWARC(12)
	clipped := whole[:len(whole)-20]
	tests := []struct {
		name   string
		files  map[string][]byte
		script string
		status int
		stdout []string
		stderr []string
		same   []string // files that must be byte for byte as written
	}{
		{"whole-file gzip becomes deduplicable", map[string][]byte{"w.warc.gz": whole},
			"warcsum -q c > /dev/null; echo before=$?; warcrecompress c && warcsum c | wc -l", 0,
			[]string{"before=1", "12"}, []string{"files: 1 recompressed", "records: 12"}, nil},
		{"the whole dedup job then runs", map[string][]byte{"w.warc.gz": whole},
			"warcrecompress -q c && warcdedup run -q --work-dir keep c 2> /dev/null && warcsum c | awk '$7 == -1' | wc -l", 0,
			[]string{"9"}, nil, nil},
		{"damaged file untouched", map[string][]byte{"w.warc.gz": clipped, "ok.warc.gz": whole},
			"warcrecompress c", 1, nil, []string{"w.warc.gz: left untouched: damaged", "1 recompressed", "1 refused"}, []string{"w.warc.gz"}},
		{"hard link untouched", map[string][]byte{"w.warc.gz": whole},
			"ln c/w.warc.gz linked.warc.gz && warcrecompress c", 1, nil, []string{"more than one hard link"}, []string{"w.warc.gz"}},
		{"plain file gzipped with -o", map[string][]byte{"p.warc": []byte(plain)},
			"warcrecompress c; warcrecompress -o out c && warcsum out | wc -l", 0,
			[]string{"12"}, []string{"1 plain", "files: 1 recompressed"}, []string{"p.warc"}},
		{"dry run writes nothing", map[string][]byte{"w.warc.gz": whole},
			"warcrecompress -n c", 0, nil, []string{"1 to recompress (dry run)"}, []string{"w.warc.gz"}},
		{"--force without -o", map[string][]byte{"w.warc.gz": whole},
			"warcrecompress --force c", 2, nil, []string{"--force only applies to -o"}, []string{"w.warc.gz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			os.MkdirAll(filepath.Join(work, "c"), 0o755)
			digests := map[string][32]byte{}
			for name, data := range tt.files {
				p := filepath.Join(work, "c", name)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				digests[name] = digestOf(t, p)
			}
			script := tt.script
			stdout, stderr, code := sh(t, work, script)
			if code != tt.status {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.status, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr)
				}
			}
			for _, name := range tt.same {
				if digestOf(t, filepath.Join(work, "c", name)) != digests[name] {
					t.Errorf("%s was changed", name)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(work, "c", ".tmp-*")); len(m) > 0 {
				t.Errorf("temporary files left: %v", m)
			}
		})
	}
}

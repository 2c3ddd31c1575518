package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// smallARC is an ARC v1 file: a filedesc, a dns: record and n HTTP records.
func smallARC(n int) string {
	desc := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	dns := "20240102030405\nexample.com.\t300\tIN\tA\t93.184.216.34\n"
	var b strings.Builder
	fmt.Fprintf(&b, "filedesc://small.arc 0.0.0.0 20240102030405 text/plain %d\n%s\n", len(desc), desc)
	fmt.Fprintf(&b, "dns:example.com 10.0.0.1 20240102030405 text/dns %d\n%s\n", len(dns), dns)
	for i := range n {
		body := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npage %d", i)
		fmt.Fprintf(&b, "http://example.com/%d 93.184.216.34 202401020304%02d text/plain %d\n%s\n", i, i%60, len(body), body)
	}
	return b.String()
}

func gzipWhole(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

// keepMembers rewrites a .warc.gz with only its first n gzip members.
func keepMembers(t *testing.T, name string, n int) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzmulti.NewReader(bytes.NewReader(data), name)
	if err != nil {
		t.Fatal(err)
	}
	end := int64(0)
	for i := 0; i < n; i++ {
		if _, err := z.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, z); err != nil {
			t.Fatal(err)
		}
		m := z.Member()
		end = m.Offset + m.Length
	}
	if err := os.WriteFile(name, data[:end], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestArc2warcCheck runs arc2warc and scripts/arc2warc-check.sh as users do
// on each way a conversion can be complete or not. Each failing case is one
// the old command or script reported as success.
func TestArc2warcCheck(t *testing.T) {
	arc := smallARC(20)     // 22 records
	cut := arc[:len(arc)-4] // the last record truncated
	junk := strings.Replace(arc, "http://example.com/5 ", "junk\nhttp://example.com/5 ", 1)
	warc := "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: urn:x\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nContent-Length: 1\r\n\r\nx\r\n\r\n"
	tests := []struct {
		name  string
		files map[string][]byte // the ARC directory
		// convert, if set, runs first; then keep, if above 0, cuts
		// warcs/small.warc.gz to its first keep gzip members; then script.
		// Both run in the work directory, with arcs/ and the script at
		// ./check.sh.
		convert  string
		keep     int
		script   string
		status   int
		stdout   []string // each must appear
		stderr   []string
		notExist string // a file that must not have been written
	}{
		{"whole-file gzip ARC converts and checks", map[string][]byte{"small.arc.gz": gzipWhole(arc)},
			"", 0, "./check.sh arcs warcs", 0, []string{"small.arc.gz: OK: 22 records in small.warc.gz (23 records), 20 responses in order"}, nil, ""},
		{"plain ARC, a WARC passed over", map[string][]byte{"small.arc": []byte(arc), "other.warc": []byte(warc)},
			"", 0, "./check.sh arcs warcs", 0, []string{"small.arc: OK: 22 records"}, nil, "warcs/other.warc.warc.gz"},
		{"check again without converting", map[string][]byte{"small.arc.gz": gzipWhole(arc)},
			"./check.sh arcs warcs", 0, "./check.sh --no-convert arcs warcs", 0, []string{"small.arc.gz: OK"}, nil, ""},
		{"the old conversion of a whole-file gzip ARC: warcinfo and filedesc only", map[string][]byte{"small.arc.gz": gzipWhole(arc)},
			"arc2warc -q -o warcs arcs", 2, "./check.sh --no-convert arcs warcs", 1,
			[]string{"small.arc.gz: FAILED"}, []string{"is missing from the WARC"}, ""},
		{"last record missing from the WARC", map[string][]byte{"small.arc": []byte(arc)},
			"arc2warc -q -o warcs arcs", 22, "./check.sh --no-convert arcs warcs", 1,
			[]string{"small.arc: FAILED: 2 problems"}, []string{"http://example.com/19", "missing from the WARC"}, ""},
		{"not converted", map[string][]byte{"small.arc": []byte(arc)},
			"mkdir warcs", 0, "./check.sh --no-convert arcs warcs", 1, []string{"small.arc: FAILED"}, []string{"does not exist"}, ""},
		{"damaged ARC: bytes no record holds", map[string][]byte{"small.arc": []byte(junk)},
			"", 0, "./check.sh arcs warcs", 1, []string{"small.arc: FAILED", "1 damaged stretches in the ARC"}, []string{"skipped", "not in the WARC"}, ""},
		{"truncated record kept", map[string][]byte{"small.arc": []byte(cut)},
			"", 0, "./check.sh arcs warcs", 0, []string{"small.arc: OK: 22 records, 1 truncated (WARC-Truncated)"}, nil, ""},
		{"truncated record left out", map[string][]byte{"small.arc": []byte(cut)},
			"", 0, "./check.sh arcs warcs --drop-truncated", 1, []string{"small.arc: FAILED"}, []string{"missing from the WARC"}, ""},
		{"a WARC named as input is refused", map[string][]byte{"x.warc.gz": gzipWhole(warc)},
			"", 0, "arc2warc -o warcs arcs/x.warc.gz", 1, nil, []string{"x.warc.gz: not an ARC file", "refused, nothing written", "0 converted, 1 refused"}, "warcs/x.warc.gz.warc.gz"},
		{"a WARC with an ARC name is refused and fails the check", map[string][]byte{"x.arc": []byte(warc)},
			"", 0, "./check.sh arcs warcs", 1, []string{"x.arc: FAILED"}, []string{"not an ARC file"}, "warcs/x.warc.gz"},
		{"damage is counted", map[string][]byte{"small.arc": []byte(junk)},
			"", 0, "arc2warc -o warcs arcs", 1, nil, []string{"damaged: 1", "1 damaged stretches"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			os.MkdirAll(filepath.Join(work, "arcs"), 0o755)
			for name, data := range tt.files {
				if err := os.WriteFile(filepath.Join(work, "arcs", name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			copyFile(t, "../scripts/arc2warc-check.sh", filepath.Join(work, "check.sh"))
			os.Chmod(filepath.Join(work, "check.sh"), 0o755)
			if tt.convert != "" {
				if out, errs, code := sh(t, work, tt.convert); code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", tt.convert, code, out, errs)
				}
			}
			if tt.keep > 0 {
				keepMembers(t, filepath.Join(work, "warcs", "small.warc.gz"), tt.keep)
			}
			stdout, stderr, code := sh(t, work, tt.script)
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
			if tt.notExist != "" {
				if _, err := os.Stat(filepath.Join(work, tt.notExist)); err == nil {
					t.Errorf("%s was written", tt.notExist)
				}
			}
		})
	}
}

package manifest_test

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"warcdedup/manifest"
)

// TestScanLinesAsReader: ScanLines frames a manifest's lines as Reader
// does: each without its line feed, a carriage return kept (for Parse to
// refuse), and a last line without its line feed ErrTruncated from
// both, not a line.
func TestScanLinesAsReader(t *testing.T) {
	const l1 = "x.warc 0 10 http://a/ 2024-01-01T00:00:01Z sha1:Q336IN72UWT7ZYK5DXOLT2XK5I3XMZ5Y"
	const l2 = "y.warc 0 10 http://a/ 2024-01-01T00:00:01Z sha1:Q336IN72UWT7ZYK5DXOLT2XK5I3XMZ5Y"
	tests := []struct {
		name      string
		in        string
		lines     []string
		truncated bool
		refused   bool // by Reader: Parse refuses a line
	}{
		{"none", "", nil, false, false},
		{"two lines", l1 + "\n" + l2 + "\n", []string{l1, l2}, false, false},
		{"a carriage return kept", l1 + "\r\n", []string{l1 + "\r"}, false, true},
		{"the last line cut short", l1 + "\n" + l2[:20], []string{l1}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := bufio.NewScanner(strings.NewReader(tt.in))
			sc.Split(manifest.ScanLines)
			var got []string
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			if !slices.Equal(got, tt.lines) || errors.Is(sc.Err(), manifest.ErrTruncated) != tt.truncated {
				t.Errorf("lines %q, error %v; want %q, truncated %v", got, sc.Err(), tt.lines, tt.truncated)
			}
			r := manifest.NewReader(strings.NewReader(tt.in), "m")
			var err error
			for err == nil {
				_, err = r.Next()
			}
			if (err != io.EOF) != tt.refused || errors.Is(err, manifest.ErrTruncated) != tt.truncated {
				t.Errorf("Reader: %v; want refused %v, truncated %v", err, tt.refused, tt.truncated)
			}
		})
	}
}

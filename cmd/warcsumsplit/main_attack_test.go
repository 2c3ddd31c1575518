package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputSizeNeedsARegularFile proves that -c N takes the size it
// divides only from a regular file: a pipe named with -i (/dev/stdin,
// <(sort ...)) is an *os.File of size 0, and the split cut the manifest
// into one part per digest, exit status 0, where N parts were asked for.
func TestInputSizeNeedsARegularFile(t *testing.T) {
	tests := []struct {
		name     string
		open     func(t *testing.T) io.Reader
		wantSize int64 // -1: an error
	}{
		{"regular file", func(t *testing.T) io.Reader {
			name := filepath.Join(t.TempDir(), "m")
			if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, 10},
		{"pipe", func(t *testing.T) io.Reader {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return r
		}, -1},
		{"standard input as -i - gives it", func(t *testing.T) io.Reader { return io.NopCloser(strings.NewReader("x")) }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, err := inputSize(tt.open(t))
			switch {
			case tt.wantSize < 0 && err == nil:
				t.Errorf("size %d, want an error", size)
			case tt.wantSize >= 0 && (err != nil || size != tt.wantSize):
				t.Errorf("size %d, %v; want %d", size, err, tt.wantSize)
			}
		})
	}
}

// TestParseSizeRefusesOverflow proves that a -s SIZE past what 64 bits
// hold is refused: 9999999999G wrapped round to a negative size, and the
// split wrote one part per digest, exit status 0.
func TestParseSizeRefusesOverflow(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // -1: an error
	}{
		{"1K", 1 << 10},
		{"9999999999G", -1},
		{"8589934591G", 8589934591 << 30},
		{"8589934592G", -1},
		{"9223372036854775807", 9223372036854775807},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			switch {
			case tt.want < 0 && err == nil:
				t.Errorf("parseSize(%q) = %d, want an error", tt.in, got)
			case tt.want >= 0 && (err != nil || got != tt.want):
				t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

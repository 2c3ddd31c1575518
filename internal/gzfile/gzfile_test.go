package gzfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenBothForms reads back what a Writer wrote and the same text
// plain (an older work directory's), an empty file in either form, and
// refuses, naming the file, a gzip file cut short.
func TestOpenBothForms(t *testing.T) {
	text := strings.Repeat("file.warc.gz 1234 567 http://example.com/ 20240101000000 sha1:ABCDEF\n", 1000)
	compressed := func(s string) []byte {
		var b bytes.Buffer
		z := NewWriter(&b)
		z.Write([]byte(s))
		z.Close()
		return b.Bytes()
	}
	whole := compressed(text)
	for _, tc := range []struct {
		name    string
		data    []byte
		want    string
		wantErr bool
	}{
		{"gzip", whole, text, false},
		{"plain", []byte(text), text, false},
		{"empty plain", nil, "", false},
		{"empty gzip", compressed(""), "", false},
		{"one plain byte", []byte("x"), "x", false},
		{"gzip cut short", whole[:len(whole)/2], "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "before.manifest")
			if err := os.WriteFile(name, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), name) {
					t.Fatalf("error %v, want one naming %s", err, name)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%d bytes, %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
	if len(whole)*4 > len(text) {
		t.Errorf("compressed to %d of %d bytes", len(whole), len(text))
	}
}

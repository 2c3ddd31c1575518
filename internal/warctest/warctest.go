// Package warctest builds small WARC files for tests.
package warctest

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmember"
	"warcdedup/gzmulti"
)

// Record returns one WARC/1.0 record of type typ with the given block;
// uri and date are left out when empty; extra header lines go before
// Content-Length.
func Record(typ, uri, date, block string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "WARC/1.0\r\nWARC-Type: %s\r\nWARC-Record-ID: <urn:uuid:%x>\r\n", typ, sha1.Sum([]byte(uri+date+typ+block)))
	if uri != "" {
		fmt.Fprintf(&b, "WARC-Target-URI: %s\r\n", uri)
	}
	if date != "" {
		fmt.Fprintf(&b, "WARC-Date: %s\r\n", date)
	}
	for _, e := range extra {
		b.WriteString(e + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s\r\n\r\n", len(block), block)
	return b.String()
}

// HTTP returns an HTTP response message with the given status and body.
func HTTP(status int, body string) string {
	return fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body)
}

// Response returns a WARC response record of a 200 response with body.
func Response(uri, date, body string) string {
	return Record("response", uri, date, HTTP(200, body))
}

// Gzip compresses each record as a gzip member of its own, as crawlers
// write .warc.gz files.
func Gzip(records ...string) []byte {
	var out bytes.Buffer
	for _, r := range records {
		zw := gzip.NewWriter(&out)
		zw.Write([]byte(r))
		zw.Close()
	}
	return out.Bytes()
}

// WriteFile writes data to dir/name, creating directories.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ZlibCopy writes to dst the gzip file src (dst may be src) with every
// member compressed again by zlib with setting s and the gzip header hdr:
// the file as a crawler using zlib would have written it (Heritrix: level
// 6 and Java's ten-byte header). It fails the test in a build without
// zlib (gzmember.Available).
func ZlibCopy(t testing.TB, src, dst string, hdr []byte, s gzmember.Setting) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzmulti.NewReader(bytes.NewReader(data), src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for {
		if _, err := zr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := gzmember.Compress(&out, hdr, zr, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

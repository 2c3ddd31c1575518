package gzfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOpenBothForms reads back what a Writer wrote, as one member or
// several, and the same text plain (an older work directory's), an empty
// file in either form, and refuses, naming the file, a gzip file cut
// short, a member whose CRC-32 is wrong, and bytes that are no member.
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
	members := append(compressed(text[:len(text)/3]), compressed(text[len(text)/3:])...)
	badCRC := bytes.Clone(whole)
	badCRC[len(badCRC)-8] ^= 1
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
		{"members, one a file (warcsum.Runner.Gzip)", members, text, false},
		{"a member's CRC-32 wrong", badCRC, "", true},
		{"garbage after a member", append(bytes.Clone(whole), "garbage"...), "", true},
		{"garbage between members", append(append(compressed("a\n"), "garbage"...), compressed("b\n")...), "", true},
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

// BenchmarkOpenRead reads a compressed manifest of 30,000 lines (5 MB,
// the bench collection's), as the stages after the hash read theirs.
func BenchmarkOpenRead(b *testing.B) {
	var text bytes.Buffer
	for i := range 30000 {
		fmt.Fprintf(&text, "crawl/gen-%05d.warc.gz %d %d http://example.com/page/%d?q=%d 2024-01-01T00:00:%02dZ sha1:%032X\n",
			i%16, i*30000, 30000+i%977, i, i*7919, i%60, uint64(i)*0x9E3779B97F4A7C15)
	}
	var z bytes.Buffer
	w := NewWriter(&z)
	w.Write(text.Bytes())
	w.Close()
	name := filepath.Join(b.TempDir(), "before.manifest")
	if err := os.WriteFile(name, z.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(text.Len()))
	for range b.N {
		r, err := Open(name)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != int64(text.Len()) {
			b.Fatalf("%d bytes, %v", n, err)
		}
		r.Close()
	}
}

// TestWriterReusesCompressor proves that a Writer closed leaves its
// compressor to the next (a fresh one is some 750 kB, allocated and
// cleared: a run makes hundreds), and that a reused one writes the bytes a
// fresh one does.
func TestWriterReusesCompressor(t *testing.T) {
	text := []byte(strings.Repeat("file.warc.gz 1234 567 http://example.com/ 20240101000000 sha1:ABCDEF\n", 1000))
	compress := func() []byte {
		var b bytes.Buffer
		z := NewWriter(&b)
		z.Write(text)
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first := compress()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const streams = 20
	for range streams {
		if again := compress(); !bytes.Equal(again, first) {
			t.Fatalf("a reused compressor wrote %d bytes, a fresh one %d", len(again), len(first))
		}
	}
	runtime.ReadMemStats(&after)
	// A fresh compressor a stream is over 800 kB; sync.Pool may drop one
	// now and then (at a collection, or a quarter of them under -race).
	if per := (after.TotalAlloc - before.TotalAlloc) / streams; per > 400<<10 {
		t.Errorf("%d bytes allocated a stream, want the compressor reused", per)
	}
	z := NewWriter(io.Discard)
	z.Close()
	if _, err := z.Write(text); err == nil {
		t.Error("a closed Writer took a write")
	}
	if err := z.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

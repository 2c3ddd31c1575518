// Package gzfile opens the work files kept compressed (the manifests kept
// for undo and audit, warcsum's cache) in either of their forms: gzip, as
// they are written now, or plain, as an older warcdedup wrote them. The
// form is told by the file's first bytes (gzip's magic number, which no
// manifest, facts or counts line begins with), not by its name, so that
// the names stay those every reader knows.
package gzfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"warcdedup/gzmulti"

	"github.com/klauspost/compress/gzip"
)

// magic begins every gzip member (RFC 1952: ID1, ID2, and CM, deflate),
// as gzmulti tells a gzip file (IsGzip).
var magic = []byte{0x1f, 0x8b, 0x08}

// Open opens the named file for reading, decompressed if it is gzip.
func Open(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &file{Reader: r, f: f}, nil
}

// NewReader reads r, decompressed if it is gzip; name is for errors.
func NewReader(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(len(magic))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(head, magic) {
		return br, nil
	}
	z, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &named{r: z, name: name}, nil
}

// named names the file in a decompression error.
type named struct {
	r    io.Reader
	name string
}

func (n *named) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.name, err)
	}
	return k, err
}

type file struct {
	io.Reader
	f *os.File
}

func (f *file) Close() error { return f.f.Close() }

// Writer compresses what is written to w at gzip's fastest level (a
// manifest's lines compress to about a fifth at it, as fast as they are
// made); Close ends the gzip stream but does not close w.
type Writer = gzip.Writer

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the level is valid
	return z
}

// IsGzip reports whether the named file is gzip (by its first bytes).
func IsGzip(name string) (bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	gz, err := gzmulti.IsGzip(f)
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return gz, nil
}

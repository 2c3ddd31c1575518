//go:build !(isal && cgo)

package gzmulti

import (
	"bufio"
	"errors"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
)

// Inflater names the deflate implementation of this build: "go"
// (klauspost/compress, pure Go) or "isal" (Intel ISA-L through cgo, built
// with -tags isal).
const Inflater = "go"

func newInflater() (inflater, error) { return new(goInflater), nil }

// goInflater is the pure-Go inflater, klauspost/compress/flate.
type goInflater struct {
	fr  io.ReadCloser
	crc uint32
}

func (g *goInflater) Reset(src *bufio.Reader) {
	// src is a *bufio.Reader, which klauspost/flate reads through its fast
	// path without an interface call per byte, and which (being an
	// io.ByteReader) it never reads past the end of the stream.
	g.crc = 0
	if g.fr == nil {
		g.fr = flate.NewReader(src)
		return
	}
	g.fr.(flate.Resetter).Reset(src, nil)
}

func (g *goInflater) Read(p []byte) (int, error) {
	n, err := g.fr.Read(p)
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p[:n])
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) {
		err = corruptError{int64(corrupt)}
	}
	return n, err
}

func (g *goInflater) Overread() []byte { return nil }

func (g *goInflater) Sum32() uint32 { return g.crc }

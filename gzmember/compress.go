package gzmember

import (
	"io"
	"math"
)

// Compress writes to w the gzip member a writer using zlib with setting s
// makes of the bytes r gives: the header hdr (one whole gzip header, as
// Description.Header), zlib's deflate data, and the trailer. It is what a
// Rebuilder tries, written out; tests and tools make with it the members
// that crawlers using zlib write (Heritrix, wget, warcprox). A failure of
// w is a *WriteError; without zlib, ErrUnavailable.
func Compress(w io.Writer, hdr []byte, r io.Reader, s Setting) error {
	if !zlibAvailable {
		return ErrUnavailable
	}
	if err := checkHeader(hdr); err != nil {
		return err
	}
	rb := &Rebuilder{in: make([]byte, 64<<10), out: make([]byte, 64<<10)}
	defer rb.Close()
	// A member of no length to match: the sum is taken, and never compared.
	m := &memberSink{d: &Description{Length: math.MaxInt64, Header: hdr}, sum: BLAKE3.New(), w: w}
	_, err := rb.compress(s, func() (io.Reader, error) { return r, nil }, m)
	if m.werr != nil {
		return &WriteError{m.werr}
	}
	return err
}

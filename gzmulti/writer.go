package gzmulti

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// Writer writes a multi-member gzip file one member at a time and tells
// where each member landed, so that a rewritten file can be indexed: the
// one writer of gzip members of the toolchain (a revisit's member, a
// restored record's, a recompressed or converted file's records).
type Writer struct {
	dst   countingWriter
	zw    *gzip.Writer
	level int
	open  bool
	start int64
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewWriter returns a Writer to w compressing at level (gzip.DefaultCompression
// and the other levels of compress/gzip).
func NewWriter(w io.Writer, level int) *Writer {
	return &Writer{dst: countingWriter{w: w}, level: level}
}

// Reset makes w write to dst from now on, as a new Writer at the same
// level (its offsets from 0), keeping its compressor: what a writer of
// members to many places (one revisit at a time) reuses.
func (w *Writer) Reset(dst io.Writer) {
	w.dst = countingWriter{w: dst}
	w.open, w.start = false, 0
}

// Offset is the number of bytes written to the underlying writer so far, the
// offset of the next member.
func (w *Writer) Offset() int64 { return w.dst.n }

// Write compresses p into the current member, starting one if none is open.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.open {
		if w.zw == nil {
			zw, err := gzip.NewWriterLevel(&w.dst, w.level)
			if err != nil {
				return 0, err
			}
			w.zw = zw
		} else {
			w.zw.Reset(&w.dst)
		}
		w.open, w.start = true, w.dst.n
	}
	return w.zw.Write(p)
}

// CloseMember finishes the current member and returns where it stands.
func (w *Writer) CloseMember() (Member, error) {
	if !w.open {
		return Member{}, fmt.Errorf("gzmulti: CloseMember with no member open")
	}
	w.open = false
	if err := w.zw.Close(); err != nil {
		return Member{}, err
	}
	return Member{Offset: w.start, Length: w.dst.n - w.start}, nil
}

// CopyMember copies n raw bytes from r, a member (or any bytes) as stored in
// another file, unchanged: a record that is kept is never recompressed.
func (w *Writer) CopyMember(r io.Reader, n int64) (Member, error) {
	if w.open {
		return Member{}, fmt.Errorf("gzmulti: CopyMember while a member is open")
	}
	start := w.dst.n
	copied, err := io.CopyN(&w.dst, r, n)
	if err == io.EOF {
		err = fmt.Errorf("copying %d bytes: %w after %d", n, io.ErrUnexpectedEOF, copied)
	}
	return Member{Offset: start, Length: copied}, err
}

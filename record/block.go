package record

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Read reads the block of the current record; io.EOF at its end. A block
// that the file cuts short gives an *Error wrapping ErrTruncated.
func (r *Reader) Read(p []byte) (int, error) {
	if r.st != inRecord || r.blockLeft == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.blockLeft {
		p = p[:r.blockLeft]
	}
	n, err := r.br.Read(p)
	r.pos += int64(n)
	r.blockLeft -= int64(n)
	switch {
	case err == io.EOF && r.blockLeft > 0:
		return n, r.truncated()
	case err != nil && err != io.EOF:
		return n, r.fail(err)
	}
	return n, nil
}

// WriteTo writes the rest of the current record's block to w, straight from
// the read buffer.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for r.st == inRecord && r.blockLeft > 0 {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF {
					return written, r.truncated()
				}
				return written, r.fail(err)
			}
		}
		buf, _ := r.br.Peek(int(min(int64(r.br.Buffered()), r.blockLeft)))
		n, err := w.Write(buf)
		r.discard(n)
		r.blockLeft -= int64(n)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// BlockLeft is the number of bytes of the current block not yet read.
func (r *Reader) BlockLeft() int64 { return r.blockLeft }

func (r *Reader) truncated() error {
	have := r.rec.BlockLength - r.blockLeft
	return r.fail(r.errorAt(r.rec.Offset, fmt.Errorf("%w: block has %d of its %d bytes", ErrTruncated, have, r.rec.BlockLength)))
}

// fail records the error that ended the current record's block, so that it
// is reported once, and returns it.
func (r *Reader) fail(err error) error {
	r.finishErr = r.gzipError(err)
	return r.finishErr
}

// Finish reads the rest of the current record, checks that it ends where its
// length says, and sets its Length. An *Error means the record is damaged and
// must not be used; the next call to Next goes on after it.
func (r *Reader) Finish() error {
	if r.st != inRecord {
		return r.finishErr
	}
	if r.finishErr == nil {
		_, r.finishErr = r.WriteTo(io.Discard)
	}
	r.st = idle
	if r.finishErr != nil {
		r.resync = true
		return r.finishErr
	}
	// The record ends with its terminator, CRLF CRLF for WARC and LF for ARC
	// as written; real files have fewer or more line ends, which belong to
	// the record they follow.
	err := r.skipLineEnds()
	if r.z.Compressed() {
		// The member must end here, with nothing but the record in it.
		if err == io.EOF {
			r.rec.Length = r.z.Member().Length
			return nil
		}
		if err == nil {
			err = r.trailingBytes(ErrMultiRecord, "the file must be recompressed with one member per record")
		}
		r.finishErr = r.gzipError(err)
		return r.finishErr
	}
	r.rec.Length = r.pos - r.rec.Offset
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if r.atRecordStart() {
		return nil
	}
	r.resync = true
	r.finishErr = r.errorAt(r.rec.Offset, fmt.Errorf("%w: unexpected bytes at offset %d after its %d-byte block", ErrRecordEnd, r.pos, r.rec.BlockLength))
	return r.finishErr
}

// trailingBytes describes bytes found in a gzip member after its record.
func (r *Reader) trailingBytes(multi error, hint string) error {
	if r.atRecordStart() {
		return r.errorAt(r.rec.Offset, fmt.Errorf("%w: %s", multi, hint))
	}
	return r.errorAt(r.rec.Offset, fmt.Errorf("%w: unexpected bytes at byte %d of the member after its %d-byte block", ErrRecordEnd, r.pos, r.rec.BlockLength))
}

// atRecordStart reports whether the next bytes start a record of the file's
// format.
func (r *Reader) atRecordStart() bool {
	if r.format == WARC {
		b, _ := r.br.Peek(5)
		return isWARCVersion(b)
	}
	b, _ := r.br.Peek(min(maxARCLineLen, r.br.Size()))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return looksLikeARCLine(b[:i], r.arcVersion)
	}
	return false
}

// skipToRecord advances a plain file to the next record start: for WARC the
// next "WARC/" wherever it stands (damage may leave no line end before it),
// for ARC the next line that parses as a record line.
func (r *Reader) skipToRecord() error {
	if r.format == WARC {
		return r.skipToWARC()
	}
	for {
		if _, err := r.br.Peek(1); err != nil {
			return err
		}
		if r.atRecordStart() {
			return nil
		}
		for { // drop the rest of this line
			frag, err := r.br.ReadSlice('\n')
			r.pos += int64(len(frag))
			if err == nil {
				break
			}
			if err != bufio.ErrBufferFull {
				return err
			}
		}
	}
}

func (r *Reader) skipToWARC() error {
	for {
		buf, err := r.br.Peek(r.br.Size())
		if i := indexWARC(buf); i >= 0 {
			r.discard(i)
			return nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			r.discard(len(buf))
			return err
		}
		r.discard(len(buf) - 4) // "WARC/" may straddle the buffer end
	}
}

// indexWARC finds a version line's "WARC/", in either case.
func indexWARC(b []byte) int {
	i, j := bytes.Index(b, []byte("WARC/")), bytes.Index(b, []byte("warc/"))
	if i < 0 || (j >= 0 && j < i) {
		return j
	}
	return i
}

// blockStartsHTTP reports whether the current block starts with an HTTP
// status line.
func (r *Reader) blockStartsHTTP() bool {
	b, _ := r.br.Peek(int(min(r.rec.BlockLength, 16)))
	_, ok := parseStatusLine(b, true)
	return ok
}

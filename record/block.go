package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"warcdedup/gzmulti"
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
// is reported once, and returns it. A gzip member that ends early cuts the
// block short: that is ErrTruncated as much as a clipped plain file.
func (r *Reader) fail(err error) error {
	var ge *gzmulti.Error
	if errors.As(err, &ge) && errors.Is(ge.Err, gzmulti.ErrTruncated) {
		r.noteStreamDamage(ge)
		have := r.rec.BlockLength - r.blockLeft
		r.finishErr = &Error{Name: r.name, Offset: r.base + ge.Offset, Err: fmt.Errorf("%w: %w after %d of the block's %d bytes", ErrTruncated, ge.Err, have, r.rec.BlockLength)}
		return r.finishErr
	}
	r.finishErr = r.gzipError(err)
	return r.finishErr
}

// Finish reads the rest of the current record, checks that it ends where its
// length says, and sets its Length. An *Error means the record is damaged and
// must not be used; the next call to Next goes on after it. Finish returns
// the damage found while the block was read (by Read, WriteTo or
// ReadHTTPHead) again, as the answer to whether the record is whole, but
// Next never reports it a second time.
func (r *Reader) Finish() error {
	if r.st != inRecord {
		return r.finishErr
	}
	if r.finishErr == nil {
		_, r.finishErr = r.WriteTo(io.Discard)
	}
	r.st = idle
	if r.finishErr != nil {
		return r.finishErr
	}
	// The record ends with its terminator, CRLF CRLF for WARC and LF for ARC
	// as written; real files have fewer or more line ends, which belong to
	// the record they follow.
	r.trailer, r.trailerLen, r.capture = r.trailer[:0], 0, true
	err := r.skipLineEnds()
	r.capture = false
	if r.z.Compressed() && r.stream == nil {
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
	if err == io.EOF {
		r.rec.Length = r.pos - r.rec.Offset
		return nil
	}
	if r.damageFollows(err) {
		// The block is whole; the gzip damage after it is Next's to report.
		r.rec.Length = r.pos - r.rec.Offset
		return nil
	}
	if err != nil {
		r.finishErr = err
		return err
	}
	if r.atRecordStart() {
		r.rec.Length = r.pos - r.rec.Offset
		return nil
	}
	// Bytes that start no record follow the block: its length is wrong, or
	// garbage follows it. Skip them now and say how far, in this one report.
	junk := r.pos
	skipped, err := r.skipToNext()
	if r.damageFollows(err) {
		skipped = r.skippedToDamage(junk)
	} else if err != nil {
		r.finishErr = err
		return err
	}
	r.finishErr = r.errorAt(r.rec.Offset, fmt.Errorf("%w: unexpected bytes at offset %d after its %d-byte block; %s", ErrRecordEnd, r.base+junk, r.rec.BlockLength, skipped))
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
// format (of either format while it is not known).
func (r *Reader) atRecordStart() bool { return r.recordAt() != 0 }

// recordAt returns the format of the record whose header line starts at the
// next byte, or 0 if no record of the file's format starts there. Only a
// whole line is taken as an ARC record line; a WARC version line may be the
// last bytes of the file (its header is then reported as truncated).
func (r *Reader) recordAt() Format {
	n := maxARCLineLen + 1
	if r.format == WARC {
		n = maxVersionLine + 1
	}
	b, err := r.br.Peek(min(n, r.br.Size()))
	r.peekErr = err
	if r.format != ARC {
		w := b[:min(len(b), maxVersionLine+1)]
		if i := bytes.IndexByte(w, '\n'); i >= 0 {
			if isVersionLine(w[:i]) {
				return WARC
			}
		} else if err != nil && len(w) == len(b) && isVersionLine(w) {
			return WARC
		}
	}
	if r.format != WARC {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && looksLikeARCLine(b[:i], r.arcVersion) {
			return ARC
		}
	}
	return 0
}

// maxVersionLine is the longest line (without its LF) taken for a WARC
// version line.
const maxVersionLine = 64

// skipToRecord advances a plain file to the next record start: for WARC the
// next version line wherever it stands (damage may leave no line end before
// it), for ARC (or a file whose format is not known yet) the next line that
// is a record line.
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
		if r.format == 0 {
			// A WARC version line may also end this line.
			b, err := r.br.Peek(min(maxARCLineLen+1, r.br.Size()))
			line, whole := b, false
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, whole = b[:i], true
			}
			if whole || err != nil {
				for i := 1; i < len(line); i++ {
					j := indexWARC(line[i:])
					if j < 0 {
						break
					}
					i += j
					if isVersionLine(line[i:]) {
						r.discard(i)
						return nil
					}
				}
			}
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

// skipToWARC advances to the next "WARC/" (either case) that starts a
// version line, or to the end of the file.
func (r *Reader) skipToWARC() error {
	for {
		buf, err := r.br.Peek(r.br.Size())
		atEnd := err != nil && err != bufio.ErrBufferFull
		for i := 0; ; {
			j := indexWARC(buf[i:])
			if j < 0 {
				break
			}
			i += j
			if !atEnd && len(buf)-i <= maxVersionLine {
				// Too close to the end of what is buffered to tell.
				r.discard(i)
				buf = nil
				break
			}
			line := buf[i:min(len(buf), i+maxVersionLine+1)]
			whole := false
			if k := bytes.IndexByte(line, '\n'); k >= 0 {
				line, whole = line[:k], true
			}
			if (whole || atEnd && i+len(line) == len(buf)) && isVersionLine(line) {
				r.discard(i)
				return nil
			}
			i++
		}
		if buf == nil {
			continue
		}
		if atEnd {
			r.discard(len(buf))
			return err
		}
		r.discard(len(buf) - 4) // "WARC/" may straddle the buffer end
	}
}

// indexWARC finds "WARC/" or "warc/" in b.
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
	b, _ := r.br.Peek(int(min(r.rec.BlockLength, 32)))
	_, ok := parseStatusLine(b)
	return ok
}

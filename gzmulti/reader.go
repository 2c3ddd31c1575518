// Package gzmulti reads and writes multi-member gzip files, the form of
// .warc.gz and .arc.gz files in which every record is a gzip member of its
// own. A Reader iterates the members with their offset and length in the
// file as stored, so that a record can be addressed, fetched and copied
// without touching its neighbours. Plain (uncompressed) files go through the
// same interface as one logical member.
package gzmulti

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// Member is one gzip member of a file (or, for a plain file, the whole file).
type Member struct {
	Offset int64 // where the member starts in the file
	Length int64 // compressed length; -1 until the member has been read to its end
}

// Error is damage found at an offset of a file. Reading can go on with Next
// when the damage was confined to one member.
type Error struct {
	Name   string
	Offset int64
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: offset %d: %v", e.Name, e.Offset, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// The kinds of damage a Reader reports, wrapped in an *Error.
var (
	ErrTruncated = errors.New("gzip member is truncated")
	ErrChecksum  = errors.New("gzip member fails its CRC-32/size check")
	ErrCorrupt   = errors.New("gzip member holds corrupt deflate data")
	ErrGarbage   = errors.New("bytes that are not a gzip member")
)

// gzipMagic starts every gzip member that uses deflate (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// inflater is the one seam between this package and a deflate
// implementation: it decompresses one member at a time from src, which is
// positioned at a member header, and must leave src just after the member's
// trailer when Read returns io.EOF. A faster inflater (ISA-L through cgo)
// plugs in here.
type inflater interface {
	Reset(src *bufio.Reader) error // reads the member header
	Read(p []byte) (int, error)    // io.EOF once the trailer was read and checked
}

// klauspostInflater is the pure-Go inflater.
type klauspostInflater struct{ z gzip.Reader }

func (k *klauspostInflater) Reset(src *bufio.Reader) error {
	// src is a *bufio.Reader, which klauspost/flate reads through its fast
	// path without an interface call per byte, and which (being an
	// io.ByteReader) it never reads past the end of the member.
	if err := k.z.Reset(src); err != nil {
		return err
	}
	k.z.Multistream(false)
	return nil
}

func (k *klauspostInflater) Read(p []byte) (int, error) { return k.z.Read(p) }

// counter counts the bytes read from the file, so that the position of a
// member is the count less what is still buffered.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Reader iterates the members of a file. Next moves to the next member, Read
// returns its decompressed bytes. For a plain file, Next returns one member at
// offset 0 and Read returns the file's bytes.
type Reader struct {
	name    string
	src     counter
	br      *bufio.Reader
	gz      bool
	inflate inflater
	member  Member
	started bool  // Next has been called
	reading bool  // the current member has not reached its end
	err     error // sticky error of the current member
}

// bufferSize is the read buffer over the file; large enough that inflation,
// not system calls, sets the pace.
const bufferSize = 256 << 10

// NewReader returns a Reader of r, whose name is used in errors. The file is
// gzip if it starts with a gzip member header, whatever its name says (real
// collections hold gzip files named .warc).
func NewReader(r io.Reader, name string) (*Reader, error) {
	z := &Reader{name: name, src: counter{r: r}}
	z.br = bufio.NewReaderSize(&z.src, bufferSize)
	head, err := z.br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	z.gz = bytes.Equal(head, gzipMagic)
	if z.gz {
		z.inflate = new(klauspostInflater)
	}
	return z, nil
}

// Compressed reports whether the file is gzip.
func (z *Reader) Compressed() bool { return z.gz }

// Name is the name given to NewReader.
func (z *Reader) Name() string { return z.name }

// position is the offset in the file of the next byte not yet consumed.
func (z *Reader) position() int64 { return z.src.n - int64(z.br.Buffered()) }

// Member returns the current member; its Length is set once Read has
// returned io.EOF.
func (z *Reader) Member() Member { return z.member }

// Next advances to the next member and returns it, or io.EOF after the last
// one. The rest of the current member, if any, is read and checked first.
// Damage is returned as an *Error; after it Next can be called again and
// resumes at the next member header found in the file, so one damaged member
// costs only itself.
func (z *Reader) Next() (Member, error) {
	if z.reading {
		if err := z.drain(); err != nil {
			return Member{}, err
		}
	}
	if !z.gz {
		if z.started {
			return Member{}, io.EOF
		}
		z.started, z.reading = true, true
		z.member = Member{Offset: 0, Length: -1}
		return z.member, nil
	}
	z.started = true
	if z.err != nil {
		// The damaged member was reported; resume at the next header.
		z.err = nil
		if err := z.skipToMagic(); err != nil {
			return Member{}, err
		}
	}
	start := z.position()
	if _, err := z.br.Peek(1); err != nil {
		if err == io.EOF {
			return Member{}, io.EOF
		}
		return Member{}, &Error{z.name, start, err}
	}
	if err := z.inflate.Reset(z.br); err == nil {
		z.member = Member{Offset: start, Length: -1}
		z.reading = true
		return z.member, nil
	}
	// Not a member header here. Skip to the next one and report what was
	// skipped: trailing garbage if no member follows.
	z.discardTo(start + 1)
	if err := z.skipToMagic(); err != nil && err != io.EOF {
		return Member{}, err
	}
	skipped := z.position() - start
	if _, err := z.br.Peek(1); err == io.EOF {
		return Member{}, &Error{z.name, start, fmt.Errorf("%w: %d bytes of trailing garbage after the last member", ErrGarbage, skipped)}
	}
	return Member{}, &Error{z.name, start, fmt.Errorf("%w: %d bytes skipped up to the next member", ErrGarbage, skipped)}
}

// Read reads decompressed bytes of the current member.
func (z *Reader) Read(p []byte) (int, error) {
	if !z.reading {
		if z.err != nil {
			return 0, z.err
		}
		return 0, io.EOF
	}
	var n int
	var err error
	if z.gz {
		n, err = z.inflate.Read(p)
	} else {
		n, err = z.br.Read(p)
	}
	if err == nil {
		return n, nil
	}
	z.reading = false
	if err == io.EOF {
		z.member.Length = z.position() - z.member.Offset
		return n, io.EOF
	}
	z.err = z.memberError(err)
	return n, z.err
}

// memberError names the damage an inflater reported, with the member offset.
func (z *Reader) memberError(err error) error {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = ErrTruncated
	case errors.Is(err, gzip.ErrChecksum):
		err = ErrChecksum
	case errors.As(err, &corrupt):
		err = fmt.Errorf("%w at byte %d of the member", ErrCorrupt, int64(corrupt))
	}
	return &Error{z.name, z.member.Offset, err}
}

// drain reads the current member to its end.
func (z *Reader) drain() error {
	var buf [32 << 10]byte
	for z.reading {
		if _, err := z.Read(buf[:]); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// discardTo drops buffered or unread bytes up to file offset off.
func (z *Reader) discardTo(off int64) {
	if n := off - z.position(); n > 0 {
		z.br.Discard(int(n))
	}
}

// skipToMagic advances to the next gzip member header or to the end of the
// file, whichever comes first.
func (z *Reader) skipToMagic() error {
	for {
		buf, err := z.br.Peek(bufferSize)
		if i := bytes.Index(buf, gzipMagic); i >= 0 {
			z.br.Discard(i)
			return nil
		}
		if err != nil {
			z.br.Discard(len(buf))
			if err == io.EOF {
				return io.EOF
			}
			return &Error{z.name, z.position(), err}
		}
		// Keep the last bytes: a header may straddle the buffer boundary.
		z.br.Discard(len(buf) - len(gzipMagic) + 1)
	}
}

package gzmulti

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// inflater is the one seam between this package and a deflate
// implementation: it decompresses the raw deflate data (RFC 1951) of one
// member from src. The gzip header and trailer around it are read and
// checked by member, in Go, whichever inflater is built (inflate_go.go,
// inflate_isal.go), so that damage is judged the same way by both.
type inflater interface {
	// Reset starts a deflate stream at src's next byte.
	Reset(src *bufio.Reader)
	// Read returns decompressed bytes, and io.EOF once the stream's final
	// block has ended. Damage is io.ErrUnexpectedEOF (src ended first) or a
	// corruptError.
	Read(p []byte) (int, error)
	// Overread returns the bytes past the end of the stream that Read took
	// from src and cannot give back, at most 8: the trailer starts with them.
	Overread() []byte
	// Sum32 is the CRC-32 (IEEE) of the bytes Read returned since Reset.
	Sum32() uint32
}

// corruptError is deflate data that cannot be decoded, found near byte
// Offset of the deflate stream.
type corruptError struct{ Offset int64 }

func (e corruptError) Error() string {
	return fmt.Sprintf("corrupt deflate data at byte %d", e.Offset)
}

// errHeader is a gzip magic whose header does not parse: not a member.
var errHeader = errors.New("invalid gzip header")

// The FLG bits of a gzip header (RFC 1952 section 2.3.1).
const (
	flagHdrCRC  = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
)

// maxHeaderString bounds a header's file name or comment, NUL included, as
// compress/gzip does: a longer one is no header.
const maxHeaderString = 512

// member reads one gzip member from src: header, deflate data through an
// inflater, trailer. Its checks are compress/gzip's: magic and method, the
// header CRC-16 when present, reserved flag bits zero, and the trailer's
// CRC-32 and size of the decompressed bytes.
type member struct {
	src     *bufio.Reader
	deflate inflater
	hdrLen  int64  // bytes of the header
	size    uint32 // bytes decompressed so far, modulo 2^32
	err     error  // what Read returns once the member ended: io.EOF or its damage
	// sizeOK is set when the trailer was read: its size is the size
	// inflated, so the deflate data ended where the member did even if the
	// CRC-32 is wrong.
	sizeOK  bool
	str     [maxHeaderString]byte
	trailer [8]byte
}

// Reset reads the header of the member at src's next byte. It returns
// errHeader if the bytes there are not a member header, io.EOF or
// io.ErrUnexpectedEOF if src ends inside it.
func (m *member) Reset(src *bufio.Reader) error {
	*m = member{src: src, deflate: m.deflate}
	if m.deflate == nil {
		d, err := newInflater()
		if err != nil {
			return err
		}
		m.deflate = d
	}
	if err := m.readHeader(); err != nil {
		m.err = err
		return err
	}
	m.deflate.Reset(src)
	return nil
}

func (m *member) readHeader() error {
	h, err := m.src.Peek(10)
	if len(h) < 10 {
		if len(h) == 0 || err != io.EOF {
			return err
		}
		return io.ErrUnexpectedEOF
	}
	if h[0] != gzipMagic[0] || h[1] != gzipMagic[1] || h[2] != gzipMagic[2] {
		return errHeader
	}
	flg := h[3]
	// The header CRC-16 is the low half of the CRC-32 of every header
	// byte before it; only computed when there is one to check.
	hcrc := flg&flagHdrCRC != 0
	var crc uint32
	if hcrc {
		crc = crc32.ChecksumIEEE(h)
	}
	m.discard(10)
	if flg&flagExtra != 0 {
		x, err := m.bytes(2)
		if err != nil {
			return err
		}
		if hcrc {
			crc = crc32.Update(crc, crc32.IEEETable, x)
		}
		n := int(binary.LittleEndian.Uint16(x))
		m.discard(2)
		for n > 0 {
			b, err := m.src.Peek(min(n, m.src.Size()))
			if len(b) == 0 {
				return noEOF(err)
			}
			if hcrc {
				crc = crc32.Update(crc, crc32.IEEETable, b)
			}
			n -= len(b)
			m.discard(len(b))
		}
	}
	for _, f := range []byte{flagName, flagComment} {
		if flg&f == 0 {
			continue
		}
		s, err := m.readString()
		if err != nil {
			return err
		}
		if hcrc {
			crc = crc32.Update(crc, crc32.IEEETable, s)
		}
	}
	if hcrc {
		x, err := m.bytes(2)
		if err != nil {
			return err
		}
		if binary.LittleEndian.Uint16(x) != uint16(crc) {
			return errHeader
		}
		m.discard(2)
	}
	if flg>>5 != 0 { // reserved bits
		return errHeader
	}
	return nil
}

// bytes returns src's next n bytes without consuming them, or
// io.ErrUnexpectedEOF.
func (m *member) bytes(n int) ([]byte, error) {
	b, err := m.src.Peek(n)
	if len(b) < n {
		return nil, noEOF(err)
	}
	return b, nil
}

func (m *member) discard(n int) {
	d, _ := m.src.Discard(n)
	m.hdrLen += int64(d)
}

// readString consumes a NUL-terminated header string and returns it with
// its NUL.
func (m *member) readString() ([]byte, error) {
	for i := range m.str {
		c, err := m.src.ReadByte()
		if err != nil {
			return nil, noEOF(err)
		}
		m.hdrLen++
		m.str[i] = c
		if c == 0 {
			return m.str[:i+1], nil
		}
	}
	return nil, errHeader
}

// Read returns decompressed bytes of the member; io.EOF once its trailer
// was read and checked, ErrChecksum if the check failed, io.ErrUnexpectedEOF
// if the file ends inside the member, or a corruptError (its offset counted
// from the start of the member).
func (m *member) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	n, err := m.deflate.Read(p)
	m.size += uint32(n)
	switch e := err.(type) {
	case nil:
		return n, nil
	case corruptError:
		e.Offset += m.hdrLen
		err = e
	default:
		if err == io.EOF {
			err = m.readTrailer()
		}
	}
	m.err = err
	return n, err
}

// readTrailer reads the 8-byte trailer after the deflate data and checks it.
func (m *member) readTrailer() error {
	t := &m.trailer
	k := copy(t[:], m.deflate.Overread())
	if _, err := io.ReadFull(m.src, t[k:]); err != nil {
		return noEOF(err)
	}
	m.sizeOK = binary.LittleEndian.Uint32(t[4:]) == m.size
	if !m.sizeOK || binary.LittleEndian.Uint32(t[:4]) != m.deflate.Sum32() {
		return ErrChecksum
	}
	return io.EOF
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

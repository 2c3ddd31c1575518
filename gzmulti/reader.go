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

// IsGzip reports whether r starts as a gzip file does, by the test a
// Reader makes (its first member header's first bytes): what a file is,
// whatever its name says (real collections hold gzip files named .warc).
func IsGzip(r io.ReaderAt) (bool, error) {
	var head [3]byte
	n, err := r.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return false, err
	}
	return bytes.Equal(head[:n], gzipMagic), nil
}

// source is the file as read from its io.Reader. It counts the bytes, so
// that the position of a member is the count less what is still buffered.
// For a gzip file it also keeps the bytes of the current member (its last
// maxHistory bytes if longer), so that reading can start again just after
// the start of a damaged member: corrupt deflate data can make the inflater
// read on over the members that follow it, and they must not be lost with it.
type source struct {
	r io.Reader
	// seeker is r when r can seek (a file, a section of one): then damage
	// is handled by seeking back, and no history is kept. base is where r
	// was when reading started.
	seeker   io.Seeker
	base     int64
	n        int64  // file offset of the next byte Read returns
	replay   []byte // the bytes at offsets [n, n+len(replay)), returned before r is read again
	record   bool   // keep hist
	hist     []byte // the last bytes read from r; they end at offset end
	end      int64  // offset just past the last byte read from r
	keepFrom int64  // hist need not keep the bytes before this offset
}

// maxHistory bounds how far back in a long damaged member reading can start
// again.
const maxHistory = 1 << 20

func (s *source) Read(p []byte) (int, error) {
	if len(s.replay) > 0 {
		n := copy(p, s.replay)
		s.replay = s.replay[n:]
		s.n += int64(n)
		return n, nil
	}
	n, err := s.r.Read(p)
	if n < 0 || n > len(p) {
		return 0, fmt.Errorf("gzmulti: Read of the file returned %d bytes for a buffer of %d", n, len(p))
	}
	if s.record {
		s.keep(p[:n])
	}
	s.n += int64(n)
	s.end = s.n
	return n, err
}

// keep appends b, just read from r, to the history, first dropping what is
// no longer needed when the history is full. The history's capacity stays at
// least twice what it holds, so every byte is moved at most about once.
func (s *source) keep(b []byte) {
	if len(s.hist)+len(b) > cap(s.hist) {
		start := s.end - int64(len(s.hist))
		from := max(s.keepFrom, s.end+int64(len(b))-maxHistory)
		if d := min(from-start, int64(len(s.hist))); d > 0 {
			s.hist = s.hist[:copy(s.hist, s.hist[d:])]
		}
		if need := len(s.hist) + len(b); need > cap(s.hist)/2 {
			h := make([]byte, len(s.hist), 2*need)
			copy(h, s.hist)
			s.hist = h
		}
	}
	s.hist = append(s.hist, b...)
}

// kept returns the n bytes of the file at off if the history still holds them.
func (s *source) kept(off int64, n int) ([]byte, bool) {
	start := s.end - int64(len(s.hist))
	if off < start || off+int64(n) > s.end {
		return nil, false
	}
	return s.hist[off-start : off-start+int64(n)], true
}

// Reader iterates the members of a file. Next moves to the next member, Read
// returns its decompressed bytes. For a plain file, Next returns one member at
// offset 0 (none if the file is empty) and Read returns the file's bytes.
type Reader struct {
	name    string
	src     source
	br      *bufio.Reader
	gz      bool
	inflate member // the gzip member being read
	member  Member
	started bool  // Next has been called
	reading bool  // the current member has not reached its end
	out     int64 // decompressed bytes of the current member so far
	err     error // damage of the current member, returned by Read
	intact  bool  // err is a bad CRC-32 of a member whose structure and size are right

	// What Next found after garbage it reports, returned by the next call.
	pending    bool
	pendingErr error
	next       Member

	scratch []byte // for drain
}

// bufferSize is the read buffer over the file; large enough that inflation,
// not system calls, sets the pace.
const bufferSize = 256 << 10

// NewReader returns a Reader of r, whose name is used in errors. The file is
// gzip if it starts with a gzip member header, whatever its name says (real
// collections hold gzip files named .warc).
func NewReader(r io.Reader, name string) (*Reader, error) {
	z := new(Reader)
	z.br = bufio.NewReaderSize(&z.src, bufferSize)
	if err := z.Reset(r, name); err != nil {
		return nil, err
	}
	return z, nil
}

// Reset makes z read r from its start as a new Reader would, keeping its
// buffers, so that a stage reading many records one after another (each
// from its own offset) allocates once.
func (z *Reader) Reset(r io.Reader, name string) error {
	br, deflate, hist, scratch := z.br, z.inflate.deflate, z.src.hist[:0], z.scratch
	*z = Reader{name: name, src: source{r: r, record: true, hist: hist}, br: br, scratch: scratch}
	z.inflate.deflate = deflate
	// Copying every byte into the history costs a few percent of the
	// inflation time; a source that can seek back does without.
	if sk, ok := r.(io.Seeker); ok {
		if at, err := sk.Seek(0, io.SeekCurrent); err == nil {
			z.src.seeker, z.src.base, z.src.record = sk, at, false
		}
	}
	br.Reset(&z.src)
	head, err := br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return fmt.Errorf("%s: %w", name, err)
	}
	z.gz = bytes.Equal(head, gzipMagic)
	if !z.gz {
		z.src.record = false
	}
	return nil
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
// Damage is returned as an *Error, once; after it Next can be called again
// and goes on with the next member found in the file, so one damaged member
// costs only itself:
//
//   - ErrTruncated, ErrCorrupt, ErrChecksum: the member that Read (or Next,
//     reading the rest of it) was reading is damaged. The search for the next
//     member starts again just after the damaged member's start, since its
//     true end is unknown; the bytes skipped are part of the same damage.
//     A member whose only fault is its CRC-32 ends where its trailer does.
//   - ErrGarbage: bytes that are no member (not a gzip magic, or a magic
//     whose header does not parse) from the error's offset up to the next
//     member, or to the end of the file ("trailing garbage").
//   - ErrTruncated from Next: the file ends inside the header of a member
//     at the error's offset.
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
		z.started = true
		if _, err := z.br.Peek(1); err != nil {
			if err == io.EOF {
				return Member{}, io.EOF
			}
			return Member{}, &Error{z.name, 0, err}
		}
		z.reading = true
		z.member = Member{Offset: 0, Length: -1}
		return z.member, nil
	}
	z.started = true
	if err := z.pendingErr; err != nil {
		z.pendingErr = nil
		return Member{}, err
	}
	if z.pending {
		z.pending = false
		return z.startMember(z.next.Offset), nil
	}
	resync := false
	if z.err != nil {
		// The damaged member was reported. Unless it was intact but for its
		// checksum, its end is not known: look again from just after its
		// start.
		if !z.intact {
			z.rewind(z.member.Offset + 1)
			resync = true
		}
		z.err, z.intact = nil, false
	}
	start := z.position()
	at, truncated, err := z.find()
	if err != nil && err != io.EOF {
		return Member{}, err
	}
	if at > start && !resync {
		skipped := at - start
		if err == io.EOF {
			return Member{}, &Error{z.name, start, fmt.Errorf("%w: %d bytes of trailing garbage after the last member", ErrGarbage, skipped)}
		}
		if truncated {
			z.pendingErr = z.truncatedHeader(at)
		} else {
			z.pending, z.next = true, Member{Offset: at, Length: -1}
		}
		return Member{}, &Error{z.name, start, fmt.Errorf("%w: %d bytes skipped up to the next member at offset %d", ErrGarbage, skipped, at)}
	}
	switch {
	case err == io.EOF:
		return Member{}, io.EOF
	case truncated:
		return Member{}, z.truncatedHeader(at)
	}
	return z.startMember(at), nil
}

func (z *Reader) startMember(at int64) Member {
	z.member = Member{Offset: at, Length: -1}
	z.reading, z.out = true, 0
	return z.member
}

func (z *Reader) truncatedHeader(at int64) error {
	return &Error{z.name, at, fmt.Errorf("%w: the file ends inside the member header", ErrTruncated)}
}

// find looks for the next member from the current position on: a gzip magic
// whose header parses. It returns the member's offset, with the header read
// and the inflater ready; or the offset of a member header the file ends
// inside, with truncated set; or the offset of the end of the file with
// io.EOF.
func (z *Reader) find() (at int64, truncated bool, err error) {
	for {
		at = z.position()
		z.src.keepFrom = at
		head, err := z.br.Peek(len(gzipMagic))
		switch {
		case bytes.Equal(head, gzipMagic):
			herr := z.inflate.Reset(z.br)
			if herr == nil {
				return at, false, nil
			}
			ended := herr == io.EOF || herr == io.ErrUnexpectedEOF
			if !ended && herr != errHeader {
				return at, false, &Error{z.name, at, herr}
			}
			// Not a member after all; its header may have taken bytes of
			// the members that follow (a long extra field, a name without
			// its NUL).
			z.rewind(at + 1)
			serr := z.skipToMagic()
			if serr == io.EOF && ended {
				return at, true, nil
			}
			if serr != nil && serr != io.EOF {
				return at, false, serr
			}
		case len(head) == 0 && err == io.EOF:
			return at, false, io.EOF
		case err == io.EOF && bytes.HasPrefix(gzipMagic, head):
			// The file ends in the first bytes of a magic.
			z.br.Discard(len(head))
			return at, true, nil
		case err != nil && err != io.EOF:
			return at, false, &Error{z.name, at, err}
		default:
			z.br.Discard(1)
			if serr := z.skipToMagic(); serr != nil && serr != io.EOF {
				return at, false, serr
			}
		}
	}
}

// Read reads decompressed bytes of the current member.
func (z *Reader) Read(p []byte) (int, error) {
	if !z.reading {
		if z.err != nil {
			return 0, z.err
		}
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if z.gz {
		n, err = z.inflate.Read(p)
	} else {
		n, err = z.br.Read(p)
	}
	z.out += int64(n)
	if err == nil {
		return n, nil
	}
	z.reading = false
	if err == io.EOF {
		z.member.Length = z.position() - z.member.Offset
		return n, io.EOF
	}
	z.err = z.memberError(err)
	// A trailer whose size is the size inflated means the deflate data
	// ended where the member did and only the CRC-32 is wrong; otherwise the
	// inflater may have run on into what follows.
	z.intact = err == ErrChecksum && z.inflate.sizeOK
	return n, z.err
}

// memberError names the damage an inflater reported, with the member offset.
func (z *Reader) memberError(err error) error {
	var corrupt corruptError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = ErrTruncated
	case errors.As(err, &corrupt):
		err = fmt.Errorf("%w at byte %d of the member", ErrCorrupt, corrupt.Offset)
	}
	return &Error{z.name, z.member.Offset, err}
}

// drain reads the current member to its end.
func (z *Reader) drain() error {
	if z.scratch == nil {
		z.scratch = make([]byte, 32<<10)
	}
	for z.reading {
		if _, err := z.Read(z.scratch); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// rewind moves the reading position back to file offset off, or as near to
// it as the history allows, so that the bytes from there on are read again.
func (z *Reader) rewind(off int64) {
	pos := z.position()
	if off >= pos {
		z.br.Discard(int(off - pos))
		return
	}
	s := &z.src
	if s.seeker != nil {
		if _, err := s.seeker.Seek(s.base+off, io.SeekStart); err == nil {
			s.n, s.end, s.replay = off, off, s.replay[:0]
			z.br.Reset(s)
		}
		return
	}
	if start := s.end - int64(len(s.hist)); off < start {
		off = start
	}
	b, ok := s.kept(off, int(s.end-off))
	if !ok || off >= pos {
		return
	}
	s.replay = append(s.replay[:0], b...)
	s.n = off
	z.br.Reset(s)
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

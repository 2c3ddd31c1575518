package gzmember

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Setting is one way zlib can compress: deflateInit2's parameters (the
// method is always Z_DEFLATED).
type Setting struct {
	Level      int // 0-9
	MemLevel   int // 1-9; zlib's default is 8
	WindowBits int // 9-15 (raw deflate: passed to zlib negated); writers use 15
	Strategy   int // 0 Z_DEFAULT_STRATEGY, 1 Z_FILTERED, 2 Z_HUFFMAN_ONLY, 3 Z_RLE, 4 Z_FIXED
	// FlushBeforeFinish: the writer flushed the stream (Z_SYNC_FLUSH, or
	// Z_FULL_FLUSH, which makes the same bytes there) after its last byte
	// and then finished it, so that the deflate data ends in an empty
	// stored block and an empty final block (00 00 ff ff 03 00): Python's
	// gzip.GzipFile.flush() before close(), as warcprox and the older
	// pywb and webrecorder writers do.
	FlushBeforeFinish bool
}

func (s Setting) String() string {
	str := fmt.Sprintf("level %d memLevel %d", s.Level, s.MemLevel)
	if s.WindowBits != 15 {
		str += fmt.Sprintf(" windowBits %d", s.WindowBits)
	}
	if s.Strategy != 0 {
		str += fmt.Sprintf(" strategy %d", s.Strategy)
	}
	if s.FlushBeforeFinish {
		str += ", flushed before finish"
	}
	return str
}

// DefaultOrder is the zlib settings a Rebuilder tries, most likely first:
// level 6 (Z_DEFAULT_COMPRESSION, Java's Deflater's default: Heritrix,
// NetarchiveSuite, pywb's writer in the corpus), level 9 (wget, Nutch,
// wpull, Python's gzip module in the corpus), then the other levels by closeness to those two (7, 8, 5, 4,
// then the fast levels 1-3, which few choose for archives); all with
// memLevel 8 (zlib's default, which almost every caller keeps), then the
// same levels with memLevel 9 (MAX_MEM_LEVEL, chosen by a few tools); then
// all of these again flushed before finish (Python's GzipFile flushed
// before close: warcprox, older pywb), level 9 first since Python's gzip
// module defaults to it. The window is always 32 KiB (windowBits 15) and
// the strategy the default: writers that change either are rare enough
// that trying them would cost every member that cannot be rebuilt more
// than it would gain. A Rebuilder tries the setting that matched last
// first, so the order costs once per writer, not per member.
var DefaultOrder = func() []Setting {
	var s []Setting
	for _, flush := range []bool{false, true} {
		levels := []int{6, 9, 7, 8, 5, 4, 1, 2, 3}
		if flush {
			levels = []int{9, 6, 7, 8, 5, 4, 1, 2, 3}
		}
		for _, mem := range []int{8, 9} {
			for _, level := range levels {
				s = append(s, Setting{Level: level, MemLevel: mem, WindowBits: 15, FlushBeforeFinish: flush})
			}
		}
	}
	return s
}()

// ErrNotRebuildable says that no setting tried reproduces the member: the
// caller writes a fresh member, as it would without a description.
var ErrNotRebuildable = errors.New("no zlib setting reproduces the gzip member")

// ErrUnavailable is returned by every rebuild in a build without zlib
// (CGO_ENABLED=0, or -tags nozlib). It wraps ErrNotRebuildable: the caller
// does what it does for a member that cannot be rebuilt.
var ErrUnavailable = fmt.Errorf("%w: this build has no zlib (built without cgo or with -tags nozlib)", ErrNotRebuildable)

// ErrChanged says that a member too large to keep in memory matched when
// compressed once, and its inflated bytes did not compress to it again as
// they were written out: they changed between two reads. What was written
// to the writer is not the member and must be discarded.
var ErrChanged = errors.New("the inflated bytes changed between two reads of them: the bytes written are not the member")

// WriteError is a failure of the writer a rebuilt member goes to.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing the rebuilt gzip member: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// DefaultPatience is the members in a row no setting makes after which a
// Rebuilder tries only its likeliest setting (see Rebuilder.Patience).
const DefaultPatience = 8

// DefaultMaxBuffer is the largest member a Rebuilder keeps in memory until
// it is known to match (see Rebuilder.MaxBuffer).
const DefaultMaxBuffer = 4 << 20

// A Rebuilder rebuilds members from their descriptions and inflated bytes.
// One is used by one goroutine at a time; it keeps its zlib stream and
// buffers from one member to the next. Its memory is bounded: two 64 KiB
// buffers, one zlib stream (256 KB at memLevel 8, 384 KB at 9), and a
// member of at most MaxBuffer bytes.
type Rebuilder struct {
	// Order is the settings tried; nil means DefaultOrder. The setting
	// that matched last is tried first (the members of one file, and
	// mostly of one collection, come from one writer), then the others in
	// this order.
	Order []Setting
	// MaxBuffer: a member of at most this many bytes is compressed once
	// into memory and written out when it matched; a larger one is
	// compressed once to be hashed, and once more as it is written out
	// (see ErrChanged). 0 means DefaultMaxBuffer.
	MaxBuffer int64
	// Patience bounds what members of a writer other than zlib cost: after
	// this many members in a row that no setting made, only the likeliest
	// setting (the last that matched, else Order's first) is tried, until
	// a member matches again or Reset is called. A member no setting makes
	// costs every setting's compression (a small one, a whole compression
	// each); once narrowed, one compression, about what writing a fresh
	// member costs. 0 means DefaultPatience; negative, never narrow.
	Patience int

	z      deflater
	last   Setting // what matched last; the zero Setting if nothing did yet
	misses int     // members in a row that no setting made
	in     []byte
	out    []byte
	buf    []byte
	sums   [SHA256 + 1]hash.Hash // by Description.Hash, made when first needed
	tried  int64
	// noPrefix turns the Prefix check off, for the benchmark that
	// measures what it saves.
	noPrefix bool
}

// NewRebuilder returns a Rebuilder trying DefaultOrder.
func NewRebuilder() *Rebuilder { return new(Rebuilder) }

// Close frees the zlib stream now rather than when r is garbage.
func (r *Rebuilder) Close() { r.z.close() }

// Reset forgets the members that no setting made, so that every setting
// is tried again; the setting that matched last is still tried first. Call
// it when the members to come may be of another writer (another file).
func (r *Rebuilder) Reset() { r.misses = 0 }

// Narrowed reports whether only the likeliest setting is tried now (see
// Patience).
func (r *Rebuilder) Narrowed() bool {
	p := r.Patience
	if p == 0 {
		p = DefaultPatience
	}
	return p > 0 && r.misses >= p
}

// Tried is the number of settings tried (compressions started) so far.
func (r *Rebuilder) Tried() int64 { return r.tried }

// Available reports whether this build can rebuild members at all (it has
// zlib); without it every Rebuild returns ErrUnavailable.
func Available() bool { return zlibAvailable }

// ZlibVersion is the version of the zlib this build runs (zlibVersion()),
// "" without zlib. Members written by one zlib are rebuilt by another as
// long as its deflate makes the same bytes: the corpus's members, written
// over a decade through the zlib of Java, wget and Python, are rebuilt by
// Debian's 1.2.13. A zlib with another deflate (zlib-ng, the system zlib
// of some distributions; perhaps Chromium's fork, which Node.js bundles)
// rebuilds fewer members, never a wrong one: the SHA-256 decides.
func ZlibVersion() string { return zlibVersion() }

// Rebuild writes to w the member d describes, compressed from its inflated
// bytes, if a zlib setting reproduces it bit for bit: its header as d
// keeps it, the deflate data zlib makes, and the trailer of the inflated
// bytes, all of which must hash to d.Sum. It returns the setting that
// did. open gives the inflated bytes from their start; it is called once
// per setting tried (and once more for a member larger than MaxBuffer that
// matched), each reader read at most to its end and closed if it is an
// io.Closer.
//
// ErrNotRebuildable (or ErrUnavailable, which wraps it) means no setting
// reproduces the member and nothing was written. An error of open or of
// its readers is returned wrapped; a failure of w is a *WriteError; and
// ErrChanged means bytes were written that are not the member. Only a nil
// error means w got the member.
func (r *Rebuilder) Rebuild(d *Description, open func() (io.Reader, error), w io.Writer) (Setting, error) {
	if !zlibAvailable {
		return Setting{}, ErrUnavailable
	}
	if err := r.check(d); err != nil {
		return Setting{}, err
	}
	if r.in == nil {
		r.in, r.out = make([]byte, 64<<10), make([]byte, 64<<10)
	}
	if r.sums[d.Hash] == nil {
		r.sums[d.Hash] = d.Hash.New()
	}
	sum := r.sums[d.Hash]
	maxBuf := r.MaxBuffer
	if maxBuf <= 0 {
		maxBuf = DefaultMaxBuffer
	}
	buffered := d.Length <= maxBuf
	order := r.Order
	if order == nil {
		order = DefaultOrder
	}
	try := func(s Setting) (bool, error) {
		m := &memberSink{d: d, sum: sum, checkPrefix: !r.noPrefix}
		if buffered {
			if int64(cap(r.buf)) < d.Length {
				r.buf = make([]byte, 0, d.Length)
			}
			m.keep = r.buf[:0]
		}
		ok, err := r.compress(s, open, m)
		if !ok || err != nil {
			return false, err
		}
		r.last = s
		if buffered {
			if _, err := w.Write(m.keep); err != nil {
				return true, &WriteError{err}
			}
			return true, nil
		}
		// Matched, and too large to have been kept: again, out to w.
		m = &memberSink{d: d, sum: sum, checkPrefix: !r.noPrefix, w: w}
		again, err := r.compress(s, open, m)
		switch {
		case m.werr != nil:
			return true, &WriteError{m.werr}
		case err != nil:
			return true, err
		case !again:
			return true, ErrChanged
		}
		return true, nil
	}
	first := r.last
	if first == (Setting{}) && len(order) > 0 {
		first = order[0]
	}
	if first != (Setting{}) {
		if ok, err := try(first); ok || err != nil {
			if ok {
				r.misses = 0
			}
			return first, err
		}
	}
	if r.Narrowed() {
		return Setting{}, errNarrowed
	}
	for _, s := range order {
		if s == first {
			continue
		}
		if ok, err := try(s); ok || err != nil {
			if ok {
				r.misses = 0
			}
			return s, err
		}
	}
	r.misses++
	return Setting{}, ErrNotRebuildable
}

// errNarrowed is ErrNotRebuildable from a Rebuilder that tried only its
// likeliest setting.
var errNarrowed = fmt.Errorf("%w (only the likeliest setting tried: the members before it were not zlib's either)", ErrNotRebuildable)

// check refuses a description no member can match, before any work.
func (r *Rebuilder) check(d *Description) error {
	if err := checkHeader(d.Header); err != nil {
		return fmt.Errorf("gzip member description: header: %w", err)
	}
	if d.Length < int64(len(d.Header))+minDeflate+trailerLength {
		return fmt.Errorf("gzip member description: %d bytes leave no room for deflate data and trailer after a %d-byte header", d.Length, len(d.Header))
	}
	return nil
}

// errMismatch stops a compression whose output already differs from the
// member.
var errMismatch = errors.New("the output differs from the member")

// compress compresses the inflated bytes open gives with s into m and
// reports whether the result is the member.
func (r *Rebuilder) compress(s Setting, open func() (io.Reader, error), m *memberSink) (bool, error) {
	r.tried++
	if err := r.z.reset(s); err != nil {
		return false, err
	}
	src, err := open()
	if err != nil {
		return false, fmt.Errorf("opening the inflated bytes: %w", err)
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	m.sum.Reset()
	if err := m.write(m.d.Header); err != nil {
		return false, nil
	}
	var crc, size uint32
	for {
		n, rerr := src.Read(r.in)
		if n > 0 {
			crc = crc32.Update(crc, crc32.IEEETable, r.in[:n])
			size += uint32(n)
			if err := r.deflate(r.in[:n], flushNone, m); err != nil {
				return false, noMismatch(err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false, fmt.Errorf("reading the inflated bytes: %w", rerr)
		}
	}
	if s.FlushBeforeFinish {
		if err := r.deflate(nil, flushSync, m); err != nil {
			return false, noMismatch(err)
		}
	}
	if err := r.deflate(nil, flushFinish, m); err != nil {
		return false, noMismatch(err)
	}
	var t [trailerLength]byte
	binary.LittleEndian.PutUint32(t[:4], crc)
	binary.LittleEndian.PutUint32(t[4:], size)
	if err := m.write(t[:]); err != nil {
		return false, noMismatch(err)
	}
	return m.matches(), nil
}

// noMismatch turns errMismatch into no error: the setting does not match.
func noMismatch(err error) error {
	if err == errMismatch {
		return nil
	}
	return err
}

// deflate runs zlib over in with the flush mode given (flushNone,
// flushSync or flushFinish, to the end of the stream), giving its output
// to m.
func (r *Rebuilder) deflate(in []byte, flush int, m *memberSink) error {
	for {
		consumed, produced, end, err := r.z.step(in, r.out, flush)
		if err != nil {
			return err
		}
		in = in[consumed:]
		if produced > 0 {
			if err := m.write(r.out[:produced]); err != nil {
				return err
			}
		}
		switch {
		case flush == flushFinish && end:
			return nil
		case flush == flushFinish || len(in) > 0 || produced == len(r.out):
			// More to take, or output zlib still holds.
		default:
			return nil
		}
	}
}

// memberSink takes a candidate member's bytes as they are made and checks
// them against the description: never more than its length, its prefix
// CRC-32 once past it, its sum at the end. It keeps them, or writes
// them on, as asked.
type memberSink struct {
	d           *Description
	n           int64
	prefix      uint32
	checkPrefix bool
	sum         hash.Hash
	keep        []byte    // the bytes, when kept
	w           io.Writer // where they go, when written on
	werr        error
}

func (m *memberSink) write(p []byte) error {
	if m.n+int64(len(p)) > m.d.Length {
		return errMismatch
	}
	if k := min(PrefixLength, m.d.Length) - m.n; k > 0 {
		m.prefix = crc32.Update(m.prefix, crc32.IEEETable, p[:min(int64(len(p)), k)])
		if m.checkPrefix && m.n+int64(len(p)) >= min(PrefixLength, m.d.Length) && m.prefix != m.d.Prefix {
			return errMismatch
		}
	}
	m.n += int64(len(p))
	m.sum.Write(p)
	if m.keep != nil {
		m.keep = append(m.keep, p...)
	}
	if m.w != nil {
		if _, err := m.w.Write(p); err != nil {
			m.werr = err
			return err
		}
	}
	return nil
}

func (m *memberSink) matches() bool {
	var got [32]byte
	return m.n == m.d.Length && m.prefix == m.d.Prefix && bytes.Equal(m.sum.Sum(got[:0]), m.d.Sum[:])
}

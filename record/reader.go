// Package record reads the records of WARC (0.17, 0.18, 1.0, 1.1) and ARC
// (v1, v2) files, plain or gzip, with each record's offset and length in the
// file as stored. It is tolerant of what real crawlers wrote (LF-only lines,
// lower-case version lines, folded and repeated fields, missing or extra
// blank lines between records, ARC length quirks) and strict about what
// matters for deduplication: a record is only whole when its block has all
// of its declared bytes and ends where the next record, or the gzip member,
// ends. Damage is reported with file and offset, and reading goes on at the
// next record where the file allows it. NewStreamReader reads files whose
// gzip members are not records (a file gzipped whole), with offsets in the
// inflated stream, for conversion and recompression.
package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"warcdedup/gzmulti"
)

// Format is the container format of a file.
type Format int

// The formats a Reader knows.
const (
	WARC Format = iota + 1
	ARC
)

func (f Format) String() string {
	switch f {
	case WARC:
		return "WARC"
	case ARC:
		return "ARC"
	}
	return "unknown"
}

// Record is the header of one record and where it is stored.
type Record struct {
	Format Format
	// Offset is where the record starts in the file as stored (its gzip
	// member for .gz). For a Reader of NewStreamReader it is the offset in
	// the inflated stream instead, which no later stage can use to address
	// the record.
	Offset int64
	Length int64 // bytes it occupies from Offset on (as Offset counts them); set by Finish

	// Version is the WARC version line as written ("WARC/1.0", "warc/0.17")
	// or, for ARC, the file's version ("1" or "2").
	Version string
	// Header holds a WARC record's named fields; it is empty for ARC.
	Header Header
	// Type is WARC-Type in lower case. ARC records are typed by content:
	// "filedesc" for the file header, "response" for HTTP records, "resource"
	// for everything else (dns:, metadata:, ...).
	Type string
	// URI is WARC-Target-URI or the ARC URL, as written.
	URI string
	// Date is WARC-Date as written, or the ARC date as YYYY-MM-DDThh:mm:ssZ;
	// "" when the record has none that can be used.
	Date string
	// BlockLength is Content-Length (WARC) or Archive-length (ARC).
	BlockLength int64
	// HeaderLength is the length of the WARC header or ARC record line,
	// through the blank line (WARC) or line feed (ARC) that ends it.
	HeaderLength int64

	// ARCLine is the ARC record line without its line feed; ARCFields holds
	// its fields: URL, IP-address, Archive-date, Content-type, Archive-length,
	// and for v2 also Result-code, Checksum, Location, Offset, Filename.
	ARCLine   string
	ARCFields ARCFields
}

// ARCFields are the fields of an ARC record line.
type ARCFields struct {
	URL, IP, Date, ContentType, ResultCode, Checksum, Location, Offset, Filename string
}

// Error is damage in a record or between records, found at Offset.
type Error struct {
	Name   string
	Offset int64
	Err    error
	// Inflated is set when Offset counts bytes of the inflated stream of a
	// gzip file (a Reader of NewStreamReader), not bytes of the file.
	Inflated bool
}

func (e *Error) Error() string {
	if e.Inflated {
		return fmt.Sprintf("%s: inflated offset %d: %v", e.Name, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: offset %d: %v", e.Name, e.Offset, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// The kinds of damage, wrapped in an *Error.
var (
	ErrTruncated     = errors.New("record truncated")
	ErrBadHeader     = errors.New("malformed record header")
	ErrNoRecord      = errors.New("no record starts here")
	ErrRecordEnd     = errors.New("record does not end where its length says")
	ErrMultiRecord   = errors.New("gzip member holds more than one record")
	ErrHeaderTooLong = errors.New("header too long")
)

// Limits that keep memory bounded on hostile or broken input.
const (
	bufferSize    = 256 << 10 // decompressed bytes buffered
	maxHeader     = 4 << 20   // a WARC header, or an ARC record line
	maxHTTPHead   = 1 << 20   // HTTP status line and headers
	maxARCLineLen = 64 << 10  // longest line taken as an ARC record line when resynchronising
)

type state int

const (
	idle     state = iota // between records
	inRecord              // Next returned a record; its block may be read
)

// Reader reads the records of one file.
type Reader struct {
	name string
	z    *gzmulti.Reader
	br   *bufio.Reader // decompressed bytes of the current member, or the plain file

	format     Format
	arcVersion int

	pos          int64 // offset in the decompressed stream of the next byte of br
	memberOffset int64 // offset of the current gzip member
	needMember   bool  // gzip: the next record starts in the next member

	// stream is set for a Reader of NewStreamReader: br reads it, and
	// members are no record boundaries. streamReported is set once the
	// damage it stopped at was returned to the caller, so that Next can go
	// on after it.
	stream         *gzmulti.Stream
	streamReported bool

	st        state
	rec       Record
	blockLeft int64
	finishErr error
	http      HTTPHead
	hbuf      []byte
	// header is the current record's header as stored, when keepHeader.
	header     []byte
	keepHeader bool
	raw        []byte // a WARC header's names and values, while it is read
	spans      []span // where each name and value is in raw
	peekErr    error  // what stopped recordAt's look ahead short, if anything
	// trailer holds the line ends Finish read after the block (at most
	// maxTrailer of them), trailerLen how many there were.
	trailer    []byte
	trailerLen int64
	capture    bool
	base       int64 // added to the offsets that errors report
}

// span locates a header field's name and value in Reader.raw.
type span struct{ name, value [2]int }

// NewReader returns a Reader of the file r, whose name is used in errors.
func NewReader(r io.Reader, name string) (*Reader, error) {
	z, err := gzmulti.NewReader(r, name)
	if err != nil {
		return nil, err
	}
	return &Reader{name: name, z: z, br: bufio.NewReaderSize(z, bufferSize), needMember: true}, nil
}

// Reuse returns r reset onto src, or a new Reader of src when r is nil:
// a stage that reads many files, or many single records, keeps one Reader
// and its buffers of a few hundred kB instead of making one for each.
func Reuse(r *Reader, src io.Reader, name string) (*Reader, error) {
	if r == nil {
		return NewReader(src, name)
	}
	return r, r.Reset(src, name)
}

// Reset makes r read the file src from its start as a new Reader would,
// keeping its buffers: stages that read many single records, each from its
// own offset (warccollres, warcrefs), then allocate once per worker.
func (r *Reader) Reset(src io.Reader, name string) error {
	if err := r.z.Reset(src, name); err != nil {
		return err
	}
	var stream *gzmulti.Stream
	if r.stream != nil {
		stream = gzmulti.NewStream(r.z)
		r.br.Reset(stream)
	} else {
		r.br.Reset(r.z)
	}
	*r = Reader{name: name, z: r.z, br: r.br, needMember: stream == nil, stream: stream, http: HTTPHead{Raw: r.http.Raw[:0]}, hbuf: r.hbuf[:0], raw: r.raw[:0], spans: r.spans[:0], trailer: r.trailer[:0],
		header: r.header[:0], keepHeader: r.keepHeader}
	return nil
}

// SetBase makes errors report offsets plus base, for a Reader of a section
// of a file that starts at base: messages then name offsets in the file,
// not in the section. Record offsets (Record.Offset) stay in the section.
func (r *Reader) SetBase(base int64) { r.base = base }

// RawHeader is the header of the current record as stored (uncompressed):
// a WARC record's version line through the blank line that ends its
// header, an ARC record line with its line feed. It is valid until the
// next call to Next.
func (r *Reader) RawHeader() []byte { return r.header }

// KeepHeaders makes the Reader keep each record's header as stored, for
// RawHeader; it costs a copy of every header, so it is off by default.
func (r *Reader) KeepHeaders(keep bool) { r.keepHeader = keep }

// Compressed reports whether the file is gzip.
func (r *Reader) Compressed() bool { return r.z.Compressed() }

// Format is the file's format, known once the first record was read.
func (r *Reader) Format() Format { return r.format }

func (r *Reader) errorAt(off int64, err error) error {
	return &Error{Name: r.name, Offset: r.base + off, Err: err, Inflated: r.stream != nil && r.z.Compressed()}
}

// Next returns the next record, positioned at the start of its block, or
// io.EOF. The Record is reused: it is valid until the next call to Next.
// Damage is returned as an *Error; call Next again to go on with the next
// record. Any other error (reading the file failed) ends the file.
//
// If the previous record was not finished, Next finishes it first and
// returns its damage, if any, before moving on. Each problem is reported
// once: in a plain file the bytes skipped to reach the next record are
// described in the report of the damage that made them unreadable, and
// damage already returned by Read, WriteTo, ReadHTTPHead or Finish is not
// returned again.
func (r *Reader) Next() (*Record, error) {
	if r.st == inRecord {
		if r.finishErr != nil {
			// Reading the block already returned the damage (a plain file
			// ends there; a gzip member is left for the next one): it is
			// not reported again.
			r.st = idle
		} else if err := r.Finish(); err != nil {
			return nil, err
		}
	}
	r.st = idle
	switch {
	case r.stream != nil:
		return r.nextInStream()
	case r.z.Compressed():
		return r.nextInMember()
	}
	return r.nextPlain()
}

func (r *Reader) nextInMember() (*Record, error) {
	for {
		if r.needMember {
			m, err := r.z.Next()
			if err != nil {
				return nil, r.gzipError(err)
			}
			r.br.Reset(r.z)
			r.pos, r.memberOffset, r.needMember = 0, m.Offset, false
		}
		// One record per member. A member with nothing but line ends (some
		// writers close a file with one) holds no record.
		if err := r.skipLineEnds(); err != nil {
			r.needMember = true
			if err == io.EOF {
				continue
			}
			return nil, r.gzipError(err)
		}
		r.needMember = true
		if err := r.readHeader(r.memberOffset); err != nil {
			return nil, err
		}
		return &r.rec, nil
	}
}

func (r *Reader) nextPlain() (*Record, error) {
	if r.needMember {
		if _, err := r.z.Next(); err != nil {
			return nil, err
		}
		r.br.Reset(r.z)
		r.needMember = false
	}
	if err := r.skipLineEnds(); err != nil {
		return nil, err // io.EOF at the end of the file
	}
	start := r.pos
	if err := r.readHeader(start); err != nil {
		var damage *Error
		if !errors.As(err, &damage) || r.streamReported {
			return nil, err
		}
		// Move on to the next record now, so that the bytes skipped are
		// reported with the damage that caused the skip, once.
		from := r.pos
		skipped, serr := r.skipJunk()
		if r.damageFollows(serr) {
			skipped = r.skippedToDamage(from)
		} else if serr != nil {
			return nil, serr
		}
		if skipped != "" {
			damage.Err = fmt.Errorf("%w; %s", damage.Err, skipped)
		}
		return nil, damage
	}
	return &r.rec, nil
}

// skipJunk moves a plain file past bytes that start no record: line ends,
// then anything up to the next record start or the end of the file. It
// describes the bytes skipped other than line ends, "" if there were none.
func (r *Reader) skipJunk() (string, error) {
	if err := r.skipLineEnds(); err != nil {
		if err == io.EOF {
			return "", nil
		}
		return "", err
	}
	if r.atRecordStart() {
		return "", nil
	}
	return r.skipToNext()
}

// skipToNext skips from a position that starts no record to the next record
// start or the end of the file and describes what it skipped.
func (r *Reader) skipToNext() (string, error) {
	from := r.pos
	err := r.skipToRecord()
	switch {
	case err == io.EOF:
		return fmt.Sprintf("%d bytes at offset %d skipped up to the end of the file", r.pos-from, r.base+from), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("%d bytes at offset %d skipped up to the next record at offset %d", r.pos-from, r.base+from, r.base+r.pos), nil
}

// gzipError passes gzmulti damage on as a record Error, and anything else
// (io.EOF, read errors) as it is. A member that ends early cuts its record
// short: that is ErrTruncated as much as a clipped plain file.
func (r *Reader) gzipError(err error) error {
	var ge *gzmulti.Error
	if !errors.As(err, &ge) {
		return err
	}
	r.noteStreamDamage(ge)
	if errors.Is(ge.Err, gzmulti.ErrTruncated) {
		return &Error{Name: r.name, Offset: r.base + ge.Offset, Err: fmt.Errorf("%w: %w", ErrTruncated, ge.Err)}
	}
	return &Error{Name: r.name, Offset: r.base + ge.Offset, Err: ge.Err}
}

// skipLineEnds consumes CR and LF bytes; io.EOF if nothing else follows.
func (r *Reader) skipLineEnds() error {
	for {
		buf, err := r.br.Peek(1)
		if len(buf) == 0 {
			if err == nil {
				err = io.EOF
			}
			return err
		}
		n := 0
		buf, _ = r.br.Peek(r.br.Buffered())
		for n < len(buf) && (buf[n] == '\r' || buf[n] == '\n') {
			n++
		}
		if r.capture {
			r.trailerLen += int64(n)
			r.trailer = append(r.trailer, buf[:min(n, maxTrailer-len(r.trailer))]...)
		}
		r.discard(n)
		if n < len(buf) {
			return nil
		}
	}
}

// maxTrailer is the most line ends after a block that Trailer keeps.
const maxTrailer = 64

// Trailer returns the line ends that Finish read after the current
// record's block (CRLF CRLF as written; real files have others), and
// whether that is all of them: more than a few dozen are not kept. It is
// valid until the next call to Next.
func (r *Reader) Trailer() ([]byte, bool) {
	return r.trailer, r.trailerLen == int64(len(r.trailer))
}

func (r *Reader) discard(n int) {
	d, _ := r.br.Discard(n)
	r.pos += int64(d)
}

// readLine returns the next line, without its line end (LF, CRLF, or the
// CR CR LF of files that went through a text-mode conversion). The returned
// slice is valid until the next read of the file: it is the read buffer
// itself when the line is whole in it, else r.hbuf, where the fragments of a
// line longer than the buffer are gathered. total counts header bytes read
// so far, against maxHeader.
func (r *Reader) readLine(total *int) ([]byte, error) {
	frag, err := r.br.ReadSlice('\n')
	line := frag
	if err == bufio.ErrBufferFull {
		r.hbuf = r.hbuf[:0]
		for err == bufio.ErrBufferFull && *total+len(r.hbuf)+len(frag) <= maxHeader {
			r.hbuf = append(r.hbuf, frag...)
			frag, err = r.br.ReadSlice('\n')
		}
		r.hbuf = append(r.hbuf, frag...)
		line = r.hbuf
	}
	r.pos += int64(len(line))
	*total += len(line)
	if *total > maxHeader {
		return nil, ErrHeaderTooLong
	}
	if r.keepHeader {
		r.header = append(r.header, line...)
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	for len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// readHeader reads the header of the record starting at offset start.
func (r *Reader) readHeader(start int64) error {
	// The first record tells the format; until one is recognised, a line of
	// either format starts a record. The same test finds records when
	// resynchronising, so a record is recognised the same way wherever it is.
	kind := r.recordAt()
	if r.format == 0 {
		r.format = kind
	}
	if kind == 0 {
		var ge *gzmulti.Error
		if errors.As(r.peekErr, &ge) {
			// The member is damaged where a record should start.
			return r.gzipError(ge)
		}
		line, _ := r.br.Peek(min(80, r.br.Buffered()))
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimRight(line, "\r")
		what := "a WARC version line"
		switch r.format {
		case 0:
			what = "a WARC version line or an ARC record line"
		case ARC:
			what = "an ARC record line"
		}
		return r.errorAt(start, fmt.Errorf("%w: %q is not %s", ErrNoRecord, clip(line), what))
	}
	r.rec = Record{Format: r.format, Offset: start, Length: -1}
	r.header = r.header[:0]
	headerStart := r.pos
	var err error
	if r.format == WARC {
		err = r.readWARCHeader()
	} else {
		err = r.readARCHeader()
	}
	if err != nil {
		var ge *gzmulti.Error
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			err = fmt.Errorf("%w: the file ends inside the record header", ErrTruncated)
		case errors.As(err, &ge):
			return r.gzipError(ge)
		}
		return r.errorAt(start, err)
	}
	r.rec.HeaderLength = r.pos - headerStart
	r.blockLeft = r.rec.BlockLength
	r.st = inRecord
	r.finishErr = nil
	return nil
}

// isVersionLine reports whether line, without its line end, is a WARC
// version line: "WARC/" in either case, a version number of digits and dots,
// and nothing else but blanks.
func isVersionLine(line []byte) bool {
	if len(line) > maxVersionLine || len(line) < 6 || !bytes.EqualFold(line[:5], []byte("WARC/")) {
		return false
	}
	v := bytes.TrimRight(line[5:], " \t\r")
	if len(v) == 0 || v[0] < '0' || v[0] > '9' {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

func (r *Reader) readWARCHeader() error {
	total := 0
	line, err := r.readLine(&total)
	if err != nil {
		return err
	}
	if !isVersionLine(line) {
		return fmt.Errorf("%w: %q is not a WARC version line", ErrNoRecord, clip(line))
	}
	// The fields are sliced out of one string holding the whole header, so a
	// record costs one allocation for all of its names and values.
	// raw and spans are the Reader's, reused from record to record.
	spans, raw := r.spans[:0], r.raw[:0]
	defer func() { r.spans, r.raw = spans, raw }()
	version := versionString(bytes.TrimSpace(line))
	for {
		line, err := r.readLine(&total)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(spans) == 0 {
				return fmt.Errorf("%w: continuation line before any field", ErrBadHeader)
			}
			// A folded value: join with one space.
			last := &spans[len(spans)-1]
			if last.value[1] != len(raw) {
				return fmt.Errorf("%w: folded line out of place", ErrBadHeader)
			}
			more := bytes.TrimSpace(line)
			if len(more) == 0 {
				continue
			}
			if last.value[1] > last.value[0] {
				raw = append(raw, ' ')
			}
			raw = append(raw, more...)
			last.value[1] = len(raw)
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return fmt.Errorf("%w: %q is not a field", ErrBadHeader, clip(line))
		}
		var s span
		s.name[0] = len(raw)
		raw = append(raw, bytes.TrimSpace(line[:colon])...)
		s.name[1] = len(raw)
		s.value[0] = len(raw)
		raw = append(raw, bytes.TrimSpace(line[colon+1:])...)
		s.value[1] = len(raw)
		spans = append(spans, s)
	}
	all := string(raw)
	h := make(Header, len(spans))
	for i, s := range spans {
		h[i] = Field{Name: all[s.name[0]:s.name[1]], Value: all[s.value[0]:s.value[1]]}
	}
	rec := &r.rec
	rec.Version, rec.Header = version, h
	// The first of each of the fields a Record has a member for, as
	// Header.Get finds them, in one pass.
	var own [numOwnFields]int
	for i := len(h) - 1; i >= 0; i-- {
		if k := ownField(h[i].Name); k >= 0 {
			own[k] = i + 1
		}
	}
	get := func(k int) string {
		if own[k] == 0 {
			return ""
		}
		return h[own[k]-1].Value
	}
	rec.Type = strings.ToLower(get(fieldType))
	rec.URI = get(fieldURI)
	rec.Date = get(fieldDate)
	if own[fieldLength] == 0 {
		return fmt.Errorf("%w: no Content-Length", ErrBadHeader)
	}
	cl := get(fieldLength)
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: Content-Length %q is not a length", ErrBadHeader, clip([]byte(cl)))
	}
	rec.BlockLength = n
	return nil
}

// The WARC fields a Record has members for, as ownField numbers them.
const (
	fieldType = iota
	fieldURI
	fieldDate
	fieldLength
	numOwnFields
)

var ownFieldNames = [numOwnFields]string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "Content-Length"}

// ownField returns which of the fields a Record has a member for name is
// (compared as Header.Get does), or -1. No letter of those names has a
// case-folding partner outside ASCII (as K has the Kelvin sign), so a name
// that matches has the same length: most names cost a length comparison.
func ownField(name string) int {
	for k, own := range ownFieldNames {
		if len(name) == len(own) && strings.EqualFold(name, own) {
			return k
		}
	}
	return -1
}

// versionString returns the version line v as a string, without allocating
// for the versions nearly every record has.
func versionString(v []byte) string {
	for _, known := range [...]string{"WARC/1.0", "WARC/1.1", "WARC/0.17", "WARC/0.18"} {
		if string(v) == known {
			return known
		}
	}
	return string(v)
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

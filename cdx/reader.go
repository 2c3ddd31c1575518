package cdx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// MaxLineLength is the longest line a Reader accepts; a longer one is
// reported as bad and skipped (memory stays bounded on a file without
// newlines).
const MaxLineLength = 16 << 20

// LineError is a line that could not be read as an index line. The
// Reader goes on with the next line when Next is called again.
type LineError struct {
	Name string // the input
	Line int64  // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s: line %d: %v", e.Name, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Options change how a Reader reads.
type Options struct {
	// Format forces every line's format (CDXJ or CDX); Auto detects it.
	Format Format
	// Layout is the CDX layout of a file without a header; nil goes by
	// the first record line's field count. A header line replaces it.
	Layout *Layout
}

// Reader reads the lines of one index, plain or gzip.
type Reader struct {
	name   string
	opts   Options
	src    *bufio.Reader
	gz     *members
	layout *Layout // from a header, Options, or the first headerless CDX line
	number int64
	line   Line
	p      parser
	long   []byte // a line longer than the buffer
	err    error  // sticky read error
	// Counts, for summaries.
	Records, BadLines int64
	gzipped           bool
}

// NewReader returns a Reader of r, whose name is used in errors. Gzip is
// recognised by its first bytes.
func NewReader(r io.Reader, name string, opts Options) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	rd := &Reader{name: name, opts: opts, layout: opts.Layout}
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		m, err := newMembers(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rd.gz, rd.gzipped = m, true
		br = bufio.NewReaderSize(m, 1<<20)
	}
	rd.src = br
	return rd, nil
}

// Continue goes on reading from src (plain), as if it followed the input
// read so far: line numbers and the CDX layout carry on. It is how the
// blocks of a ZipNum index are read as one index, each block's text given
// in turn; a block whose last line has no "\n" ends that line.
func (r *Reader) Continue(src io.Reader) {
	r.src.Reset(src)
	r.gz = nil
	if r.err == io.EOF {
		r.err = nil
	}
}

// Members is the number of gzip members read to their end so far (0 for
// plain input): after io.EOF, the input's.
func (r *Reader) Members() int {
	if r.gz == nil {
		return 0
	}
	return r.gz.member
}

// Gzipped reports whether the input is gzip.
func (r *Reader) Gzipped() bool { return r.gzipped }

// Layout is the CDX layout in force (nil before the first CDX line).
func (r *Reader) Layout() *Layout { return r.layout }

// Next returns the next line, or io.EOF after the last. A line that cannot
// be parsed is returned with Kind Bad and a *LineError; call Next again to
// go on. Any other error (the input could not be read, its gzip is
// damaged) ends the input. The line is valid until the next call.
func (r *Reader) Next() (*Line, error) {
	if r.err != nil {
		return nil, r.err
	}
	raw, err := r.readLine()
	if err != nil {
		if le, ok := err.(*LineError); ok {
			r.BadLines++
			r.line = Line{Kind: Bad, Number: r.number, scratch: r.line.scratch[:0], newVals: r.line.newVals}
			return &r.line, le
		}
		r.err = err
		return nil, err
	}
	l := &r.line
	l.Number = r.number
	text := raw
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	switch {
	case len(bytes.TrimSpace(text)) == 0 || text[0] == '!' || text[0] == '#':
		r.other(l, raw, Meta, Auto)
		return l, nil
	case bytes.HasPrefix(text, []byte(" CDX ")) || bytes.HasPrefix(text, []byte("CDX ")):
		lay, err := ParseLayout(string(text))
		if err != nil {
			return r.bad(l, raw, err)
		}
		r.layout = lay
		r.other(l, raw, Header, CDX)
		l.cdxLayout = lay
		return l, nil
	}
	format := r.opts.Format
	if format == Auto {
		format = CDX
		if isCDXJ(text) {
			format = CDXJ
		}
	}
	if err := r.p.parse(l, raw, format, r.layout); err != nil {
		return r.bad(l, raw, err)
	}
	if format == CDX && r.layout == nil {
		// The first headerless CDX line fixes the layout of the rest.
		r.layout = l.cdxLayout
	}
	r.Records++
	return l, nil
}

func (r *Reader) other(l *Line, raw []byte, k Kind, f Format) {
	*l = Line{Kind: k, Format: f, Number: r.number, Raw: raw, Offset: -1, Length: -1, scratch: l.scratch[:0], newVals: l.newVals}
}

func (r *Reader) bad(l *Line, raw []byte, err error) (*Line, error) {
	r.BadLines++
	r.other(l, raw, Bad, Auto)
	return l, &LineError{Name: r.name, Line: r.number, Err: err}
}

// readLine returns the next line without its "\n".
func (r *Reader) readLine() ([]byte, error) {
	r.long = r.long[:0]
	tooLong := false
	for {
		b, err := r.src.ReadSlice('\n')
		switch {
		case err == nil:
			r.number++
			if tooLong {
				return nil, &LineError{Name: r.name, Line: r.number, Err: fmt.Errorf("longer than %d bytes", MaxLineLength)}
			}
			b = b[:len(b)-1]
			if len(r.long) > 0 {
				r.long = append(r.long, b...)
				return r.long, nil
			}
			return b, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if !tooLong {
				r.long = append(r.long, b...)
				if len(r.long) > MaxLineLength {
					tooLong, r.long = true, r.long[:0]
				}
			}
		case err == io.EOF:
			if len(b) == 0 && len(r.long) == 0 && !tooLong {
				return nil, io.EOF
			}
			// A last line without "\n".
			r.number++
			if tooLong {
				return nil, &LineError{Name: r.name, Line: r.number, Err: fmt.Errorf("longer than %d bytes", MaxLineLength)}
			}
			if len(r.long) > 0 {
				r.long = append(r.long, b...)
				return r.long, nil
			}
			return b, nil
		default:
			return nil, fmt.Errorf("%s: after line %d: %w", r.name, r.number, err)
		}
	}
}

// members reads a gzip file of one or more members, ending a line at the
// end of each member that does not end with "\n" (pywb's ZipNum blocks).
type members struct {
	z       *gzip.Reader
	src     *bufio.Reader
	last    byte // of the current member
	got     bool // the current member gave bytes
	newline bool // owe a "\n" before the next member
	done    bool
	member  int
}

func newMembers(src *bufio.Reader) (*members, error) {
	z, err := gzip.NewReader(src)
	if err != nil {
		return nil, err
	}
	z.Multistream(false)
	return &members{z: z, src: src}, nil
}

func (m *members) Read(p []byte) (int, error) {
	for {
		if m.newline {
			if len(p) == 0 {
				return 0, nil
			}
			p[0] = '\n'
			m.newline = false
			return 1, nil
		}
		if m.done {
			return 0, io.EOF
		}
		n, err := m.z.Read(p)
		if n > 0 {
			m.last, m.got = p[n-1], true
		}
		if err == io.EOF {
			m.member++
			m.newline = m.got && m.last != '\n'
			m.got = false
			if err := m.z.Reset(m.src); err == io.EOF {
				m.done = true
			} else if err != nil {
				return n, fmt.Errorf("gzip member %d: %w", m.member+1, err)
			}
			m.z.Multistream(false)
			err = nil
		} else if err != nil {
			return n, fmt.Errorf("gzip member %d: %w", m.member+1, err)
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

package manifest

import (
	"bufio"
	"bytes"

	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Error is a problem with one manifest line, named by file and line number.
type Error struct {
	Name string // the manifest's name, "-" for standard input
	Line int    // 1-based line number
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// ErrOrder is wrapped by the Error that Reader returns for a line out of the
// order it was asked to check.
var ErrOrder = errors.New("line out of order")

// ErrTruncated is wrapped by the error for a manifest's last line without
// its line feed: what a writer leaves when it dies mid-line, whose last
// field may be cut short yet look valid.
var ErrTruncated = errors.New("last line has no line feed: the manifest looks truncated")

// IncompleteMark is the line with which a command that stopped ends what
// it wrote to standard output (without a line feed; sort adds one): no
// stage takes the lines before it for a whole manifest.
const IncompleteMark = "# INCOMPLETE: the command that wrote this stopped before its output was whole"

// ErrIncomplete is wrapped by the error for an IncompleteMark line.
var ErrIncomplete = errors.New("the command that wrote this manifest stopped before it was whole: see its error and run it again")

// ScanLines is a bufio.SplitFunc of a manifest's lines as Reader reads
// them, for a reader of raw lines (Split, Field): each without its line
// feed only (a carriage return stays, for Parse to refuse), and a last
// line without one ErrTruncated, not a line.
func ScanLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, ErrTruncated
	}
	return 0, nil, nil
}

// Order is a sort order of the manifest, as one stage needs it.
type Order struct {
	Name    string // what it sorts by, for messages
	Command string // the sort command that produces it
	Compare func(a, b *Line) int
}

// The orders of the toolchain. All compare bytes (LC_ALL=C) except offset
// and ext, which `sort -n` compares as numbers.
var (
	// ByDigest is what warccollres, warcsumproc and warcsumsplit's cluster
	// modes read: each digest together; within it the revisit lines (ext
	// -1) first, so that the records they refer to are known before any
	// response is numbered, then each ext class (a response without field 7
	// counts as ext 0, as it does for sort -n), the earliest capture first.
	ByDigest = &Order{
		Name:    "digest, ext, date, file, offset",
		Command: "LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n",
		Compare: func(a, b *Line) int {
			return cmp.Or(strings.Compare(a.Digest, b.Digest), cmp.Compare(a.Class, b.Class),
				strings.Compare(a.Date, b.Date), strings.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
		},
	}
	// ByCapture is what a restore looks originals up in: by URI and date,
	// as revisits name them.
	ByCapture = &Order{
		Name:    "URI, date",
		Command: "LC_ALL=C sort -k4,4 -k5,5",
		Compare: func(a, b *Line) int {
			return cmp.Or(strings.Compare(a.URI, b.URI), strings.Compare(a.Date, b.Date))
		},
	}
	// ByFile is what warcrefs reads: each file's records in file order.
	ByFile = &Order{
		Name:    "file, offset",
		Command: "LC_ALL=C sort -k1,1 -k2,2n",
		Compare: func(a, b *Line) int {
			return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
		},
	}
)

// maxLine bounds one line; a URI of a few megabytes (data: URIs) still fits.
const maxLine = 64 << 20

// Reader reads manifest lines, checking each one, and optionally the field
// count and sort order a stage needs, so that a stage stops at the first bad
// line instead of producing a wrong result.
type Reader struct {
	name   string
	br     *bufio.Reader
	line   int
	fields []int
	order  *Order
	prev   Line
	cur    Line // the line Next compares with prev
	buf    []byte
	start  int64 // offset of the line Next returned last
	next   int64 // offset of the line after it
}

// NewReader returns a Reader of r; name is used in error messages.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{name: name, br: bufio.NewReaderSize(r, 256<<10)}
}

// RequireFields makes Next reject lines whose field count is not one of n.
func (r *Reader) RequireFields(n ...int) { r.fields = n }

// RequireOrder makes Next reject a line that sorts before the line above it.
func (r *Reader) RequireOrder(o *Order) { r.order = o }

// Name is the manifest's name, as given to NewReader.
func (r *Reader) Name() string { return r.name }

// Errorf returns an *Error about the line Next returned last, for a stage
// that finds the line well formed but wrong for it.
func (r *Reader) Errorf(format string, args ...any) error { return r.errorf(format, args...) }

// Offset is the byte offset of the line Next returned last.
func (r *Reader) Offset() int64 { return r.start }

// LineNumber is the number of the line Next returned last.
func (r *Reader) LineNumber() int { return r.line }

// Next returns the next line, or io.EOF after the last one. Any other error
// is an *Error naming the manifest and the line.
func (r *Reader) Next() (Line, error) {
	text, err := r.readLine()
	if err != nil {
		return Line{}, err
	}
	if string(text) == IncompleteMark {
		return Line{}, r.errorf("%w", ErrIncomplete)
	}
	l, err := Parse(text)
	if err != nil {
		return Line{}, r.errorf("%w", err)
	}
	if len(r.fields) > 0 && !slices.Contains(r.fields, l.Fields) {
		return Line{}, r.errorf("%d fields, want %s", l.Fields, fieldCounts(r.fields))
	}
	if r.order != nil {
		// Compared as the Reader's own copy: a pointer to l, given to
		// the order's comparison, would move every line to the heap.
		r.cur = l
		if r.line > 1 && r.order.Compare(&r.prev, &r.cur) > 0 {
			return Line{}, r.errorf("%w: not sorted by %s; sort the input with %s", ErrOrder, r.order.Name, r.order.Command)
		}
		r.prev = r.cur
	}
	return l, nil
}

func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	r.start = r.next
	for {
		frag, err := r.br.ReadSlice('\n')
		r.next += int64(len(frag))
		if err == nil && len(r.buf) == 0 {
			r.line++
			return frag[:len(frag)-1], nil
		}
		r.buf = append(r.buf, frag...)
		switch {
		case len(r.buf) > maxLine+1: // +1 for the line feed
			r.line++
			return nil, r.errorf("line longer than %d bytes", maxLine)
		case err == nil:
			r.line++
			return r.buf[:len(r.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			// Read on.
		case err == io.EOF && len(r.buf) == 0:
			return nil, io.EOF
		case err == io.EOF:
			r.line++
			return nil, r.errorf("%w", ErrTruncated)
		default:
			// The line being read is the next one; r.line counts only lines
			// read in full.
			return nil, &Error{Name: r.name, Line: r.line + 1, Err: err}
		}
	}
}

func (r *Reader) errorf(format string, args ...any) error {
	return &Error{Name: r.name, Line: r.line, Err: fmt.Errorf(format, args...)}
}

func fieldCounts(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, " or ")
}

// Writer writes manifest lines through a buffer; call Flush at the end.
type Writer struct {
	bw  *bufio.Writer
	buf []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10)}
}

// Write writes one line.
func (w *Writer) Write(l *Line) error {
	w.buf = l.Append(w.buf[:0])
	_, err := w.bw.Write(w.buf)
	return err
}

// Flush writes any buffered lines to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Package convmap reads and writes the conversion map of an in-place ARC
// to WARC conversion (package migrate): for each ARC file converted, the
// WARC file that replaced it, both files' size and SHA-256, and for each
// ARC record where it was and where its WARC record is, with the fields a
// WARC indexer writes for it. Indexes of the ARC files follow the
// conversion with it (reindex.Conversion, warccdx --conversion).
//
// The map is plain text, fields separated by one space:
//
//	# file ARC WARC ARC-SIZE ARC-SHA256 WARC-SIZE WARC-SHA256 FILEDESC-URI FILEDESC-DATE
//	old-offset old-length new-offset new-length type status mime digest
//
// A "# file" line starts each converted file's section; ARC and WARC are
// names relative to the collection root, escaped as manifest field 1
// (manifest.EscapeFile); FILEDESC-URI and FILEDESC-DATE are the ARC's
// filedesc record's URL and date (the WARC's metadata record, which an ARC
// index has no line for), escaped the same way. Each record line is one
// ARC record, in file order: its offset and length in the ARC as stored
// (its gzip member in an .arc.gz; in a plain .arc from its record line
// through the line feeds after it), the offset and length of its gzip
// member in the WARC, its WARC type (metadata for the filedesc, response,
// resource), and the status, mime and payload digest ("sha1:...") that a
// WARC indexer writes for that record, "-" for none. A section may have no
// record lines: its ARC could not be read one record per gzip member (a
// whole-file gzip ARC), so that no index can have addressed its records.
// Other lines starting with "#" are comments.
package convmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"warcdedup/manifest"
)

// File is one converted file's section header.
type File struct {
	ARC, WARC             string // relative names, unescaped
	ARCSize, WARCSize     int64
	ARCSHA256, WARCSHA256 string // hex
	// FiledescURI and FiledescDate are the ARC filedesc's URL and date
	// (YYYY-MM-DDThh:mm:ssZ), "" when unknown.
	FiledescURI, FiledescDate string
}

// Record is one record line.
type Record struct {
	OldOffset, OldLength int64
	NewOffset, NewLength int64
	Type                 string // metadata, response or resource
	Status               string // "" for none
	MIME                 string // "" for none
	Digest               string // "" for none
}

// AppendFile appends f's "# file" line and a line end.
func AppendFile(dst []byte, f *File) []byte {
	dst = append(dst, "# file "...)
	dst = append(dst, manifest.EscapeFile(f.ARC)...)
	dst = append(append(dst, ' '), manifest.EscapeFile(f.WARC)...)
	dst = strconv.AppendInt(append(dst, ' '), f.ARCSize, 10)
	dst = append(append(dst, ' '), f.ARCSHA256...)
	dst = strconv.AppendInt(append(dst, ' '), f.WARCSize, 10)
	dst = append(append(dst, ' '), f.WARCSHA256...)
	dst = append(append(dst, ' '), dashed(f.FiledescURI)...)
	dst = append(append(dst, ' '), dashed(f.FiledescDate)...)
	return append(dst, '\n')
}

// AppendRecord appends r's line and a line end.
func AppendRecord(dst []byte, r *Record) []byte {
	for i, n := range []int64{r.OldOffset, r.OldLength, r.NewOffset, r.NewLength} {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, n, 10)
	}
	for _, s := range []string{r.Type, r.Status, r.MIME, r.Digest} {
		dst = append(append(dst, ' '), dashed(s)...)
	}
	return append(dst, '\n')
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return manifest.EscapeFile(s)
}

func undashed(s string) (string, error) {
	if s == "-" {
		return "", nil
	}
	return manifest.UnescapeFile(s)
}

// Reader reads a map, checking each section's records are in offset order.
type Reader struct {
	name string
	sc   *bufio.Scanner
	line int64
	file *File
	prev Record
	seen bool
}

// NewReader returns a Reader of the map r, named name in errors.
func NewReader(r io.Reader, name string) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &Reader{name: name, sc: sc}
}

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", r.name, r.line, fmt.Sprintf(format, args...))
}

// Next returns the next section header (rec nil) or record line (with the
// header of its section), or io.EOF.
func (r *Reader) Next() (*File, *Record, error) {
	for r.sc.Scan() {
		r.line++
		text := r.sc.Bytes()
		if len(text) == 0 {
			continue
		}
		if rest, ok := bytes.CutPrefix(text, []byte("# file ")); ok {
			f, err := parseFile(string(rest))
			if err != nil {
				return nil, nil, r.errorf("%v", err)
			}
			r.file, r.seen = f, false
			return f, nil, nil
		}
		if text[0] == '#' {
			continue
		}
		if r.file == nil {
			return nil, nil, r.errorf("a record line before any \"# file\" line")
		}
		rec, err := parseRecord(string(text))
		if err != nil {
			return nil, nil, r.errorf("%v", err)
		}
		if r.seen && (rec.OldOffset < r.prev.OldOffset+r.prev.OldLength || rec.NewOffset < r.prev.NewOffset+r.prev.NewLength) {
			return nil, nil, r.errorf("record at %d (%d in the WARC) before the end of the one before it", rec.OldOffset, rec.NewOffset)
		}
		r.prev, r.seen = rec, true
		return r.file, &r.prev, nil
	}
	if err := r.sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: after line %d: %w", r.name, r.line, err)
	}
	return nil, nil, io.EOF
}

func parseFile(s string) (*File, error) {
	p := strings.Split(s, " ")
	if len(p) != 8 {
		return nil, errors.New(`want "# file ARC WARC ARC-SIZE ARC-SHA256 WARC-SIZE WARC-SHA256 FILEDESC-URI FILEDESC-DATE"`)
	}
	f := &File{ARCSHA256: p[3], WARCSHA256: p[5]}
	var err error
	if f.ARC, err = manifest.UnescapeFile(p[0]); err != nil {
		return nil, err
	}
	if f.WARC, err = manifest.UnescapeFile(p[1]); err != nil {
		return nil, err
	}
	if f.ARCSize, err = strconv.ParseInt(p[2], 10, 64); err != nil || f.ARCSize < 0 {
		return nil, fmt.Errorf("ARC size %q", p[2])
	}
	if f.WARCSize, err = strconv.ParseInt(p[4], 10, 64); err != nil || f.WARCSize < 0 {
		return nil, fmt.Errorf("WARC size %q", p[4])
	}
	if len(f.ARCSHA256) != 64 || len(f.WARCSHA256) != 64 {
		return nil, errors.New("a SHA-256 is not 64 hex digits")
	}
	if f.FiledescURI, err = undashed(p[6]); err != nil {
		return nil, err
	}
	if f.FiledescDate, err = undashed(p[7]); err != nil {
		return nil, err
	}
	return f, nil
}

func parseRecord(s string) (Record, error) {
	p := strings.Split(s, " ")
	if len(p) != 8 {
		return Record{}, errors.New("want 8 fields: old-offset old-length new-offset new-length type status mime digest")
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(p[i], 10, 64)
		if err != nil || v < 0 {
			return Record{}, fmt.Errorf("field %d %q: want a number", i+1, p[i])
		}
		n[i] = v
	}
	if n[1] == 0 || n[3] == 0 {
		return Record{}, errors.New("a record of length 0")
	}
	r := Record{OldOffset: n[0], OldLength: n[1], NewOffset: n[2], NewLength: n[3], Type: p[4]}
	switch r.Type {
	case "metadata", "response", "resource":
	default:
		return Record{}, fmt.Errorf("type %q: want metadata, response or resource", r.Type)
	}
	var err error
	if r.Status, err = undashed(p[5]); err != nil {
		return Record{}, err
	}
	if r.MIME, err = undashed(p[6]); err != nil {
		return Record{}, err
	}
	if r.Digest, err = undashed(p[7]); err != nil {
		return Record{}, err
	}
	return r, nil
}

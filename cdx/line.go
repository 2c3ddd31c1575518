package cdx

import (
	"bytes"
	"fmt"
	"strconv"
)

// Format is the format of an index line.
type Format uint8

// The formats a Reader knows. Auto, in Options, detects each line's.
const (
	Auto Format = iota
	CDXJ
	CDX
)

func (f Format) String() string {
	switch f {
	case CDXJ:
		return "cdxj"
	case CDX:
		return "cdx"
	}
	return "auto"
}

// ParseFormat parses "auto", "cdxj" or "cdx".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "cdxj":
		return CDXJ, nil
	case "cdx":
		return CDX, nil
	}
	return Auto, fmt.Errorf("format %q: want auto, cdxj or cdx", s)
}

// Kind tells a capture line from the others.
type Kind uint8

// The kinds of line.
const (
	Record Kind = iota // a capture: one record of a WARC or ARC file
	Header             // a CDX format line, " CDX N b a m s k r M S V g"
	Meta               // a CDXJ "!" line, a blank line
	Bad                // a line that could not be parsed (Next returned a *LineError)
)

// field names the values a Line exposes, in the order the indexers write
// them in CDXJ.
type field uint8

const (
	fURLKey field = iota
	fTimestamp
	fURL
	fMIME
	fStatus
	fDigest
	fLength
	fOffset
	fFilename
	nFields
)

var jsonKeys = [nFields]string{fURL: "url", fMIME: "mime", fStatus: "status", fDigest: "digest", fLength: "length", fOffset: "offset", fFilename: "filename"}

// span is where a value is in Line.Raw: [start, end) is the whole token
// (with its quotes in CDXJ), key the start of its CDXJ key (its quote).
type span struct {
	start, end, key int32
	quoted          bool
	present         bool
}

// Line is one line of an index. Its byte slices point into the Reader's
// buffer and are valid until the next call of Next; Clone keeps them.
type Line struct {
	Kind   Kind
	Format Format // of a Record or Header line
	Number int64  // 1-based, in its input
	// Raw is the line as read, without its "\n" (a "\r" before it stays).
	Raw []byte

	// The values of a Record line; nil when the line has none ("-" in CDX).
	// JSON escapes are decoded.
	URLKey, Timestamp, URL, MIME, Status, Digest, Filename []byte
	// Offset and Length are -1 when absent.
	Offset, Length int64

	spans [nFields]span
	// CDXJ: the separators the line uses between a key and its value and
	// between members, to insert a key in the line's own style.
	keySep, memberSep []byte
	objEnd            int32 // index of the closing '}' in Raw
	objEmpty          bool

	cdxLayout *Layout // of a CDX line
	extra     bool    // a CDX line with spaces in its URL (more fields than its layout)

	orig    origValues // the edited values as read
	edited  uint16     // bit per field
	newVals [nFields][]byte
	scratch []byte // decoded JSON strings
}

// IsEdited reports whether a setter changed the line.
func (l *Line) IsEdited() bool { return l.edited != 0 }

// Clone returns a deep copy of l that does not share the Reader's buffer.
func (l *Line) Clone() *Line {
	c := &Line{Kind: l.Kind, Format: l.Format, Number: l.Number}
	raw := bytes.Clone(l.Raw)
	switch l.Kind {
	case Record:
		var p parser
		if err := p.parse(c, raw, l.Format, l.cdxLayout); err != nil {
			// l parsed, so its copy does.
			panic("cdx: Clone: " + err.Error())
		}
	default:
		c.Raw = raw
		c.cdxLayout = l.cdxLayout
	}
	c.edited = l.edited
	for f := range c.newVals {
		c.newVals[f] = bytes.Clone(l.newVals[f])
	}
	c.Offset, c.Length = l.Offset, l.Length
	if l.edited&(1<<fMIME) != 0 {
		c.MIME = c.newVals[fMIME]
	}
	if l.edited&(1<<fDigest) != 0 {
		c.Digest = c.newVals[fDigest]
	}
	return c
}

type origValues struct {
	offset, length int64
	mime, digest   []byte
}

// Revert drops every edit: the line is as read again.
func (l *Line) Revert() {
	l.edited = 0
	l.Offset, l.Length, l.MIME, l.Digest = l.orig.offset, l.orig.length, l.orig.mime, l.orig.digest
}

// SetOffset sets the record's offset, keeping the line's spelling of
// numbers (a CDXJ string stays a string).
func (l *Line) SetOffset(n int64) {
	l.Offset = n
	l.set(fOffset, strconv.AppendInt(l.newVals[fOffset][:0], n, 10))
}

// SetLength sets the record's length.
func (l *Line) SetLength(n int64) {
	l.Length = n
	l.set(fLength, strconv.AppendInt(l.newVals[fLength][:0], n, 10))
}

// SetMIME sets the mime field; "" makes it absent (a CDXJ key is removed,
// a CDX column is "-").
func (l *Line) SetMIME(s string) {
	l.set(fMIME, append(l.newVals[fMIME][:0], s...))
	l.MIME = l.newVals[fMIME]
	if s == "" {
		l.MIME = nil
	}
}

// SetDigest sets the digest field, as given (with or without a label); ""
// makes it absent.
func (l *Line) SetDigest(s string) {
	l.set(fDigest, append(l.newVals[fDigest][:0], s...))
	l.Digest = l.newVals[fDigest]
	if s == "" {
		l.Digest = nil
	}
}

func (l *Line) set(f field, v []byte) {
	l.newVals[f] = v
	l.edited |= 1 << f
}

// AppendTo appends the line, without its "\n", to dst: Raw when it was not
// edited, else Raw with the edited values replaced or inserted. An edit
// of a field a CDX layout lacks (length in CDX9) is left out.
func (l *Line) AppendTo(dst []byte) []byte {
	if l.edited == 0 {
		return append(dst, l.Raw...)
	}
	// Replacements in order of position; insertions (CDXJ keys the line
	// lacks) at the key that follows them in the indexers' order.
	type splice struct {
		at, end int32
		f       field
		insert  bool
		remove  bool
	}
	var buf [nFields]splice
	ss := buf[:0]
	for f := range nFields {
		if l.edited&(1<<f) == 0 {
			continue
		}
		sp := l.spans[f]
		switch {
		case sp.present && l.Format == CDXJ && len(l.newVals[f]) == 0:
			start, end := l.memberBounds(sp)
			ss = append(ss, splice{at: start, end: end, f: f, remove: true})
		case len(l.newVals[f]) == 0 && l.Format == CDXJ:
			// Absent and to stay absent.
		case sp.present:
			ss = append(ss, splice{at: sp.start, end: sp.start, f: f})
			ss[len(ss)-1].end = sp.end
		case l.Format == CDXJ:
			at := l.objEnd
			for g := f + 1; g < nFields; g++ {
				if n := l.spans[g]; n.present && n.key >= 0 && n.key < at {
					at = n.key
				}
			}
			ss = append(ss, splice{at: at, end: at, f: f, insert: true})
		}
	}
	// Insertion sort: at most nFields entries.
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && (ss[j].at < ss[j-1].at || ss[j].at == ss[j-1].at && ss[j].f < ss[j-1].f); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
	pos := int32(0)
	empty := l.objEmpty
	for _, s := range ss {
		dst = append(dst, l.Raw[pos:s.at]...)
		v := l.newVals[s.f]
		switch {
		case s.remove:
		case s.insert && s.at == l.objEnd:
			if !empty {
				dst = append(dst, l.memberSep...)
			}
			dst = appendJSONString(append(dst, '"'), jsonKeys[s.f])
			dst = append(append(dst, '"'), l.keySep...)
			dst = l.appendValue(dst, s.f, v, true)
			empty = false
		case s.insert:
			dst = appendJSONString(append(dst, '"'), jsonKeys[s.f])
			dst = append(append(dst, '"'), l.keySep...)
			dst = l.appendValue(dst, s.f, v, true)
			dst = append(dst, l.memberSep...)
		case l.Format == CDXJ:
			dst = l.appendValue(dst, s.f, v, l.spans[s.f].quoted)
		default:
			if len(v) == 0 {
				v = dash
			}
			dst = append(dst, v...)
		}
		pos = s.end
	}
	return append(dst, l.Raw[pos:]...)
}

var dash = []byte("-")

// memberBounds is the stretch of Raw to cut to remove the CDXJ member of
// sp: with the separator before it, or for the first member the one after.
func (l *Line) memberBounds(sp span) (int32, int32) {
	raw := l.Raw
	start, end := sp.key, sp.end
	i := start
	for i > 0 && isSpace(raw[i-1]) {
		i--
	}
	if i > 0 && raw[i-1] == ',' {
		i--
		for i > 0 && isSpace(raw[i-1]) {
			i--
		}
		return i, end
	}
	j := end
	for int(j) < len(raw) && isSpace(raw[j]) {
		j++
	}
	if int(j) < len(raw) && raw[j] == ',' {
		j++
		for int(j) < len(raw) && isSpace(raw[j]) {
			j++
		}
		return start, j
	}
	return start, end
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (l *Line) appendValue(dst []byte, f field, v []byte, quoted bool) []byte {
	if !quoted && (f == fOffset || f == fLength) {
		return append(dst, v...)
	}
	return append(appendJSONString(append(dst, '"'), string(v)), '"')
}

// AppendCDX11 appends the line as an 11-field CDX line
// ("N b a m s k r M S V g", what OutbackCDX loads), edits included: a
// CDX11 line as it would be written, other lines converted (absent values
// and the redirect and meta columns as "-"; spaces in the URL as %20, so
// the line keeps 11 fields).
func (l *Line) AppendCDX11(dst []byte) []byte {
	if l.Format == CDX && l.cdxLayout == layoutCDX11 && !l.extra {
		return l.AppendTo(dst)
	}
	col := func(dst, v []byte) []byte {
		if len(v) == 0 {
			return append(dst, '-')
		}
		for _, c := range v {
			switch {
			case c == ' ':
				dst = append(dst, "%20"...)
			case c == '\n' || c == '\r':
				dst = append(dst, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
			default:
				dst = append(dst, c)
			}
		}
		return dst
	}
	num := func(dst []byte, n int64) []byte {
		if n < 0 {
			return append(dst, '-')
		}
		return strconv.AppendInt(dst, n, 10)
	}
	urlkey := l.URLKey
	if urlkey == nil {
		urlkey = l.URL
	}
	dst = append(col(dst, urlkey), ' ')
	dst = append(col(dst, l.Timestamp), ' ')
	dst = append(col(dst, l.URL), ' ')
	dst = append(col(dst, l.MIME), ' ')
	dst = append(col(dst, l.Status), ' ')
	dst = append(col(dst, l.Digest), " - - "...)
	dst = append(num(dst, l.Length), ' ')
	dst = append(num(dst, l.Offset), ' ')
	return col(dst, l.Filename)
}

// Fixed is the start of a Record line that no setter changes: a CDXJ
// line's "urlkey timestamp", a CDX line's columns before the first of
// mime, digest, length and offset. Lines whose Fixed parts differ sort as
// those parts do whatever is edited after them (unless one part is a
// prefix of the other and the longer goes on with a byte below " "), so
// keeping a sorted index sorted after edits only reorders lines of equal
// Fixed parts.
func (l *Line) Fixed() []byte {
	if l.Kind != Record {
		return l.Raw
	}
	if l.Format == CDXJ {
		return l.Raw[:l.spans[fTimestamp].end]
	}
	end := int32(len(l.Raw))
	for _, f := range []field{fMIME, fDigest, fLength, fOffset} {
		if sp := l.spans[f]; sp.present && sp.start < end {
			end = sp.start
		}
	}
	return l.Raw[:end]
}

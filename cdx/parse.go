package cdx

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// parser holds what parsing reuses from line to line.
type parser struct {
	cols []int32 // CDX: start of each space-separated token, then len+1
}

var errNotCDXJ = errors.New(`not "urlkey timestamp {json}"`)

// parse fills l from raw, a Record line of format (CDXJ or CDX, never Auto)
// and, for CDX, layout (nil: by the field count).
func (p *parser) parse(l *Line, raw []byte, format Format, layout *Layout) error {
	*l = Line{Kind: Record, Format: format, Number: l.Number, Raw: raw, scratch: l.scratch[:0],
		newVals: l.newVals, Offset: -1, Length: -1}
	text := raw
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	var err error
	if format == CDXJ {
		err = p.parseCDXJ(l, text)
	} else {
		err = p.parseCDX(l, text, layout)
	}
	l.orig = origValues{l.Offset, l.Length, l.MIME, l.Digest}
	return err
}

// isCDXJ tells a CDXJ record line: its third token starts the JSON.
func isCDXJ(text []byte) bool {
	i := bytes.IndexByte(text, ' ')
	if i < 0 {
		return false
	}
	j := bytes.IndexByte(text[i+1:], ' ')
	if j < 0 {
		return false
	}
	k := i + 1 + j + 1
	if k < len(text) && text[k] == '{' {
		return true
	}
	// A urlkey with spaces (warcio.js --noSurt): " digits {" later on.
	_, ok := jsonStart(text)
	return ok
}

// jsonStart finds the "{" that follows "urlkey timestamp ".
func jsonStart(text []byte) (int, bool) {
	for from := 0; ; {
		i := bytes.Index(text[from:], []byte(" {"))
		if i < 0 {
			return 0, false
		}
		i += from
		j := bytes.LastIndexByte(text[:i], ' ')
		if j > 0 && j+1 < i && allDigits(text[j+1:i]) {
			return i + 1, true
		}
		from = i + 1
	}
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func (p *parser) parseCDXJ(l *Line, text []byte) error {
	i := bytes.IndexByte(text, ' ')
	var brace int
	if i > 0 {
		if j := bytes.IndexByte(text[i+1:], ' '); j >= 0 && i+1+j+1 < len(text) && text[i+1+j+1] == '{' {
			brace = i + 1 + j + 1
		}
	}
	if brace == 0 {
		var ok bool
		if brace, ok = jsonStart(text); !ok {
			return errNotCDXJ
		}
	}
	ts := bytes.LastIndexByte(text[:brace-1], ' ')
	l.URLKey = text[:ts]
	l.Timestamp = text[ts+1 : brace-1]
	l.spans[fURLKey] = span{start: 0, end: int32(ts), key: -1, present: true}
	l.spans[fTimestamp] = span{start: int32(ts + 1), end: int32(brace - 1), key: -1, present: true}
	return p.parseObject(l, text, brace)
}

// parseObject reads the JSON object at text[at:], which must end the line.
// Its loop over the members stays in one function: it runs for every
// member of every line, and calls of its steps cost 5-7% of a read
// (BenchmarkReadCDXJ); the value of a key the package reads is taken,
// and the end checked, by functions of their own.
func (p *parser) parseObject(l *Line, text []byte, at int) error {
	s := scanner{b: text, i: at + 1}
	members := 0
	lastEnd := -1
	for {
		s.ws()
		if s.i >= len(text) {
			return errors.New("JSON object not closed")
		}
		if text[s.i] == '}' {
			l.objEnd = int32(s.i)
			l.objEmpty = members == 0
			s.i++
			break
		}
		if members > 0 {
			if text[s.i] != ',' {
				return fmt.Errorf("JSON: want ',' or '}' at byte %d", s.i)
			}
			s.i++
			s.ws()
		}
		keyStart := s.i
		if lastEnd >= 0 && l.memberSep == nil {
			l.memberSep = text[lastEnd:keyStart]
		}
		kEnd, kEsc, err := s.str()
		if err != nil {
			return err
		}
		keyEnd := s.i
		s.ws()
		if s.i >= len(text) || text[s.i] != ':' {
			return fmt.Errorf("JSON: want ':' at byte %d", s.i)
		}
		s.i++
		s.ws()
		valStart := s.i
		if l.keySep == nil {
			l.keySep = text[keyEnd:valStart]
		}
		quoted := s.i < len(text) && text[s.i] == '"'
		var vEsc bool
		if quoted {
			_, vEsc, err = s.str()
		} else {
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
		valEnd := s.i
		lastEnd = valEnd
		members++
		if kEsc {
			continue // no key the package reads has an escape
		}
		f, ok := keyField(text[keyStart+1 : kEnd])
		if !ok {
			continue
		}
		l.spans[f] = span{start: int32(valStart), end: int32(valEnd), key: int32(keyStart), quoted: quoted, present: true}
		if err := l.takeValue(f, text[valStart:valEnd], quoted, vEsc); err != nil {
			return err
		}
	}
	return l.endObject(&s)
}

// takeValue sets the field f to the value raw as stored: a string's
// text, unquoted (into the scratch buffer if it has escapes), nil for
// null.
func (l *Line) takeValue(f field, raw []byte, quoted, vEsc bool) error {
	var v []byte
	if quoted {
		v = raw[1 : len(raw)-1]
		if vEsc {
			start := len(l.scratch)
			var err error
			if l.scratch, err = appendUnquoted(l.scratch, v); err != nil {
				return err
			}
			v = l.scratch[start:len(l.scratch):len(l.scratch)]
		}
	} else {
		v = raw
		if bytes.Equal(v, []byte("null")) {
			v = nil
		}
	}
	return l.setValue(f, v)
}

// endObject checks that nothing follows the object s has read, and gives
// a line whose object did not show them the separators its edits write.
func (l *Line) endObject(s *scanner) error {
	s.ws()
	if s.i != len(s.b) {
		return fmt.Errorf("JSON: %d bytes after the object", len(s.b)-s.i)
	}
	if l.keySep == nil {
		l.keySep = []byte(":")
	}
	if l.memberSep == nil {
		// One member: take the key separator's style.
		if bytes.HasSuffix(l.keySep, []byte(" ")) {
			l.memberSep = []byte(", ")
		} else {
			l.memberSep = []byte(",")
		}
	}
	// After an edit the scratch buffer may grow: values decoded into it
	// keep their capacity clipped above.
	return nil
}
func keyField(k []byte) (field, bool) {
	switch string(k) {
	case "url":
		return fURL, true
	case "mime":
		return fMIME, true
	case "status":
		return fStatus, true
	case "digest":
		return fDigest, true
	case "length":
		return fLength, true
	case "offset":
		return fOffset, true
	case "filename":
		return fFilename, true
	}
	return 0, false
}

// setValue stores the value of f; "" and "-" are absent values.
func (l *Line) setValue(f field, v []byte) error {
	if len(v) == 0 || len(v) == 1 && v[0] == '-' {
		v = nil
	}
	switch f {
	case fURLKey:
		l.URLKey = v
	case fTimestamp:
		l.Timestamp = v
	case fURL:
		l.URL = v
	case fMIME:
		l.MIME = v
	case fStatus:
		l.Status = v
	case fDigest:
		l.Digest = v
	case fFilename:
		l.Filename = v
	case fLength, fOffset:
		n := int64(-1)
		if v != nil {
			var ok bool
			if n, ok = parseUint(v); !ok {
				return fmt.Errorf("%s %q is not a number", jsonKeys[f], v)
			}
		}
		if f == fLength {
			l.Length = n
		} else {
			l.Offset = n
		}
	}
	return nil
}

func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func (p *parser) parseCDX(l *Line, text []byte, layout *Layout) error {
	p.cols = p.cols[:0]
	p.cols = append(p.cols, 0)
	for i, c := range text {
		if c == ' ' {
			p.cols = append(p.cols, int32(i+1))
		}
	}
	n := len(p.cols)
	p.cols = append(p.cols, int32(len(text)+1))
	if layout == nil {
		layout = p.guessLayout(text, n)
		if layout == nil {
			return fmt.Errorf("%d fields: not a CDX layout this reader knows without a header", n)
		}
	}
	l.cdxLayout = layout
	extra := n - layout.n
	if extra < 0 || extra > 0 && layout.urlCol < 0 {
		return fmt.Errorf("%d fields, the CDX layout %q has %d", n, layout.letters, layout.n)
	}
	l.extra = extra > 0
	for f := range nFields {
		c := int(layout.cols[f])
		if c < 0 {
			continue
		}
		first, last := c, c
		if c > int(layout.urlCol) && extra > 0 {
			first, last = c+extra, c+extra
		} else if c == int(layout.urlCol) {
			last = c + extra
		}
		start, end := p.cols[first], p.cols[last+1]-1
		l.spans[f] = span{start: start, end: end, key: -1, present: true}
		if err := l.setValue(f, text[start:end:end]); err != nil {
			return err
		}
	}
	return nil
}

// guessLayout is the layout of a headerless line of n fields: by the
// count, and more than 11 is CDX11 with spaces in its URL, unless 14 fields
// end like CDX14 (an offset, then a file name, then the three fields of
// the revisit's original).
func (p *parser) guessLayout(text []byte, n int) *Layout {
	tok := func(i int) []byte { return text[p.cols[i] : p.cols[i+1]-1] }
	switch {
	case n == 14:
		if g := tok(10); allDigits(tok(9)) && !allDigits(g) && string(g) != "-" {
			return layoutCDX14
		}
		return layoutCDX11
	case n > 11:
		return layoutCDX11
	}
	return layoutByCols[n]
}

// scanner walks a JSON text.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string at s.i; end is the index of its closing quote.
func (s *scanner) str() (end int, escaped bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return 0, false, fmt.Errorf("JSON: want a string at byte %d", s.i)
	}
	b := s.b
	for i := s.i + 1; i < len(b); i++ {
		switch b[i] {
		case '"':
			s.i = i + 1
			return i, escaped, nil
		case '\\':
			escaped = true
			i++
		}
	}
	return 0, false, errors.New("JSON: string not closed")
}

// skipValue skips a number, literal, object or array.
func (s *scanner) skipValue() error {
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s.nonEmpty(start)
			}
			depth--
		case ',':
			if depth == 0 {
				return s.nonEmpty(start)
			}
		case ' ', '\t', '\r', '\n':
			if depth == 0 {
				return s.nonEmpty(start)
			}
		}
		s.i++
	}
	if depth > 0 {
		return errors.New("JSON: value not closed")
	}
	return s.nonEmpty(start)
}

func (s *scanner) nonEmpty(start int) error {
	if s.i == start {
		return fmt.Errorf("JSON: want a value at byte %d", start)
	}
	return nil
}

// appendUnquoted appends the JSON string content v (without its quotes),
// its escapes decoded.
func appendUnquoted(dst, v []byte) ([]byte, error) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(v) {
			return dst, errors.New("JSON: bad escape")
		}
		switch v[i] {
		case '"', '\\', '/':
			dst = append(dst, v[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(v[i+1:])
			if !ok {
				return dst, errors.New(`JSON: bad \u escape`)
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+6 < len(v) && v[i+1] == '\\' && v[i+2] == 'u' {
					r2, ok = hex4(v[i+3:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					dst = utf8.AppendRune(dst, d)
					i += 6
					continue
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, fmt.Errorf(`JSON: bad escape \%c`, v[i])
		}
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// appendJSONString appends s escaped as the content of a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, `\u00`...)
			dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

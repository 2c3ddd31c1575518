package cdx

import (
	"strconv"
)

// What an ARC file's lines need to become its WARC file's after an ARC to
// WARC conversion (reindex.Conversion): the file name and the status, and
// new lines in an index's own format for records an ARC index has no line
// for (the filedesc, a metadata record in the WARC).

// SetFilename sets the file name.
func (l *Line) SetFilename(s string) {
	l.set(fFilename, append(l.newVals[fFilename][:0], s...))
	l.Filename = l.newVals[fFilename]
}

// SetStatus sets the status; "" makes it absent.
func (l *Line) SetStatus(s string) {
	l.set(fStatus, append(l.newVals[fStatus][:0], s...))
	l.Status = l.newVals[fStatus]
	if s == "" {
		l.Status = nil
	}
}

// Values are a record's index values, to write a new line.
type Values struct {
	URLKey, Timestamp, URL, MIME, Status, Digest, Filename string
	Offset, Length                                         int64
}

// AppendLike appends a new record line of v, without a line end, in the
// format and style of l (a record line): CDXJ with l's separators and
// quoting, its keys in the indexers' order and absent values left out;
// CDX in l's layout, absent values "-".
func (l *Line) AppendLike(dst []byte, v Values) []byte {
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	vals := [nFields]string{fURLKey: v.URLKey, fTimestamp: v.Timestamp, fURL: v.URL, fMIME: v.MIME, fStatus: v.Status,
		fDigest: v.Digest, fLength: num(v.Length), fOffset: num(v.Offset), fFilename: v.Filename}
	if l.Format == CDXJ {
		dst = append(append(append(append(dst, v.URLKey...), ' '), v.Timestamp...), " {"...)
		first := true
		for f := fURL; f < nFields; f++ {
			if vals[f] == "" {
				continue
			}
			if !first {
				dst = append(dst, l.memberSep...)
			}
			first = false
			dst = appendJSONString(append(dst, '"'), jsonKeys[f])
			dst = append(append(dst, '"'), l.keySep...)
			quoted := f != fOffset && f != fLength || !l.spans[f].present || l.spans[f].quoted
			dst = l.appendValue(dst, f, []byte(vals[f]), quoted)
		}
		return append(dst, '}')
	}
	lay := l.cdxLayout
	letters := splitLetters(lay.letters)
	for i := range lay.n {
		if i > 0 {
			dst = append(dst, ' ')
		}
		s := ""
		for f := range nFields {
			if int(lay.cols[f]) == i {
				s = vals[f]
				break
			}
		}
		if s == "" || letters[i] == "-" {
			s = "-"
		}
		dst = append(dst, s...)
	}
	return dst
}

func splitLetters(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

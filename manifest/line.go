// Package manifest reads and writes the hash manifest, the sorted text files
// that carry records from one stage of the toolchain to the next. The format
// is specified in shared/spec/manifest.md: one record per line, fields
// separated by one space, 6, 7 or 10 fields.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"warcdedup/digest"
)

// Line is one record of the manifest. Which fields are meaningful depends on
// the stage that wrote it: Fields is 6 after warcsum, 7 after warccollres
// (Class, field 7 "ext"), 10 after warcsumproc (Copy, RefURI, RefDate).
//
// A revisit line (see IsRevisit) lists a revisit record already in the
// collection: 10 fields, ext -1, copy 0, and the URI and date it refers to.
// warcsum writes one for every revisit it reads, so that every later stage
// knows which responses existing revisits resolve to and keeps them.
type Line struct {
	File   string // path relative to its root, escaped (see EscapeFile)
	Offset int64  // where the record starts in the file as stored
	Length int64  // bytes the record occupies in the file as stored
	URI    string // target URI, escaped (see EscapeField)
	Date   string // WARC-Date as in the record, escaped
	Digest string // payload digest, "algo:value"

	Class   int    // class within a digest (byte-identical, replay-equivalent); -1 on a revisit line
	Copy    int    // 1 for a record kept, 2, 3, ... for duplicates; 0 on a revisit line
	RefURI  string // URI of the original, "-" on copy 1
	RefDate string // date of the original, "-" on copy 1; "*" on a revisit line that names none

	Fields int // 6, 7 or 10
}

// RevisitClass and RevisitCopy mark a revisit line. -1 sorts first under
// `sort -k7,7n`, so a digest's revisit lines reach the stages that number
// its copies before its responses do.
const (
	RevisitClass = -1
	RevisitCopy  = 0
)

// NoDigest is field 6 of a revisit line whose record names no payload
// digest in the manifest's algorithm (none at all, or one in another
// algorithm, which cannot be compared). It sorts before every digest, so
// such lines reach the stages that number copies before any cluster.
const NoDigest = "-"

// IsRevisit reports whether l lists a revisit record already in the
// collection rather than a response.
func (l *Line) IsRevisit() bool { return l.Fields == 10 && l.Class == RevisitClass }

// IsDuplicate reports whether l is a response to be rewritten as a revisit
// (copy 2, 3, ...).
func (l *Line) IsDuplicate() bool { return l.Fields == 10 && l.Copy > 1 }

// IsKept reports whether l is a numbered response that stays one (copy 1).
func (l *Line) IsKept() bool { return l.Fields == 10 && l.Copy == 1 }

// Algorithm returns the digest algorithm named by l.Digest's label.
func (l *Line) Algorithm() digest.Algorithm {
	a, _, _ := digest.Parse(l.Digest)
	return a
}

// Append appends l in manifest form, with its line feed, to dst.
func (l *Line) Append(dst []byte) []byte {
	dst = append(dst, l.File...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, l.Offset, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, l.Length, 10)
	dst = append(dst, ' ')
	dst = append(dst, l.URI...)
	dst = append(dst, ' ')
	dst = append(dst, l.Date...)
	dst = append(dst, ' ')
	dst = append(dst, l.Digest...)
	if l.Fields >= 7 {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(l.Class), 10)
	}
	if l.Fields == 10 {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(l.Copy), 10)
		dst = append(dst, ' ')
		dst = append(dst, l.RefURI...)
		dst = append(dst, ' ')
		dst = append(dst, l.RefDate...)
	}
	return append(dst, '\n')
}

// String returns l in manifest form without the line feed.
func (l *Line) String() string {
	b := l.Append(nil)
	return string(b[:len(b)-1])
}

// Parse reads one manifest line (without its line feed). It rejects a line
// that a later stage could misread: a wrong field count, an empty field, a
// non-numeric or negative number, an unknown digest algorithm or a digest
// value of the wrong form.
func Parse(text []byte) (Line, error) {
	var f [10][]byte
	n := 0
	for rest := text; ; n++ {
		i := bytes.IndexByte(rest, ' ')
		if n == len(f) {
			return Line{}, fmt.Errorf("more than %d fields", len(f))
		}
		if i < 0 {
			f[n] = rest
			n++
			break
		}
		f[n], rest = rest[:i], rest[i+1:]
	}
	if n != 6 && n != 7 && n != 10 {
		return Line{}, fmt.Errorf("%d fields, want 6, 7 or 10", n)
	}
	for i := range n {
		if len(f[i]) == 0 {
			return Line{}, fmt.Errorf("field %d is empty (two spaces in a row?)", i+1)
		}
		if j := indexControl(f[i]); j >= 0 {
			return Line{}, fmt.Errorf("field %d holds a control character (byte 0x%02X)", i+1, f[i][j])
		}
	}
	l := Line{
		File:   string(f[0]),
		URI:    string(f[3]),
		Date:   string(f[4]),
		Digest: string(f[5]),
		Fields: n,
	}
	var err error
	if l.Offset, err = parseNumber(f[1], "offset"); err != nil {
		return Line{}, err
	}
	if l.Length, err = parseNumber(f[2], "length"); err != nil {
		return Line{}, err
	}
	if l.Length == 0 {
		return Line{}, errors.New("length 0: a record occupies at least one byte")
	}
	revisit := n == 10 && string(f[6]) == "-1"
	// digest.Canonical takes what digest.Parse takes, without decoding
	// the value (a base32 decode and its allocation on every line every
	// stage reads); Parse says what is wrong with the rest.
	if !(revisit && l.Digest == NoDigest) && !digest.Canonical(f[5]) {
		if _, _, err := digest.Parse(l.Digest); err != nil {
			return Line{}, err
		}
	}
	if revisit {
		// A revisit line: copy 0 and the URI and date it refers to.
		if string(f[7]) != "0" {
			return Line{}, fmt.Errorf("ext -1 with copy %q: a revisit line has copy 0", f[7])
		}
		l.Class, l.Copy = RevisitClass, RevisitCopy
		l.RefURI, l.RefDate = string(f[8]), string(f[9])
		if l.RefURI == "-" || l.RefDate == "-" {
			return Line{}, fmt.Errorf("revisit line with reference %q %q: it must name what it refers to", l.RefURI, l.RefDate)
		}
		return l, nil
	}
	if n >= 7 {
		ext, err := parseNumber(f[6], "ext")
		if err != nil {
			return Line{}, err
		}
		l.Class = int(ext)
	}
	if n == 10 {
		c, err := parseNumber(f[7], "copy")
		if err != nil {
			return Line{}, err
		}
		if c == 0 {
			return Line{}, errors.New("copy 0 on a response: copies are numbered from 1 (copy 0 marks a revisit line, whose ext is -1)")
		}
		l.Copy = int(c)
		l.RefURI, l.RefDate = string(f[8]), string(f[9])
		if (l.Copy == 1) != (l.RefURI == "-") || (l.Copy == 1) != (l.RefDate == "-") {
			return Line{}, fmt.Errorf("copy %d with reference %q %q: copy 1 and only copy 1 has \"- -\"", l.Copy, l.RefURI, l.RefDate)
		}
	}
	return l, nil
}

// indexControl returns the index of the first byte in b that a manifest
// writer escapes (0x00-0x1F and 0x7F; 0x20 separates fields), or -1. A field
// never holds one: tools that split on whitespace (awk, strings.Fields) would
// see a field boundary in \t, \v or \f.
func indexControl(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c == 0x7F {
			return i
		}
	}
	return -1
}

// parseNumber accepts a decimal number without sign or leading zeros, the
// form `sort -n` and every stage agree on.
func parseNumber(b []byte, name string) (int64, error) {
	if len(b) > 1 && b[0] == '0' {
		return 0, fmt.Errorf("%s %q has a leading zero", name, b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s %q is not a non-negative whole number", name, b)
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is out of range", name, b)
	}
	if name == "ext" || name == "copy" {
		if v > 1<<31-1 {
			return 0, fmt.Errorf("%s %q is out of range", name, b)
		}
	}
	return v, nil
}

package manifest

import (
	"bytes"
	"encoding/binary"

	"warcdedup/digest"
)

// Split is a manifest line read for what a scan of every line of a
// numbering needs to know of each: its file, digest, class and copy. A
// numbered line in the form Append writes one is split into its fields
// and checked where it lies, without the strings of the Line that Parse
// builds (on a collection's numbering, parsing every line took half of
// the collisions stage's time); any other line is parsed. Either way
// Split takes the lines Parse takes, with the same Class, Copy and
// Fields, and refuses the others with Parse's error.
type Split struct {
	File   []byte // field 1, escaped as in the line
	Digest []byte // field 6
	Class  int    // as Line.Class: -1 on a revisit line
	Copy   int    // as Line.Copy: 0 on a revisit line and a line of 6 or 7 fields
	Fields int    // 6, 7 or 10

	f [10][]byte
}

// Read reads text, one manifest line without its line feed. File and
// Digest are text's bytes: valid while text is.
func (s *Split) Read(text []byte) error {
	if s.numbered(text) {
		s.File, s.Digest, s.Fields = s.f[0], s.f[5], 10
		return nil
	}
	l, err := Parse(text)
	if err != nil {
		return err
	}
	s.File, s.Digest = Field(text, 0), Field(text, 5)
	s.Class, s.Copy, s.Fields = l.Class, l.Copy, l.Fields
	return nil
}

// IsRevisit, IsDuplicate and IsKept are Line's.
func (s *Split) IsRevisit() bool   { return s.Fields == 10 && s.Class == RevisitClass }
func (s *Split) IsDuplicate() bool { return s.Fields == 10 && s.Copy > 1 }
func (s *Split) IsKept() bool      { return s.Fields == 10 && s.Copy == 1 }

// numbered splits text into its ten fields and sets Class and Copy if it
// is a numbered line in the form Append writes and every check of Parse
// holds; else it reports false, for Parse to read the line or say what
// is wrong with it.
func (s *Split) numbered(text []byte) bool {
	if !s.split(text) || hasControl(text) {
		return false
	}
	f := &s.f
	if _, ok := decimal(f[1], 18); !ok {
		return false // an offset Parse refuses, or one of 19 digits it may take
	}
	if n, ok := decimal(f[2], 18); !ok || n == 0 {
		return false
	}
	class, copyField, refURI, refDate := f[6], f[7], f[8], f[9]
	unreferenced := isDash(refURI) && isDash(refDate)
	referenced := !isDash(refURI) && !isDash(refDate)
	if string(copyField) == "0" {
		// A revisit line, whose digest may be none.
		if string(class) != "-1" || !referenced {
			return false
		}
		s.Class, s.Copy = RevisitClass, RevisitCopy
		return string(f[5]) == NoDigest || digest.Canonical(f[5])
	}
	c, ok := decimal(copyField, 10)
	if !ok || c > 1<<31-1 || (c == 1) != unreferenced || (c > 1) != referenced {
		return false
	}
	n, ok := decimal(class, 10)
	if !ok || n > 1<<31-1 {
		return false
	}
	s.Class, s.Copy = int(n), int(c)
	return digest.Canonical(f[5])
}

// split splits text into the ten fields of a numbered line, or reports
// that it has not ten, none of them empty.
func (s *Split) split(text []byte) bool {
	rest := text
	for i := range s.f {
		j := bytes.IndexByte(rest, ' ')
		if i == len(s.f)-1 {
			if j >= 0 || len(rest) == 0 {
				return false
			}
			s.f[i] = rest
			break
		}
		if j <= 0 {
			return false
		}
		s.f[i], rest = rest[:j], rest[j+1:]
	}
	return true
}

// hasControl reports whether b holds a byte that no field may hold
// (indexControl's: a carriage return left by an editor, the zeros of a
// crash), 8 bytes at a time: Split reads every byte of a numbering.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20, or one 0x7F (zero once xored with 0x7F).
		y := x ^ (0x7F * ones)
		if (x-0x20*ones)&^x&highs != 0 || (y-ones)&^y&highs != 0 {
			return true
		}
	}
	return indexControl(b) >= 0
}

// isDash reports whether a field is "-", a reference copy 1 has not.
func isDash(b []byte) bool { return len(b) == 1 && b[0] == '-' }

// decimal reads a number as parseNumber takes one (digits, no leading
// zero) of at most max digits, without its error: a field it does not
// take goes to Parse, which refuses it or reads it.
func decimal(b []byte, max int) (int64, bool) {
	if len(b) == 0 || len(b) > max || (len(b) > 1 && b[0] == '0') {
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

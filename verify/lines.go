package verify

import (
	"fmt"

	"warcdedup/internal/syssort"
)

// line builds a line of the temporary files: fields separated by one
// space, the fields a file is sorted on first. Manifest fields hold no
// byte at or below 0x20, and numbers are written in a fixed width
// (syssort.Num), so that the sort's byte order is the order of the fields.
type line struct{ b []byte }

func (l *line) start() *line { l.b = l.b[:0]; return l }

func (l *line) sep() {
	if len(l.b) > 0 {
		l.b = append(l.b, ' ')
	}
}

func (l *line) str(s string) *line { l.sep(); l.b = append(l.b, s...); return l }

func (l *line) raw(p []byte) *line { l.sep(); l.b = append(l.b, p...); return l }

func (l *line) num(n int64) *line { l.sep(); l.b = syssort.Num(l.b, n); return l }

// to writes the line to f.
func (l *line) to(f *syssort.File) error { return f.Line(l.b) }

// fields splits the lines of a sorted file.
type fields struct {
	f   [16][]byte
	err error
}

// split splits line into n fields (the last the rest of the line); it
// returns nil, and remembers the error, if there are fewer.
func (s *fields) split(line []byte, n int) [][]byte {
	if !syssort.Fields(line, s.f[:n]) {
		s.err = fmt.Errorf("verify: a temporary line of fewer than %d fields: %.200q", n, line)
		return nil
	}
	return s.f[:n]
}

// num reads a number field, remembering the first error.
func (s *fields) num(b []byte) int64 {
	n, err := syssort.ParseNum(b)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n
}

// Package sortedlines reads a work file of text lines whose first two
// fields are a file name and an offset, sorted on them as a manifest in
// file order is (manifest.ByFile), for a merge join with another file in
// the same order: the facts, saved.tsv, fixity lists and the other
// lists the job's account and records join with its manifests.
package sortedlines

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"warcdedup/manifest"
)

// Scanner reads the lines of a file one at a time, each split into its
// fields (separated by one space).
type Scanner struct {
	f    *os.File
	sc   *bufio.Scanner
	Cur  []string // the fields of the current line; nil at the end
	Done bool     // past the last line
}

// Open opens a file and reads its first line.
func Open(name string) (*Scanner, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	s := &Scanner{f: f, sc: sc}
	s.Advance()
	return s, nil
}

// Advance reads the next line.
func (s *Scanner) Advance() {
	if s.sc.Scan() {
		s.Cur = strings.Split(s.sc.Text(), " ")
		return
	}
	s.Cur, s.Done = nil, true
}

// Err is the error that ended the reading, if any.
func (s *Scanner) Err() error { return s.sc.Err() }

// Find returns the fields of the line of file and offset, if there is one,
// passing over the lines before it (and lines of fewer than two fields).
func (s *Scanner) Find(file string, offset int64) []string {
	for !s.Done {
		if len(s.Cur) < 2 {
			s.Advance()
			continue
		}
		off, _ := strconv.ParseInt(s.Cur[1], 10, 64)
		c := manifest.ByFile.Compare(&manifest.Line{File: s.Cur[0], Offset: off}, &manifest.Line{File: file, Offset: offset})
		switch {
		case c < 0:
			s.Advance()
		case c == 0:
			f := s.Cur
			s.Advance()
			return f
		default:
			return nil
		}
	}
	return nil
}

// Close closes the file.
func (s *Scanner) Close() error { return s.f.Close() }

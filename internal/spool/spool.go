// Package spool holds the output of one unit of parallel work until it is
// that unit's turn to be written, so that parallel stages write in input
// order. A Spool keeps up to a limit in memory and the rest in an unlinked
// temporary file, so memory stays bounded however large one unit's output.
package spool

import (
	"bytes"
	"io"
	"os"
)

// Spool is an io.Writer that can be replayed once with WriteTo.
type Spool struct {
	limit int
	mem   bytes.Buffer
	tmp   *os.File
}

// New returns a Spool holding up to limit bytes in memory.
func New(limit int) *Spool { return &Spool{limit: limit} }

// Write appends p.
func (s *Spool) Write(p []byte) (int, error) {
	if s.tmp == nil && s.mem.Len()+len(p) <= s.limit {
		return s.mem.Write(p)
	}
	if s.tmp == nil {
		f, err := os.CreateTemp("", "warcdedup-spool-*")
		if err != nil {
			return 0, err
		}
		// Unlinked at once: the space is freed on Close, or when the
		// process dies.
		os.Remove(f.Name())
		s.tmp = f
	}
	return s.tmp.Write(p)
}

// WriteTo writes everything written so far to w.
func (s *Spool) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.mem.Bytes())
	total := int64(n)
	if err != nil || s.tmp == nil {
		return total, err
	}
	if _, err := s.tmp.Seek(0, io.SeekStart); err != nil {
		return total, err
	}
	m, err := io.Copy(w, s.tmp)
	return total + m, err
}

// Reset empties s for another unit of work, keeping its memory: a stage
// that spools many units one after another then allocates (and the system
// maps) that memory once.
func (s *Spool) Reset() error {
	s.mem.Reset()
	if s.tmp != nil {
		err := s.tmp.Close()
		s.tmp = nil
		return err
	}
	return nil
}

// Close releases the memory and the temporary file.
func (s *Spool) Close() error {
	s.mem = bytes.Buffer{}
	if s.tmp != nil {
		err := s.tmp.Close()
		s.tmp = nil
		return err
	}
	return nil
}

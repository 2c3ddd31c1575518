// Package spool holds the output of one unit of parallel work until it is
// that unit's turn to be written, so that parallel stages write in input
// order. A Spool keeps up to a limit in memory and the rest in an unlinked
// temporary file, so memory stays bounded however large one unit's output.
package spool

import (
	"bufio"
	"io"
	"os"
)

// Spool is an io.Writer that can be replayed once with WriteTo.
type Spool struct {
	limit int
	mem   []byte // never grows past limit
	tmp   *os.File
	tmpw  *bufio.Writer // over tmp: callers write a line at a time
	// err is a temporary file that could not be made: the writes after
	// it fail too, and so does WriteTo, as a failed write to tmpw does
	// (bufio keeps it), so that what was written whole is never replayed
	// as if it were all (a writer above may not stop at a failed write:
	// a compressor's member cut short reads as no member at all).
	err error
}

// New returns a Spool holding up to limit bytes in memory.
func New(limit int) *Spool { return &Spool{limit: limit} }

// minGrowth is the least the memory grows by, so that a unit of small
// writes does not reallocate at every one of the first few.
const minGrowth = 64 << 10

// tmpBuffer is the buffer of writes to the temporary file.
const tmpBuffer = 64 << 10

// Write appends p.
func (s *Spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.tmp == nil && len(s.mem)+len(p) <= s.limit {
		if len(s.mem)+len(p) > cap(s.mem) {
			// Double, but never past the limit: the limit bounds the
			// memory held, not just the bytes.
			grown := make([]byte, len(s.mem), min(s.limit, max(2*cap(s.mem), len(s.mem)+len(p), minGrowth)))
			copy(grown, s.mem)
			s.mem = grown
		}
		s.mem = append(s.mem, p...)
		return len(p), nil
	}
	if s.tmp == nil {
		f, err := os.CreateTemp("", "warcdedup-spool-*")
		if err != nil {
			s.err = err
			return 0, err
		}
		// Unlinked at once: the space is freed on Close, or when the
		// process dies.
		os.Remove(f.Name())
		s.tmp = f
		if s.tmpw == nil {
			s.tmpw = bufio.NewWriterSize(f, tmpBuffer)
		} else {
			s.tmpw.Reset(f)
		}
	}
	return s.tmpw.Write(p)
}

// WriteTo writes everything written so far to w.
func (s *Spool) WriteTo(w io.Writer) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := w.Write(s.mem)
	total := int64(n)
	if err != nil || s.tmp == nil {
		return total, err
	}
	if err := s.tmpw.Flush(); err != nil {
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
	s.mem = s.mem[:0]
	s.err = nil
	if s.tmp != nil {
		err := s.tmp.Close()
		s.tmp = nil
		s.tmpw.Reset(nil)
		return err
	}
	return nil
}

// Close releases the memory and the temporary file.
func (s *Spool) Close() error {
	s.mem = nil
	err := s.Reset()
	s.tmpw = nil
	return err
}

// Pool hands out spools and takes back those written out, so that a stage
// that spools many units one after another allocates their memory once,
// not once per unit (warccollres spools every digest group: a fresh 64 kB
// per group was a tenth of its CPU).
type Pool struct {
	limit int
	free  chan *Spool
}

// NewPool returns a Pool of spools holding up to limit bytes in memory
// each, keeping up to keep of them for reuse.
func NewPool(limit, keep int) *Pool {
	return &Pool{limit: limit, free: make(chan *Spool, keep)}
}

// Get returns an empty spool.
func (p *Pool) Get() *Spool {
	select {
	case s := <-p.free:
		return s
	default:
		return New(p.limit)
	}
}

// Put empties s and keeps it for a later Get, or closes it when the pool
// holds enough (or s cannot be emptied).
func (p *Pool) Put(s *Spool) {
	if s.Reset() != nil {
		s.Close()
		return
	}
	select {
	case p.free <- s:
	default:
		s.Close()
	}
}

package originals

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Comparer is the io.Writer a duplicate's payload streams into alongside
// its hash: it compares it byte for byte with its original's payload.
type Comparer struct {
	orig io.Reader
	// mem is the rest of the original's payload kept in memory, compared
	// where it lies (orig is nil): copying it into buf first cost a copy
	// of every duplicate's payload.
	mem     []byte
	buf     []byte
	off     int64
	differs bool
}

// NewComparer returns a Comparer with the original's payload: streaming
// from payload, or, if payload is nil, o's (kept in memory). buf is its
// buffer; its capacity is what it reads at once.
func NewComparer(o *Original, payload io.Reader, buf []byte) *Comparer {
	if payload == nil {
		return &Comparer{mem: o.Payload}
	}
	return &Comparer{orig: payload, buf: buf}
}

// InMemory reports whether c compares with the original's payload kept in
// memory (Original.Payload).
func (c *Comparer) InMemory() bool { return c.orig == nil }

// Differs reports whether the bytes written so far differ from the
// original's.
func (c *Comparer) Differs() bool { return c.differs }

// Matched is how many bytes written were compared equal to the original's
// first bytes: all the bytes written while Differs is false. Once it is
// true, for a payload in memory (InMemory), the bytes before the write
// that differed; a streamed original is compared a buffer at a time, so
// Matched then also counts the equal buffers of that write (refs'
// deferredSum relies on the first meaning, and so only on InMemory).
func (c *Comparer) Matched() int64 { return c.off }

func (c *Comparer) Write(p []byte) (int, error) {
	written := len(p)
	if c.differs {
		return written, nil
	}
	if c.orig == nil {
		if len(p) > len(c.mem) || !bytes.Equal(p, c.mem[:len(p)]) {
			c.differs = true
			return written, nil
		}
		c.mem = c.mem[len(p):]
		c.off += int64(len(p))
		return written, nil
	}
	for len(p) > 0 {
		n := min(len(p), cap(c.buf))
		b := c.buf[:n]
		if _, err := io.ReadFull(c.orig, b); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				c.differs = true
				return written, nil
			}
			return 0, fmt.Errorf("%w: reading it: %v", ErrOriginal, err)
		}
		if !bytes.Equal(b, p[:n]) {
			c.differs = true
			return written, nil
		}
		c.off += int64(n)
		p = p[n:]
	}
	return written, nil
}

// End reports whether the whole payload equalled the original's: the
// original must end where the duplicate did. An error is a failure to read
// the original (it wraps ErrOriginal).
func (c *Comparer) End() (bool, error) {
	if c.differs {
		return false, nil
	}
	if c.orig == nil {
		return len(c.mem) == 0, nil
	}
	var one [1]byte
	n, err := io.ReadFull(c.orig, one[:])
	switch {
	case n > 0:
		return false, nil
	case err == io.EOF:
		return true, nil
	}
	return false, fmt.Errorf("%w: reading it: %v", ErrOriginal, err)
}

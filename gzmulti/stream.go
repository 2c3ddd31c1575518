package gzmulti

import (
	"errors"
	"io"
)

// Stream reads the inflated bytes of every member of a file one after
// another, as one stream, for files whose members are not record
// boundaries: a whole file compressed as one member, or members holding
// several records. A plain file reads as itself. Offsets in the stream
// count inflated bytes; they are not offsets in the file, and no later
// stage can address a record by them.
//
// Damage (an *Error wrapping ErrTruncated, ErrChecksum, ErrCorrupt or
// ErrGarbage) stops the stream where it was found: Read returns it, and
// keeps returning it, so that a reader buffering ahead cannot lose it,
// until Resume goes on with the next member Next finds. Any other error
// (the file could not be read) ends the stream for good.
type Stream struct {
	z        *Reader
	inMember bool
	damage   error // what stopped the stream until Resume
	fatal    error // what ended the stream for good
}

// NewStream returns a Stream of the members z has not reached yet.
func NewStream(z *Reader) *Stream { return &Stream{z: z} }

// IsDamage reports whether err is damage in a file (a bad member or bytes
// that are no member), after which reading can go on, rather than a failure
// to read the file.
func IsDamage(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, kind := range []error{ErrTruncated, ErrChecksum, ErrCorrupt, ErrGarbage} {
		if errors.Is(e.Err, kind) {
			return true
		}
	}
	return false
}

// Read reads inflated bytes; io.EOF after the last member.
func (s *Stream) Read(p []byte) (int, error) {
	switch {
	case s.fatal != nil:
		return 0, s.fatal
	case s.damage != nil:
		return 0, s.damage
	case len(p) == 0:
		return 0, nil
	}
	for {
		if !s.inMember {
			if _, err := s.z.Next(); err != nil {
				return 0, s.stop(err)
			}
			s.inMember = true
		}
		n, err := s.z.Read(p)
		switch {
		case err == io.EOF:
			s.inMember = false
			if n == 0 {
				continue
			}
			return n, nil
		case err != nil:
			s.inMember = false
			return n, s.stop(err)
		}
		return n, nil
	}
}

// stop records what stopped the stream: damage until Resume, anything else
// for good. io.EOF is the end of the file.
func (s *Stream) stop(err error) error {
	switch {
	case err == io.EOF:
		s.fatal = io.EOF
	case IsDamage(err):
		s.damage = err
	default:
		s.fatal = err
	}
	return err
}

// Damage is the damage the stream stopped at, nil if it did not.
func (s *Stream) Damage() error { return s.damage }

// Resume goes on after the damage Read returned with the next member the
// file holds. It does nothing if the stream did not stop at damage.
func (s *Stream) Resume() { s.damage = nil }

// Reader is the member reader the stream reads from.
func (s *Stream) Reader() *Reader { return s.z }

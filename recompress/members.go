package recompress

import (
	"warcdedup/gzmulti"
)

// memberWriter receives a file's inflated stream, as the record reader
// pulls it, and writes it out as gzip members cut where records start. It
// holds only the bytes read ahead of the reader: everything before the
// reader's position is compressed as soon as the reader passes it.
type memberWriter struct {
	zw      *gzmulti.Writer
	pending []byte // stream bytes from offset done on, not compressed yet
	head    int    // pending[:head] are compressed already
	done    int64  // stream offset of pending[head]
	open    bool   // a member has been started and not closed
	members int64
}

func newMemberWriter(zw *gzmulti.Writer) *memberWriter { return &memberWriter{zw: zw} }

// Write takes stream bytes as they are read.
func (m *memberWriter) Write(p []byte) (int, error) {
	if m.head > 0 && m.head >= len(m.pending)/2 {
		// Move what is left to the front, at most once per byte on average.
		m.pending = m.pending[:copy(m.pending, m.pending[m.head:])]
		m.head = 0
	}
	m.pending = append(m.pending, p...)
	return len(p), nil
}

// compressTo adds the stream bytes before offset off to the current member.
func (m *memberWriter) compressTo(off int64) error {
	n := int(min(off-m.done, int64(len(m.pending)-m.head)))
	if n <= 0 {
		return nil
	}
	m.open = true
	if _, err := m.zw.Write(m.pending[m.head : m.head+n]); err != nil {
		return err
	}
	m.head += n
	m.done += int64(n)
	return nil
}

// cut ends the current member at stream offset at, where a record starts.
func (m *memberWriter) cut(at int64) error {
	if err := m.compressTo(at); err != nil {
		return err
	}
	return m.closeMember()
}

// close writes the rest of the stream into the last member.
func (m *memberWriter) close() error {
	if err := m.compressTo(m.done + int64(len(m.pending)-m.head)); err != nil {
		return err
	}
	return m.closeMember()
}

func (m *memberWriter) closeMember() error {
	if !m.open {
		return nil
	}
	m.open = false
	m.members++
	_, err := m.zw.CloseMember()
	return err
}

// progress tells a memberWriter how far the record reader has read: it is
// the io.Writer a block is copied to.
type progress struct {
	m   *memberWriter
	pos int64 // stream offset just past the bytes written
}

func (p *progress) Write(b []byte) (int, error) {
	p.pos += int64(len(b))
	return len(b), p.m.compressTo(p.pos)
}

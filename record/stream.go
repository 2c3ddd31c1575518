package record

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"warcdedup/gzmulti"
)

// NewStreamReader returns a Reader for files whose gzip members are not
// record boundaries: a file compressed as one gzip member, or members
// holding several records (which NewReader reports as ErrMultiRecord).
// Records are read from the inflated stream of all members, one after
// another, as from a plain file; a plain file reads as with NewReader.
//
// Record.Offset and Record.Length then count bytes of the inflated stream,
// not of the file: they serve to say where a record was, and to cut the
// stream into records (recompression, conversion), but no later stage can
// fetch a record by them. Deduplication needs NewReader, which reads one
// record per member and gives member offsets.
//
// Damage is reported as with NewReader: record damage with its offset in
// the inflated stream (Error.Inflated is set for a gzip file), damage of a
// gzip member with the member's offset in the file. After gzip damage,
// Next goes on with the next member the file holds; the inflated bytes
// lost in the damaged member are not counted in later offsets.
func NewStreamReader(r io.Reader, name string) (*Reader, error) {
	z, err := gzmulti.NewReader(r, name)
	if err != nil {
		return nil, err
	}
	s := gzmulti.NewStream(z)
	return &Reader{name: name, z: z, stream: s, br: bufio.NewReaderSize(s, bufferSize)}, nil
}

// nextInStream is Next for a Reader of NewStreamReader: a plain file's
// Next over the inflated stream.
func (r *Reader) nextInStream() (*Record, error) {
	if r.streamReported {
		// The stream stopped at damage and the caller was told. What is
		// still buffered came before the damage without starting a record
		// (a record line cut by it): it belongs to the damaged stretch.
		r.pos += int64(r.br.Buffered())
		r.stream.Resume()
		r.br.Reset(r.stream)
		r.streamReported = false
	}
	rec, err := r.nextPlain()
	return rec, r.streamErr(err)
}

// streamErr turns the damage a stream stopped at, met where a plain file
// could only fail to be read, into an *Error, so that the caller can go on
// with the next record. Other errors pass unchanged.
func (r *Reader) streamErr(err error) error {
	var re *Error
	if r.stream == nil || errors.As(err, &re) || !gzmulti.IsDamage(err) {
		return err
	}
	return r.gzipError(err)
}

// noteStreamDamage notes that ge, about to be returned, is the damage the
// stream stopped at.
func (r *Reader) noteStreamDamage(ge *gzmulti.Error) {
	if r.stream == nil {
		return
	}
	var sd *gzmulti.Error
	if errors.As(r.stream.Damage(), &sd) && sd == ge {
		r.streamReported = true
	}
}

// damageFollows reports whether err is gzip damage that a stream Reader met
// after the record or stretch it was reading: it is reported by the next
// call to Next, as the damage it is.
func (r *Reader) damageFollows(err error) bool {
	var re *Error
	return r.stream != nil && err != nil && !errors.As(err, &re) && gzmulti.IsDamage(err)
}

// skippedToDamage describes the bytes skipped from offset from up to gzip
// damage.
func (r *Reader) skippedToDamage(from int64) string {
	return fmt.Sprintf("%d bytes at offset %d skipped up to damage in the gzip stream", r.pos-from, from)
}

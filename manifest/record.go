package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"warcdedup/record"
)

// A line names a record, and every stage that reads the record again
// checks that it still does: its file may have changed since it was
// listed, or the line may lie. A reader started at the line's offset
// must find there, with nothing skipped, a record of the line's length
// with the line's URI and date: a response, neither truncated nor
// segmented, with a complete HTTP head, whose payload hashes to the
// line's digest. The check goes with the reading: NextRecord and
// CheckRecord when the header is read, ReadHTTPHead, then CheckDigest
// and CheckEnd once the block is read (ReadRecord does the first three).

// The reasons a line no longer names its record. The stages wrap them:
// warccollres leaves the line out (a stale line), warcrefs refuses the
// file, or the original.
var (
	ErrNotARecord     = errors.New("the bytes at offset/length are not one whole record")
	ErrNotResponse    = errors.New("the record is not the HTTP response the line names")
	ErrFieldsChanged  = errors.New("the record's URI or date differ from the line's")
	ErrDigestMismatch = errors.New("the payload does not hash to the line's digest")
)

// Expect says what a line may name besides a whole response, and what
// may differ.
type Expect struct {
	// Revisit: the record may be a revisit (one an earlier run wrote in
	// place of the response); its URI and date are checked, what it
	// refers to is the caller's to check.
	Revisit bool
	// Adopt: a record whose URI or date the line spells otherwise is
	// taken, and the line given the record's own (a committed original
	// of a crawl index imported from CDX, which spells them its own way);
	// its offset, length and digest still say it is the record.
	Adopt bool
}

// NextRecord reads the record at the start of rr, a reader started at a
// line's offset: what cannot be read there is ErrNotARecord.
func NextRecord(rr *record.Reader) (*record.Record, error) {
	rec, err := rr.Next()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: %v", ErrNotARecord, err)
	}
	return rec, nil
}

// CheckRecord checks the header of rec, the record NextRecord read at l's
// offset, against l: it starts there, with nothing skipped before it (a
// plain file's reader skips line ends: a line whose offset points at
// them names no record), has l's URI and date (with e.Adopt, l takes the
// record's), and is a response neither truncated nor segmented (or, with
// e.Revisit, a revisit).
func (l *Line) CheckRecord(rec *record.Record, e Expect) error {
	if rec.Offset != 0 {
		return fmt.Errorf("%w: the record starts %d bytes after the line's offset", ErrNotARecord, rec.Offset)
	}
	if uri, date := URIField(rec), DateField(rec); uri != l.URI || date != l.Date {
		if !e.Adopt {
			return fmt.Errorf("%w: the record has %s %s", ErrFieldsChanged, uri, date)
		}
		l.URI, l.Date = uri, date
	}
	switch {
	case rec.Type == "revisit" && e.Revisit:
	case rec.Type != "response":
		return fmt.Errorf("%w: it is a %q record", ErrNotResponse, rec.Type)
	case rec.Header.Has("WARC-Truncated") || rec.Header.Has("WARC-Segment-Number"):
		// warcsum never lists these (records.md section 1): a line naming
		// one comes from something else than this toolchain's manifest.
		return fmt.Errorf("%w: a truncated or segmented response, which is never a copy of another", ErrNotResponse)
	}
	return nil
}

// ReadHTTPHead reads the HTTP head of a response's block: it must be a
// complete response head.
func ReadHTTPHead(rr *record.Reader) (*record.HTTPHead, error) {
	head, err := rr.ReadHTTPHead()
	if err != nil || head.Status == 0 || !head.Complete {
		return nil, fmt.Errorf("%w: no complete HTTP response head (%v)", ErrNotResponse, err)
	}
	return head, nil
}

// ReadRecord reads the response at the start of rr, a reader started at
// l's offset, up to its payload, checking that l still names it
// (NextRecord, CheckRecord, ReadHTTPHead).
func (l *Line) ReadRecord(rr *record.Reader, e Expect) (*record.Record, *record.HTTPHead, error) {
	rec, err := NextRecord(rr)
	if err != nil {
		return nil, nil, err
	}
	if err := l.CheckRecord(rec, e); err != nil {
		return nil, nil, err
	}
	head, err := ReadHTTPHead(rr)
	if err != nil {
		return nil, nil, err
	}
	return rec, head, nil
}

// CheckEnd checks, once rec's block is read, that the record ends where l
// says: whole, l's length, and, with alone (rr reads l's bytes and no
// more), nothing after it.
func (l *Line) CheckEnd(rr *record.Reader, rec *record.Record, alone bool) error {
	if err := rr.Finish(); err != nil {
		return fmt.Errorf("%w: %v", ErrNotARecord, err)
	}
	if rec.Length != l.Length {
		return fmt.Errorf("%w: the record is %d bytes, the line says %d", ErrNotARecord, rec.Length, l.Length)
	}
	if !alone {
		return nil
	}
	if next, err := rr.Next(); err != io.EOF {
		what := fmt.Sprint(err)
		if err == nil {
			what = fmt.Sprintf("another record at byte %d", next.Offset)
		}
		return fmt.Errorf("%w: %s follows the record in its %d bytes", ErrNotARecord, what, l.Length)
	}
	return nil
}

// CheckDigest checks that sum, the payload's hash in l's algorithm, is
// l's digest.
func (l *Line) CheckDigest(sum []byte) error {
	if got := l.Algorithm().AppendFormat(nil, sum); !bytes.Equal(got, []byte(l.Digest)) {
		return fmt.Errorf("%w: it hashes to %s", ErrDigestMismatch, got)
	}
	return nil
}

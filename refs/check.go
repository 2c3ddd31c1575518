package refs

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"warcdedup/digest"
	"warcdedup/manifest"
	"warcdedup/record"
)

// RefusedError says why a file is left untouched: a line of the manifest
// does not describe the record at its offset (a stale manifest), or the
// file could not be rewritten safely.
type RefusedError struct {
	File   string
	Offset int64 // -1 when the refusal is about the whole file
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s: left untouched: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: offset %d: left untouched: %v", e.File, e.Offset, e.Err)
}
func (e *RefusedError) Unwrap() error { return e.Err }

// The reasons a line refuses its file, wrapped in a *RefusedError.
var (
	ErrNotARecord     = errors.New("the bytes at offset/length are not one whole record")
	ErrNotResponse    = errors.New("the record is neither the response the line names nor its revisit")
	ErrFieldsChanged  = errors.New("the record's URI or date differ from the line's")
	ErrDigestMismatch = errors.New("the payload does not hash to the line's digest")
	ErrOverlap        = errors.New("the line overlaps the record before it")
	// errARC: an ARC record has no revisit form; the file is skipped, not
	// refused (convert it to WARC, then deduplicate the WARC).
	errARC = errors.New("ARC records cannot become revisits: convert the file to WARC first")
)

// refersURI is a revisit's WARC-Refers-To-Target-URI in the manifest's
// spelling (field 9), to compare with a line.
func refersURI(rec *record.Record) string {
	return manifest.EscapeField(strings.Trim(rec.Header.Get(hRefersURI), "<>"))
}

// found is what stands at a line's offset.
type found struct {
	revisit []byte // the revisit to write (plain record bytes), for a response
	already bool   // the record is already this line's revisit
	length  int64  // the record's length as stored
}

// examine reads the record at the reader's start and checks it against l:
// either the response l names, whose payload must hash to l's digest (then
// the revisit that replaces it is built), or a revisit of l's record
// written by an earlier run (then nothing is to be done).
func (w *worker) examine(rr *record.Reader, l *manifest.Line) (*found, error) {
	refuse := func(err error) error { return &RefusedError{File: l.File, Offset: l.Offset, Err: err} }
	rec, err := rr.Next()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, refuse(fmt.Errorf("%w: %v", ErrNotARecord, err))
	}
	if rec.Format != record.WARC {
		return nil, errARC
	}
	if rec.Offset != 0 {
		// The reader skips line ends before a record of a plain file: a
		// line whose offset points at them names no record. Rewriting
		// from there would cut the terminator of the record before.
		return nil, refuse(fmt.Errorf("%w: the record starts %d bytes after the line's offset", ErrNotARecord, rec.Offset))
	}
	if manifest.URIField(rec) != l.URI || manifest.DateField(rec) != l.Date {
		return nil, refuse(fmt.Errorf("%w: the record has %s %s", ErrFieldsChanged, manifest.URIField(rec), manifest.DateField(rec)))
	}
	switch rec.Type {
	case "revisit":
		// Done by an earlier run if it points where this line says.
		if refersURI(rec) != l.RefURI || rec.Header.Get(hRefersDate) != l.RefDate {
			return nil, refuse(fmt.Errorf("%w: a revisit that refers to %s %s, not %s %s", ErrNotResponse,
				rec.Header.Get(hRefersURI), rec.Header.Get(hRefersDate), l.RefURI, l.RefDate))
		}
		if err := rr.Finish(); err != nil {
			return nil, refuse(fmt.Errorf("%w: %v", ErrNotARecord, err))
		}
		return &found{already: true, length: rec.Length}, nil
	case "response":
		// warcsum never lists these (records.md section 1): a line naming
		// one comes from something else than this toolchain's manifest.
		if rec.Header.Has(hTruncated) || rec.Header.Has(hSegmentNumber) {
			return nil, refuse(fmt.Errorf("%w: a truncated or segmented response must never become a revisit", ErrNotResponse))
		}
	default:
		return nil, refuse(fmt.Errorf("%w: it is a %q record", ErrNotResponse, rec.Type))
	}

	head, err := rr.ReadHTTPHead()
	if err != nil || head.Status == 0 || !head.Complete {
		return nil, refuse(fmt.Errorf("%w: no complete HTTP response head (%v)", ErrNotResponse, err))
	}
	w.head = append(w.head[:0], head.Raw...)

	// Hash the payload in the manifest's algorithm and, if it differs, in
	// that of the record's own WARC-Payload-Digest, to know whether the
	// record's value may be kept.
	algo := l.Algorithm()
	sum := w.hash(algo)
	var own hash.Hash
	ownValue, hasOwn := rec.Header.Lookup(hPayloadDigest)
	ownAlgo, ownSum, ownErr := digest.ParseHeader(ownValue)
	sink := io.Writer(sum)
	if hasOwn && ownErr == nil && ownAlgo != algo {
		own = w.hash(ownAlgo)
		sink = io.MultiWriter(sum, own)
	}
	if _, err := rr.WriteTo(sink); err != nil {
		return nil, refuse(fmt.Errorf("%w: %v", ErrNotARecord, err))
	}
	if err := rr.Finish(); err != nil {
		return nil, refuse(fmt.Errorf("%w: %v", ErrNotARecord, err))
	}
	if rec.Length != l.Length {
		return nil, refuse(fmt.Errorf("%w: the record is %d bytes, the line says %d", ErrNotARecord, rec.Length, l.Length))
	}
	got := algo.AppendFormat(nil, sum.Sum(nil))
	if !bytes.Equal(got, []byte(l.Digest)) {
		return nil, refuse(fmt.Errorf("%w: it hashes to %s", ErrDigestMismatch, got))
	}
	payloadDigest := l.Digest
	if hasOwn && ownErr == nil {
		ownRight := false
		if own != nil {
			ownRight = bytes.Equal(own.Sum(nil), ownSum)
		} else {
			ownRight = bytes.Equal(sum.Sum(nil), ownSum)
		}
		if ownRight {
			// What an indexer saw on the original, so lookups match.
			payloadDigest = strings.TrimSpace(ownValue)
		}
	}
	// The manifest escapes whitespace in URIs as %XX and cannot be decoded
	// (a URI may hold a literal %20). When the original has the duplicate's
	// own URI, its exact spelling is at hand: the duplicate's own.
	refURI := l.RefURI
	switch {
	case refURI == l.URI:
		refURI = rec.TargetURI()
	case hasEscape(refURI):
		if exact, ok := w.r.Protect.exactURI(l.RefURI, l.RefDate); ok {
			refURI = exact
		}
	}
	v := Revisit{Record: rec, HTTPHead: w.head, RefURI: refURI, RefDate: l.RefDate, PayloadDigest: payloadDigest}
	b, err := v.Bytes()
	if err != nil {
		return nil, refuse(err)
	}
	return &found{revisit: b, length: rec.Length}, nil
}

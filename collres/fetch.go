package collres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/record"
)

// Opener opens the stored bytes of the record a manifest line names.
// source.Locator is the Opener of the commands.
type Opener interface {
	Open(ctx context.Context, file string, offset, length int64) (io.ReadCloser, error)
}

// StaleError is a manifest line that no longer describes its record: the
// file is missing or changed, the offset does not start a record of the
// stated length, the record is not a response with the line's URI and date,
// or its payload does not hash to the line's digest (the reasons of package
// manifest: manifest.ErrNotARecord and the others, which it wraps). A stale
// line is left out of the output: it never becomes an original or a
// duplicate.
type StaleError struct {
	File   string
	Offset int64
	Length int64 // the line's: where a second look at the record reads
	Err    error
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s: offset %d: stale manifest line: %v", e.File, e.Offset, e.Err)
}
func (e *StaleError) Unwrap() error { return e.Err }

// payload is the payload of a fetched record, checked against its line
// while it is read.
type payload struct {
	line   *manifest.Line
	body   io.ReadCloser
	rr     *record.Reader
	rec    *record.Record // the record's header, valid until rr is reset
	policy policy.Policy
	key    string // the record's policy key
	adopt  bool   // the line takes the record's URI and date
}

func stale(l *manifest.Line, err error) error {
	return &StaleError{File: l.File, Offset: l.Offset, Length: l.Length, Err: err}
}

// openPayload fetches the record l names and reads it up to its payload,
// checking that it is the response the line describes. rr is reset onto
// the fetched bytes (nil for a new reader).
//
// With adopt (a committed original of a crawl index, which may have come
// from a CDX index that spells URIs and dates its own way), a record whose
// URI or date the line spells otherwise is taken, and the line given the
// record's own: its offset, length and payload digest, checked as for any
// line, say it is the record.
func openPayload(ctx context.Context, src Opener, l *manifest.Line, rr *record.Reader, pol policy.Policy, adopt bool) (*payload, error) {
	body, err := src.Open(ctx, l.File, l.Offset, l.Length)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, stale(l, err)
	}
	p := &payload{line: l, body: body, rr: rr, policy: pol, adopt: adopt}
	if err := p.start(); err != nil {
		body.Close()
		return nil, err
	}
	return p, nil
}

func (p *payload) start() error {
	l := p.line
	rr, err := record.Reuse(p.rr, p.body, l.File)
	if err != nil {
		return stale(l, err)
	}
	p.rr = rr
	rr.SetBase(l.Offset)
	rec, head, err := l.ReadRecord(rr, manifest.Expect{Adopt: p.adopt})
	if err != nil {
		return stale(l, err)
	}
	p.rec = rec
	p.key = p.policy.Key(rec, head)
	return nil
}

// WriteTo streams the payload to w.
func (p *payload) WriteTo(w io.Writer) (int64, error) {
	n, err := p.rr.WriteTo(w)
	var damage *record.Error
	if errors.As(err, &damage) {
		err = stale(p.line, fmt.Errorf("%w: %v", manifest.ErrNotARecord, err))
	}
	return n, err
}

// finish checks that the record ended exactly where the line says, with
// nothing after it, and closes the fetch.
func (p *payload) finish() error {
	defer p.body.Close()
	if err := p.line.CheckEnd(p.rr, p.rec, true); err != nil {
		return stale(p.line, err)
	}
	return nil
}

func (p *payload) close() { p.body.Close() }

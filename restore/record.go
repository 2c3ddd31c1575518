package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"warcdedup/gzmember"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/record"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
)

// recordRestore is the restore of one revisit of a file: the revisit as
// read, the original it takes its payload from, and the record written in
// its place (or the revisit re-pointed). A revisit this toolchain wrote
// must be restored, or the file is refused; another tool's that cannot be
// is left as it is (leave).
type recordRestore struct {
	f    *fileRestore
	rr   *record.Reader // about to read the revisit's block
	rec  *record.Record
	ours bool            // the log wrote it
	mv   rewritelog.Move // the log's entry, if ours
	at   int64           // its offset in the file
	rs   *revisit.Restoring
	// head is the revisit's block: the HTTP head of the record it
	// replaced; nil if it has none (another tool's).
	head []byte
	line manifest.Line // its original's
	orig *originals.Original
	// payload streams the original's payload, when it is not kept in
	// memory (orig.Payload); nil once closed.
	payload io.ReadCloser
}

// errLeft says that a revisit was left as it is, and why was said.
var errLeft = errors.New("left as it is")

// restoreRecord restores the revisit rec, whose block rr is about to
// read (see recordRestore).
func (f *fileRestore) restoreRecord(ctx context.Context, rr *record.Reader, rec *record.Record, ours bool, mv rewritelog.Move) error {
	x := &recordRestore{f: f, rr: rr, rec: rec, ours: ours, mv: mv, at: rec.Offset}
	defer x.closePayload()
	err := x.run(ctx)
	if err == errLeft {
		return nil
	}
	return err
}

func (x *recordRestore) run(ctx context.Context) error {
	if err := x.read(); err != nil {
		return err
	}
	if err := x.openOriginal(ctx); err != nil {
		return err
	}
	if done, err := x.retarget(ctx); done || err != nil {
		return err
	}
	if x.head == nil {
		if x.ours {
			return x.leave(errors.New("it has no HTTP head"))
		}
		x.head = x.orig.Head // another tool's revisit without one: the original's
	}
	header, trailer, kept, err := x.ends(ctx)
	if err != nil {
		return err
	}
	return x.write(ctx, header, trailer, kept)
}

// leave refuses the file for a revisit this toolchain wrote, and leaves
// another tool's as it is, saying why (errLeft).
func (x *recordRestore) leave(err error) error {
	f := x.f
	if x.ours {
		return &inplace.RefusedError{File: f.File, Offset: x.at, Err: fmt.Errorf("the revisit this toolchain wrote cannot be restored: %w", err)}
	}
	x.rr.Finish()
	f.t.stats.Left++
	if r := f.w.r; r.Warn != nil {
		r.Warn(fmt.Errorf("%s: offset %d: revisit left as it is: %w", f.File, x.at, err))
	}
	return errLeft
}

// read reads the revisit's block, its HTTP head, and checks the revisit
// is the log's, if ours.
func (x *recordRestore) read() error {
	rs, err := revisit.Restore(x.rec)
	if err != nil {
		return x.leave(err)
	}
	x.rs = rs
	if x.ours && len(x.mv.PayloadDigest) > 0 && string(x.mv.PayloadDigest) != rs.PayloadDigest {
		return x.f.Refuse(fmt.Errorf("log line %d wrote a revisit of %s at offset %d, and the revisit there names %s: the log is not this file's", x.mv.Line, x.mv.PayloadDigest, x.at, rs.PayloadDigest))
	}
	h, err := x.rr.ReadHTTPHead()
	if err != nil {
		return x.leave(err)
	}
	if h.Status != 0 && h.Complete {
		x.head = bytes.Clone(h.Raw)
	}
	if x.rr.BlockLeft() > 0 {
		return x.leave(fmt.Errorf("its block holds %d bytes more than an HTTP head", x.rr.BlockLeft()))
	}
	if err := x.rr.Finish(); err != nil {
		return x.leave(err)
	}
	return nil
}

// openOriginal finds the original and reads it up to its payload,
// checked.
func (x *recordRestore) openOriginal(ctx context.Context) error {
	line, err := x.f.pickOriginal(x.rs.Algorithm.Format(x.rs.Sum), x.rec)
	if err != nil {
		return x.leave(err)
	}
	x.line = line
	if err := x.open(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return x.leave(fmt.Errorf("%w %s offset %d (%s %s): %v", originals.ErrOriginal, line.File, line.Offset, line.URI, line.Date, err))
	}
	return nil
}

// open reads the original, again, from its start.
func (x *recordRestore) open(ctx context.Context) error {
	x.closePayload()
	r := x.f.w.r
	orig, payload, err := r.Originals.Open(ctx, &x.line, r.Policy, x.f.w.log)
	if err != nil {
		return err
	}
	x.orig, x.payload = orig, payload
	return nil
}

// reopen is open after the original's payload was read once.
func (x *recordRestore) reopen(ctx context.Context) error {
	if err := x.open(ctx); err != nil {
		return x.leave(fmt.Errorf("%w %s offset %d: %v", originals.ErrOriginal, x.line.File, x.line.Offset, err))
	}
	return nil
}

func (x *recordRestore) closePayload() {
	if x.payload != nil {
		x.payload.Close()
		x.payload = nil
	}
}

// retarget re-points the revisit to the other copy Restorer.Retarget
// names for its original, if there is one that takes its place (see
// repoint); done says it was.
func (x *recordRestore) retarget(ctx context.Context) (done bool, err error) {
	r, rec := x.f.w.r, x.rec
	if r.Retarget == nil || !rec.Header.Has(hRefersURI) || !rec.Header.Has(hRefersDate) {
		return false, nil
	}
	alt, ok := r.Retarget(&x.line, strings.TrimSpace(rec.Header.Get("WARC-Date")))
	if !ok {
		return false, nil
	}
	var payload io.Reader
	if x.payload != nil {
		payload = x.payload
	}
	if done, err := x.f.repoint(ctx, rec, x.head, &x.line, x.orig, payload, alt, x.rs.PayloadDigest); done || err != nil {
		return done, err
	}
	// Not the same payload or replay after all: restored, from the
	// original read again.
	return false, x.reopen(ctx)
}

// ends returns the restored record's header and what follows its block:
// kept in the revisit, or by the rule, for which the block's digest is
// computed if the header has one (kept: from what the revisit kept).
func (x *recordRestore) ends(ctx context.Context) (header, trailer []byte, kept bool, err error) {
	var blockDigest string
	if a, ok := x.rs.BlockDigest(); ok {
		bh := a.New()
		bh.Write(x.head)
		if x.payload == nil {
			bh.Write(x.orig.Payload)
		} else {
			// A payload too large to keep is read twice: once for the
			// digest the header gives before it, once to write it.
			if _, err := io.CopyBuffer(bh, x.payload, x.f.w.buf); err != nil {
				x.closePayload()
				return nil, nil, false, x.leave(fmt.Errorf("%w %s offset %d: %v", originals.ErrOriginal, x.line.File, x.line.Offset, err))
			}
			if err := x.reopen(ctx); err != nil {
				return nil, nil, false, err
			}
		}
		blockDigest = a.Format(bh.Sum(nil))
	}
	blockLen := int64(len(x.head)) + x.orig.PayloadLength
	header, keptHeader, err := x.rs.Header(blockLen, blockDigest)
	if err != nil {
		return nil, nil, false, x.leave(err)
	}
	trailer, keptTrailer, err := x.rs.Trailer()
	if err != nil {
		return nil, nil, false, x.leave(err)
	}
	return header, trailer, keptHeader || keptTrailer, nil
}

// write writes the restored record, its payload hashed as it goes (its
// gzip member rebuilt as it was, if the log describes it and zlib makes
// it), checks the payload against the revisit's digest, and notes it.
func (x *recordRestore) write(ctx context.Context, header, trailer []byte, kept bool) error {
	f, r, rs := x.f, x.f.w.r, x.rs
	out, newOff, err := f.StartRecord(x.at)
	if err != nil {
		return err
	}
	src := inlinePayload(x.orig.Payload)
	if x.payload != nil {
		line := x.line
		src = streamedPayload(x.payload, func() (io.ReadCloser, []byte, error) {
			o, p, err := r.Originals.Open(ctx, &line, r.Policy, f.w.log)
			if err != nil {
				return nil, nil, fmt.Errorf("%s offset %d, opened again: %v", line.File, line.Offset, err)
			}
			if p == nil {
				return nil, o.Payload, nil
			}
			return p, nil, nil
		})
		x.payload = nil // src closes it
	}
	defer src.close()
	var desc *gzmember.Description
	if x.ours {
		desc = f.members[x.at]
	}
	ph := rs.Algorithm.New()
	n, how, err := f.writeRecord(out, header, x.head, src, trailer, desc, ph)
	if err != nil {
		return err
	}
	f.t.stats.Members.count(how)
	if got := ph.Sum(nil); !bytes.Equal(got, rs.Sum) {
		return f.Refuse(fmt.Errorf("offset %d: the payload of its original %s offset %d hashes to %s, not the revisit's %s", x.at, x.line.File, x.line.Offset, rs.Algorithm.Format(got), rs.PayloadDigest))
	}
	f.EndRecord(x.at, x.rec.Length, n)
	f.digests = append(f.digests, rs.PayloadDigest)
	f.t.entries = append(f.t.entries, rewritelog.Entry{File: f.Name, OldOffset: x.at, OldLength: x.rec.Length,
		NewOffset: newOff, NewLength: n, Kind: rewritelog.Restored})
	st := &f.t.stats
	switch {
	case !x.ours:
		st.Foreign++
	case kept:
		st.Records++
		st.Kept++
	default:
		st.Records++
		st.Exact++
	}
	return nil
}

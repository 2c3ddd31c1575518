package restore

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"

	"warcdedup/record"
	"warcdedup/revisit"
)

// UndoPreview is the record undo would write in place of a revisit,
// without writing it (warcdedup show): its header and record end, by the
// rule or as the revisit kept them, and its block, the revisit's HTTP head
// followed by the original's payload.
type UndoPreview struct {
	Header        []byte // version line through the blank line
	HTTPHead      []byte // the block's start: the revisit's own, or the original's
	PayloadLength int64  // the original's payload, the rest of the block
	Trailer       []byte // after the block
	// Kept says the header or the record end comes from what the revisit
	// kept (Warcdedup-Added-Fields, -Original-Header, -Original-Trailer)
	// because the rule would not give it back.
	Kept bool
}

// Length is the restored record's length, uncompressed.
func (p *UndoPreview) Length() int64 {
	return int64(len(p.Header)+len(p.HTTPHead)) + p.PayloadLength + int64(len(p.Trailer))
}

// ErrNotRestorable is a revisit undo leaves as it is: not of the
// identical-payload-digest profile, or without a payload digest.
var ErrNotRestorable = errors.New("not restorable")

// PreviewUndo returns what undo would write for the revisit rec, whose
// block is revHead (nil when it holds no HTTP head), from its original's
// HTTP head origHead and payload, read whole from payload here and hashed:
// it must hash to the revisit's WARC-Payload-Digest, as undo requires. It
// follows undo's rule (restoreRecord) and reads what it reads.
func PreviewUndo(rec *record.Record, revHead, origHead []byte, payload io.Reader) (*UndoPreview, error) {
	rs, err := revisit.Restore(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRestorable, err)
	}
	head := revHead
	if head == nil {
		head = origHead // another tool's revisit without one: the original's
	}
	ph := rs.Algorithm.New()
	w := io.Writer(ph)
	blockAlgo, needBlock := rs.BlockDigest()
	var bh hash.Hash
	if needBlock {
		bh = blockAlgo.New()
		bh.Write(head)
		w = io.MultiWriter(ph, bh)
	}
	n, err := io.Copy(w, payload)
	if err != nil {
		return nil, fmt.Errorf("reading the original's payload: %w", err)
	}
	if got := ph.Sum(nil); !bytes.Equal(got, rs.Sum) {
		return nil, fmt.Errorf("the original's payload hashes to %s, not the revisit's %s: undo would refuse the file", rs.Algorithm.Format(got), rs.PayloadDigest)
	}
	p := &UndoPreview{HTTPHead: head, PayloadLength: n}
	blockDigest := ""
	if needBlock {
		blockDigest = blockAlgo.Format(bh.Sum(nil))
	}
	var keptHeader, keptTrailer bool
	if p.Header, keptHeader, err = rs.Header(int64(len(head))+n, blockDigest); err != nil {
		return nil, err
	}
	if p.Trailer, keptTrailer, err = rs.Trailer(); err != nil {
		return nil, err
	}
	p.Kept = keptHeader || keptTrailer
	return p, nil
}

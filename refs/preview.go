package refs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"warcdedup/digest"
	"warcdedup/record"
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
	if p := rec.Header.Get(hProfile); !strings.HasSuffix(strings.TrimSpace(p), "identical-payload-digest") {
		return nil, fmt.Errorf("%w: profile %q: only identical-payload-digest revisits hold a payload found elsewhere", ErrNotRestorable, p)
	}
	digestValue := strings.TrimSpace(rec.Header.Get(hPayloadDigest))
	algo, sum, err := digest.ParseHeader(digestValue)
	if err != nil {
		return nil, fmt.Errorf("%w: WARC-Payload-Digest: %v", ErrNotRestorable, err)
	}
	head := revHead
	if head == nil {
		head = origHead // another tool's revisit without one: the original's
	}
	ph := algo.New()
	w := io.Writer(ph)
	var bh interface {
		io.Writer
		Sum([]byte) []byte
	}
	var blockAlgo digest.Algorithm
	if v, ok := rec.Header.Lookup(hBlockDigest); ok {
		blockAlgo = blockDigestAlgorithm(v)
		h := blockAlgo.New()
		h.Write(head)
		bh = h
		w = io.MultiWriter(ph, h)
	}
	n, err := io.Copy(w, payload)
	if err != nil {
		return nil, fmt.Errorf("reading the original's payload: %w", err)
	}
	if got := ph.Sum(nil); !bytes.Equal(got, sum) {
		return nil, fmt.Errorf("the original's payload hashes to %s, not the revisit's %s: undo would refuse the file", algo.Format(got), digestValue)
	}
	p := &UndoPreview{HTTPHead: head, PayloadLength: n, Trailer: []byte(recordEnd)}
	blockLen := int64(len(head)) + n
	if v, ok := rec.Header.Lookup(hOriginalHeader); ok {
		p.Kept = true
		if p.Header, err = unescapeRaw(v); err != nil {
			return nil, fmt.Errorf("%s: %w", hOriginalHeader, err)
		}
		if cl, err := contentLength(p.Header); err != nil || cl != blockLen {
			return nil, fmt.Errorf("%s gives Content-Length %d (%v), the restored block has %d bytes", hOriginalHeader, cl, err, blockLen)
		}
	} else {
		blockDigest := ""
		if bh != nil {
			blockDigest = blockAlgo.Format(bh.Sum(nil))
		}
		p.Header = restoredHeader(rec, blockLen, blockDigest)
		p.Kept = rec.Header.Has(hAddedFields)
	}
	if v, ok := rec.Header.Lookup(hOriginalTrailer); ok {
		p.Kept = true
		if p.Trailer, err = unescapeTrailer(v); err != nil {
			return nil, fmt.Errorf("%s: %w", hOriginalTrailer, err)
		}
	}
	return p, nil
}

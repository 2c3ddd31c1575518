package revisit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"warcdedup/digest"
	"warcdedup/record"
)

// Restoring is how undo makes the record a revisit replaced again: its
// header and record end, by the rule or from what the revisit kept (see
// Kept), around a block that is the revisit's HTTP head (or its
// original's) followed by the original's payload, which must hash to the
// revisit's WARC-Payload-Digest.
type Restoring struct {
	rec *record.Record
	// PayloadDigest is the revisit's WARC-Payload-Digest as written, and
	// Algorithm and Sum what it says: what the original's payload must
	// hash to.
	PayloadDigest string
	Algorithm     digest.Algorithm
	Sum           []byte
}

// Restore returns how the record the revisit rec replaced is restored. An
// error says why it cannot be: not of the identical-payload-digest
// profile (warcio's uri-agnostic-identical-payload-digest is), or
// without a payload digest that can be read.
func Restore(rec *record.Record) (*Restoring, error) {
	if p := rec.Header.Get(hProfile); !strings.HasSuffix(strings.TrimSpace(p), "identical-payload-digest") {
		return nil, fmt.Errorf("profile %q: only identical-payload-digest revisits hold a payload found elsewhere", p)
	}
	r := &Restoring{rec: rec, PayloadDigest: strings.TrimSpace(rec.Header.Get(hPayloadDigest))}
	var err error
	if r.Algorithm, r.Sum, err = digest.ParseHeader(r.PayloadDigest); err != nil {
		return nil, fmt.Errorf("WARC-Payload-Digest: %w", err)
	}
	return r, nil
}

// BlockDigest says whether the header the rule writes needs the digest of
// the restored block, and in which algorithm: when the revisit has a
// WARC-Block-Digest and keeps no header of its own.
func (r *Restoring) BlockDigest() (digest.Algorithm, bool) {
	if r.rec.Header.Has(hOriginalHeader) {
		return 0, false
	}
	v, ok := r.rec.Header.Lookup(hBlockDigest)
	if !ok {
		return 0, false
	}
	return BlockDigestAlgorithm(v), true
}

// Header returns the restored record's header, version line through the
// blank line, for a block of blockLen bytes whose digest (if BlockDigest
// asks for one) is blockDigest; kept says it comes, wholly or in part
// (a field the revisit added), from what the revisit kept.
func (r *Restoring) Header(blockLen int64, blockDigest string) (header []byte, kept bool, err error) {
	if v, ok := r.rec.Header.Lookup(hOriginalHeader); ok {
		if header, err = unescapeRaw(v); err != nil {
			return nil, true, fmt.Errorf("%s: %w", hOriginalHeader, err)
		}
		if n, err := contentLength(header); err != nil || n != blockLen {
			return nil, true, fmt.Errorf("%s gives Content-Length %d (%v), the restored block has %d bytes", hOriginalHeader, n, err, blockLen)
		}
		return header, true, nil
	}
	return restoredHeader(r.rec, blockLen, blockDigest), r.rec.Header.Has(hAddedFields), nil
}

// Trailer returns what follows the restored block: CRLF CRLF, or what the
// revisit kept (kept is then true).
func (r *Restoring) Trailer() (trailer []byte, kept bool, err error) {
	v, ok := r.rec.Header.Lookup(hOriginalTrailer)
	if !ok {
		return []byte(recordEnd), false, nil
	}
	if trailer, err = unescapeTrailer(v); err != nil {
		return nil, true, fmt.Errorf("%s: %w", hOriginalTrailer, err)
	}
	return trailer, true, nil
}

// contentLength reads the Content-Length of a raw WARC header.
func contentLength(header []byte) (int64, error) {
	for _, line := range bytes.Split(header, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), hContentLength) {
			return strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		}
	}
	return 0, errors.New("no Content-Length")
}

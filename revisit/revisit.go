// Package revisit is the revisit record this toolchain writes in place of
// a duplicate (records.md section 2), and the rule by which undo makes the
// record it replaced again from it (Restore): the rewrite (package refs)
// writes revisits with it, the restore (package restore) reads them.
package revisit

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"warcdedup/manifest"
	"warcdedup/record"
)

// Profile is the WARC-Profile of a revisit for a WARC version line
// ("WARC/1.1" gives http://netpreserve.org/warc/1.1/revisit/identical-payload-digest):
// jwat's validator reports a profile whose version differs from the
// record's as an error.
func Profile(versionLine string) string {
	v := versionLine
	if i := strings.IndexByte(v, '/'); i >= 0 {
		v = v[i+1:]
	}
	return "http://netpreserve.org/warc/" + strings.TrimSpace(v) + "/revisit/identical-payload-digest"
}

// Revisit describes the revisit record that replaces one duplicate.
type Revisit struct {
	Record *record.Record // the duplicate's header, as read
	// HTTPHead is the duplicate's HTTP status line and headers, byte for
	// byte as stored, through the blank line: the revisit's whole block.
	HTTPHead []byte
	RefURI   string // the original's URI (manifest field 9)
	RefDate  string // the original's WARC-Date (manifest field 10)
	// PayloadDigest is the WARC-Payload-Digest to write: the duplicate's own
	// header value when it is right for the payload, else the manifest's.
	PayloadDigest string
	// Container, if set, is the WARC-Refers-To-Container to write: the
	// WACZ package of the original, when it is another than the
	// duplicate's (Rewriter.Container).
	Container string
	// Kept is what undo needs of the duplicate beyond the rule (see
	// Restore): its header and record end as stored, when the rule would
	// not give them back.
	Kept Kept
}

// header names compared case-insensitively.
const (
	hType          = "WARC-Type"
	hProfile       = "WARC-Profile"
	hRefersURI     = "WARC-Refers-To-Target-URI"
	hRefersDate    = "WARC-Refers-To-Date"
	hRefersTo      = "WARC-Refers-To"
	hPayloadDigest = "WARC-Payload-Digest"
	hBlockDigest   = "WARC-Block-Digest"
	hTruncated     = "WARC-Truncated"
	hSegmentNumber = "WARC-Segment-Number"
	hContentType   = "Content-Type"
	hContentLength = "Content-Length"
)

// hRefersContainer names the WACZ package holding the original
// (Browsertrix's "file://NAME.wacz"; Rewriter.Container).
const hRefersContainer = "WARC-Refers-To-Container"

// Bytes returns the revisit record: the duplicate's own header with as
// little changed as possible (records.md section 2). Its fields keep their
// order; WARC-Type becomes revisit, Content-Length and WARC-Block-Digest
// describe the new block, WARC-Payload-Digest is kept or set, and
// WARC-Profile, WARC-Refers-To-Target-URI, WARC-Refers-To-Date and
// WARC-Truncated are inserted before Content-Type (or Content-Length).
// Lines end in CRLF and the record in CRLF CRLF.
func (v *Revisit) Bytes() ([]byte, error) {
	rec := v.Record
	if rec.Format != record.WARC {
		return nil, fmt.Errorf("a revisit replaces a WARC record, not %s", rec.Format)
	}
	var blockDigest string
	if old, ok := rec.Header.Lookup(hBlockDigest); ok {
		// An old value that cannot tell the algorithm gets sha1, the
		// manifest's convention, rather than a digest nobody can check.
		algo := BlockDigestAlgorithm(old)
		h := algo.New()
		h.Write(v.HTTPHead)
		blockDigest = algo.Format(h.Sum(nil))
	}
	inserted := []record.Field{
		{Name: hProfile, Value: Profile(rec.Version)},
		{Name: hRefersURI, Value: v.RefURI},
		{Name: hRefersDate, Value: v.RefDate},
	}
	if v.Container != "" {
		inserted = append(inserted, record.Field{Name: hRefersContainer, Value: v.Container})
	}
	if !rec.Header.Has(hPayloadDigest) {
		inserted = append(inserted, record.Field{Name: hPayloadDigest, Value: v.PayloadDigest})
	}
	inserted = append(inserted, record.Field{Name: hTruncated, Value: "length"})
	if len(v.Kept.added) > 0 {
		inserted = append(inserted, record.Field{Name: hAddedFields, Value: strings.Join(v.Kept.added, ", ")})
	}
	if v.Kept.header != nil {
		inserted = append(inserted, record.Field{Name: hOriginalHeader, Value: escapeRaw(v.Kept.header)})
	}
	if v.Kept.trailer != nil {
		inserted = append(inserted, record.Field{Name: hOriginalTrailer, Value: escapeTrailer(v.Kept.trailer)})
	}

	insertBefore := hContentLength
	if rec.Header.Has(hContentType) {
		insertBefore = hContentType
	}
	var b bytes.Buffer
	b.Grow(1024 + len(v.HTTPHead))
	b.WriteString(rec.Version)
	b.WriteString("\r\n")
	done := false
	insert := func() {
		if !done {
			for _, f := range inserted {
				writeField(&b, f.Name, f.Value)
			}
			done = true
		}
	}
	for _, f := range rec.Header {
		switch {
		case strings.EqualFold(f.Name, insertBefore):
			insert()
		case strings.EqualFold(f.Name, hProfile), strings.EqualFold(f.Name, hRefersURI),
			strings.EqualFold(f.Name, hRefersDate), strings.EqualFold(f.Name, hTruncated),
			isRevisitField(f.Name):
			// A response has none of these; if one is there it would
			// contradict the revisit, so the new value replaces it.
			continue
		}
		switch {
		case strings.EqualFold(f.Name, hType):
			writeField(&b, f.Name, "revisit")
		case strings.EqualFold(f.Name, hPayloadDigest):
			writeField(&b, f.Name, v.PayloadDigest)
		case strings.EqualFold(f.Name, hBlockDigest):
			writeField(&b, f.Name, blockDigest)
		case strings.EqualFold(f.Name, hContentLength):
			insert()
			writeField(&b, f.Name, strconv.Itoa(len(v.HTTPHead)))
		default:
			writeField(&b, f.Name, f.Value)
		}
	}
	b.WriteString("\r\n")
	b.Write(v.HTTPHead)
	b.WriteString("\r\n\r\n")
	return b.Bytes(), nil
}

func writeField(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(value)
	b.WriteString("\r\n")
}

// RefersURI is a revisit's WARC-Refers-To-Target-URI in the manifest's
// spelling (field 9), to compare with a line.
func RefersURI(rec *record.Record) string {
	return manifest.EscapeField(record.StripAngles(rec.Header.Get(hRefersURI)))
}

// RefersDate is a revisit's WARC-Refers-To-Date in the manifest's spelling
// (field 10).
func RefersDate(rec *record.Record) string {
	return manifest.EscapeField(strings.TrimSpace(rec.Header.Get(hRefersDate)))
}

// Repointed returns the revisit rec, whose block is block, referring to
// another original: the record as it was but for its
// WARC-Refers-To-Target-URI and -Date (uri and date, as the original
// spells them), without a WARC-Refers-To (the record ID of the original
// that goes names no record).
func Repointed(rec *record.Record, block []byte, uri, date string) []byte {
	var b bytes.Buffer
	b.WriteString(rec.Version)
	b.WriteString("\r\n")
	for _, fl := range rec.Header {
		switch {
		case strings.EqualFold(fl.Name, hRefersURI):
			writeField(&b, fl.Name, uri)
		case strings.EqualFold(fl.Name, hRefersDate):
			writeField(&b, fl.Name, date)
		case strings.EqualFold(fl.Name, hRefersTo):
		default:
			writeField(&b, fl.Name, fl.Value)
		}
	}
	b.WriteString("\r\n")
	b.Write(block)
	b.WriteString(recordEnd)
	return b.Bytes()
}

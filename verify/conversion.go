package verify

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"strings"

	"warcdedup/digest"
	"warcdedup/gzmulti"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/warcsum"
)

// File is a file to check: its name for messages and its bytes.
type File struct {
	Name string
	R    io.ReaderAt
	Size int64
}

func (f File) reader() io.Reader { return io.NewSectionReader(f.R, 0, f.Size) }

// ConversionStats counts what checking a conversion found.
type ConversionStats struct {
	ARCRecords  int64 // records read from the ARC, filedesc included, damaged ones not
	WARCRecords int64 // records read from the WARC, warcinfo included
	Matched     int64 // ARC records found in the WARC in their place, block for block
	Truncated   int64 // of them, truncated in the ARC and marked WARC-Truncated in the WARC
	ARCDamage   int64 // stretches of the ARC no record could be read from (lost to any conversion)
	ListedARC   int64 // warcsum lines of the ARC (2xx HTTP responses), compared in order
	ListedWARC  int64 // warcsum lines of the WARC
	Violations  int64
}

// Conversion checks that the WARC file warc holds every record of the ARC
// file arc, as arc2warc writes them (shared/spec/records.md section 4),
// reading both files independently of the converter. It calls violation
// with each problem; the conversion lost nothing if there is none. Two
// comparisons are made:
//
//   - record by record: the ARC read with record.NewStreamReader (any gzip
//     form), the WARC with record.NewReader (one record per gzip member, as
//     deduplication needs): a warcinfo record first, then for each ARC
//     record, in order, a WARC record of the mapped type (filedesc to
//     metadata, HTTP to response, the rest resource), URI, date and block
//     (the filedesc's with its record line) byte for byte, and the facts
//     the mapping adds: WARC-IP-Address (the ARC's, when it is an IP
//     address, else none), Content-Type (text/plain for the filedesc's
//     metadata, "application/http; msgtype=response" for a response,
//     text/dns for a dns: record, the ARC's for a resource, or
//     application/octet-stream without one), WARC-Block-Digest and, but
//     for the metadata, WARC-Payload-Digest (SHA-1 of the block, and of
//     what follows a response's HTTP head): a WARC written by another tool
//     that says anything else of the ARC's records is not its conversion;
//     a truncated ARC
//     record must be marked WARC-Truncated, with the bytes the ARC has. An
//     ARC record the WARC lacks, a WARC record the ARC lacks, damage in the
//     WARC, and bytes of the ARC that no record could be read from are
//     violations;
//   - the paper's check: warcsum of both (the ARC's inflated stream, so
//     that a whole-file gzip ARC is listed too), compared in order by Order.
//
// Memory stays bounded: blocks are compared by digest, manifests streamed.
// An error is returned only when a file could not be read at all.
func Conversion(arc, warc File, violation func(string)) (ConversionStats, error) {
	c := &conversionCheck{arc: arc, warc: warc, violation: violation, sumA: sha1.New(), payA: sha1.New(), sumW: sha1.New()}
	if err := c.records(); err != nil {
		return c.st, err
	}
	err := c.manifests()
	return c.st, err
}

type conversionCheck struct {
	arc, warc        File
	violation        func(string)
	st               ConversionStats
	sumA, payA, sumW hash.Hash
}

func (c *conversionCheck) report(format string, args ...any) {
	c.st.Violations++
	c.violation(fmt.Sprintf(format, args...))
}

// arcRecord is what the WARC must hold for one ARC record.
type arcRecord struct {
	offset    int64
	typ, uri  string
	date      string
	size      int64
	digest    []byte
	truncated bool
	// What the mapping adds: the WARC-IP-Address ("" for none), the
	// Content-Type and the payload's SHA-1 (nil for none).
	ip, contentType string
	payload         []byte
}

// records makes the record-by-record comparison.
func (c *conversionCheck) records() error {
	ar, err := record.NewStreamReader(c.arc.reader(), c.arc.Name)
	if err != nil {
		return err
	}
	wr, err := record.NewReader(c.warc.reader(), c.warc.Name)
	if err != nil {
		return err
	}
	warcOK := true // false once the WARC can no longer be followed
	nextWARC := func() (*record.Record, bool) {
		if !warcOK {
			return nil, false
		}
		rec, err := wr.Next()
		if err == nil {
			return rec, true
		}
		if err != io.EOF {
			c.report("%v: the WARC is damaged; records from here on are not compared", err)
		}
		warcOK = false
		return nil, false
	}
	if rec, ok := nextWARC(); ok {
		c.st.WARCRecords++
		if rec.Type != "warcinfo" {
			c.report("%s: offset %d: the first record is a %q record, not warcinfo", c.warc.Name, rec.Offset, rec.Type)
		}
		if err := c.finishWARC(wr, rec); err != nil {
			return err
		}
	}
	for {
		rec, err := ar.Next()
		if err == io.EOF {
			break
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			c.st.ARCDamage++
			c.report("%v: what the ARC held there cannot be in the WARC", err)
			continue
		}
		if err != nil {
			return err
		}
		if rec.Format != record.ARC {
			return fmt.Errorf("%s: not an ARC file (a %s record at offset %d)", c.arc.Name, rec.Format, rec.Offset)
		}
		want, ok, err := c.readARC(ar, rec)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if want.date == "" {
			// No WARC record can hold it (a WARC record has a date, and
			// none is made up): damage, as the converter reports it.
			c.st.ARCDamage++
			c.report("%s: %s %s has no date (%q): no WARC record can hold it (the ARC file keeps it)", c.where(want), want.typ, want.uri, rec.ARCFields.Date)
			continue
		}
		c.st.ARCRecords++
		w, ok := nextWARC()
		if !ok {
			c.report("%s: %s %s (%s) is missing from the WARC", c.where(want), want.typ, want.uri, want.date)
			continue
		}
		c.st.WARCRecords++
		if err := c.compare(wr, w, want); err != nil {
			return err
		}
	}
	for {
		w, ok := nextWARC()
		if !ok {
			break
		}
		c.st.WARCRecords++
		c.report("%s: offset %d: %s record %s %s has no counterpart in the ARC", c.warc.Name, w.Offset, w.Type, w.URI, w.Date)
		if err := c.finishWARC(wr, w); err != nil {
			return err
		}
	}
	return nil
}

func (c *conversionCheck) where(a *arcRecord) string {
	return fmt.Sprintf("%s: ARC record at offset %d", c.arc.Name, a.offset)
}

// readARC reads an ARC record's block into a digest. ok is false for a
// record whose block could not be read, which no conversion can hold (it
// is reported as damage); a block the file cuts short is a truncated
// record, which the WARC must hold marked.
func (c *conversionCheck) readARC(ar *record.Reader, rec *record.Record) (*arcRecord, bool, error) {
	a := &arcRecord{offset: rec.Offset, uri: manifest.EscapeField(rec.URI), date: rec.Date}
	if net.ParseIP(rec.ARCFields.IP) != nil {
		a.ip = rec.ARCFields.IP
	}
	switch ctype := rec.ARCFields.ContentType; {
	case rec.Type == "filedesc":
		a.typ, a.contentType, a.ip = "metadata", "text/plain", ""
	case rec.Type == "response":
		a.typ, a.contentType = "response", "application/http; msgtype=response"
	case strings.HasPrefix(rec.URI, "dns:"):
		a.typ, a.contentType = "resource", "text/dns"
	case ctype == "" || ctype == "-" || strings.EqualFold(ctype, "no-type"):
		a.typ, a.contentType = "resource", "application/octet-stream"
	default:
		a.typ, a.contentType = "resource", ctype
	}
	c.sumA.Reset()
	c.payA.Reset()
	if rec.Type == "filedesc" {
		c.sumA.Write([]byte(rec.ARCLine + "\n"))
		a.size = int64(len(rec.ARCLine) + 1)
	}
	var err error
	if rec.Type == "response" {
		// The payload is what follows the HTTP head.
		var head *record.HTTPHead
		head, err = ar.ReadHTTPHead()
		if head != nil {
			c.sumA.Write(head.Raw)
			a.size += int64(len(head.Raw))
		}
	}
	if err == nil {
		var n int64
		n, err = ar.WriteTo(io.MultiWriter(c.sumA, c.payA))
		a.size += n
	}
	if err == nil {
		err = ar.Finish()
	}
	var damage *record.Error
	switch {
	case err == nil:
	case errors.Is(err, record.ErrRecordEnd):
		// The record is whole; bytes after it that start no record are lost.
		c.st.ARCDamage++
		c.report("%v: those bytes are not in the WARC", err)
	case errors.Is(err, record.ErrTruncated) || errors.Is(err, gzmulti.ErrTruncated):
		a.truncated = true
	case errors.As(err, &damage):
		c.st.ARCDamage++
		c.report("%v: not in the WARC (its block could not be read)", err)
		return nil, false, nil
	default:
		return nil, false, err
	}
	a.digest = c.sumA.Sum(nil)
	if rec.Type != "filedesc" {
		a.payload = c.payA.Sum(nil)
	}
	return a, true, nil
}

// compare reads WARC record w and reports how it differs from what the ARC
// record a must become.
func (c *conversionCheck) compare(wr *record.Reader, w *record.Record, a *arcRecord) error {
	var diffs []string
	if w.Type != a.typ {
		diffs = append(diffs, fmt.Sprintf("type %q, not %q", w.Type, a.typ))
	}
	if w.URI != a.uri {
		diffs = append(diffs, fmt.Sprintf("URI %q, not %q", w.URI, a.uri))
	}
	switch {
	case w.Date != a.date:
		diffs = append(diffs, fmt.Sprintf("date %s, not %s", w.Date, a.date))
	}
	if got, _ := w.Header.Lookup("WARC-IP-Address"); got != a.ip {
		diffs = append(diffs, fmt.Sprintf("WARC-IP-Address %q, not %q", got, a.ip))
	}
	if got, _ := w.Header.Lookup("Content-Type"); got != a.contentType {
		diffs = append(diffs, fmt.Sprintf("Content-Type %q, not %q", got, a.contentType))
	}
	diffs = declaredDigest(diffs, w.Header, "WARC-Block-Digest", a.digest)
	diffs = declaredDigest(diffs, w.Header, "WARC-Payload-Digest", a.payload)
	if _, marked := w.Header.Lookup("WARC-Truncated"); marked != a.truncated {
		if a.truncated {
			diffs = append(diffs, "no WARC-Truncated, but the ARC record is truncated")
		} else {
			diffs = append(diffs, "WARC-Truncated, but the ARC record is whole")
		}
	}
	c.sumW.Reset()
	n, err := wr.WriteTo(c.sumW)
	if err == nil {
		err = wr.Finish()
	}
	var damage *record.Error
	if errors.As(err, &damage) {
		c.report("%v: the WARC record for %s is damaged", err, c.where(a))
		return nil
	} else if err != nil {
		return err
	}
	switch {
	case n != a.size:
		diffs = append(diffs, fmt.Sprintf("a block of %d bytes, not the ARC record's %d", n, a.size))
	case !bytes.Equal(c.sumW.Sum(nil), a.digest):
		diffs = append(diffs, fmt.Sprintf("a block of %d bytes that differs from the ARC record's", n))
	}
	if len(diffs) > 0 {
		c.report("%s: the WARC record at offset %d has %s", c.where(a), w.Offset, strings.Join(diffs, "; "))
		return nil
	}
	c.st.Matched++
	if a.truncated {
		c.st.Truncated++
	}
	return nil
}

// declaredDigest adds to diffs how the digest field the header declares
// differs from the SHA-1 of the ARC's bytes the mapping says it is of (nil:
// the field must be absent).
func declaredDigest(diffs []string, h record.Header, field string, want []byte) []string {
	value, ok := h.Lookup(field)
	switch {
	case want == nil && ok:
		return append(diffs, fmt.Sprintf("%s %q, which the mapping does not write", field, value))
	case want == nil:
		return diffs
	case !ok:
		return append(diffs, fmt.Sprintf("no %s", field))
	}
	alg, sum, err := digest.ParseHeader(value)
	if err != nil || alg != digest.SHA1 || !bytes.Equal(sum, want) {
		return append(diffs, fmt.Sprintf("%s %q, not %s", field, value, digest.SHA1.Format(want)))
	}
	return diffs
}

// finishWARC reads a WARC record to its end, reporting its damage.
func (c *conversionCheck) finishWARC(wr *record.Reader, w *record.Record) error {
	err := wr.Finish()
	var damage *record.Error
	if errors.As(err, &damage) {
		c.report("%v: the WARC is damaged", err)
		return nil
	}
	return err
}

// manifests makes the paper's check: warcsum of the ARC's inflated stream
// and of the WARC, compared in order.
func (c *conversionCheck) manifests() error {
	z, err := gzmulti.NewReader(c.arc.reader(), c.arc.Name)
	if err != nil {
		return err
	}
	arcSum := startSum(gzmulti.NewStream(z), c.arc.Name)
	warcSum := startSum(c.warc.reader(), c.warc.Name)
	st, err := Order(arcSum.manifest, warcSum.manifest, func(v string) { c.report("%s -> %s: warcsum lines in order: %s", c.arc.Name, c.warc.Name, v) })
	errA := arcSum.wait()
	errW := warcSum.wait()
	c.st.ListedARC, c.st.ListedWARC = st.Before, st.After
	if errA != nil && c.st.ARCDamage == 0 {
		// (With damage found above, this is the same damage again.)
		c.report("warcsum could not read the ARC: %v", errA)
	}
	if errW != nil {
		c.report("warcsum could not read the WARC: %v", errW)
	}
	if errA != nil || errW != nil {
		return nil // what Order said of a manifest cut short is moot
	}
	return err
}

// errCompared stops a warcsum whose manifest is no longer read.
var errCompared = errors.New("the comparison ended")

// sum is warcsum of one file, streamed to a manifest reader.
type sum struct {
	manifest *manifest.Reader
	pr       *io.PipeReader
	done     chan error
}

func startSum(r io.Reader, name string) *sum {
	pr, pw := io.Pipe()
	s := &sum{manifest: manifest.NewReader(pr, name+" (warcsum)"), pr: pr, done: make(chan error, 1)}
	go func() {
		mw := manifest.NewWriter(pw)
		_, err := warcsum.NewSummer(warcsum.Options{}).SumFile(r, name, mw.Write)
		if err == nil {
			err = mw.Flush()
		}
		pw.CloseWithError(err)
		s.done <- err
	}()
	return s
}

// wait stops reading the manifest and returns warcsum's error, if it
// failed for another reason than that.
func (s *sum) wait() error {
	s.pr.CloseWithError(errCompared)
	if err := <-s.done; !errors.Is(err, errCompared) {
		return err
	}
	return nil
}

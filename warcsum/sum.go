// Package warcsum is the first stage of the toolchain: it reads WARC and ARC
// files and writes one manifest line per candidate record (a response that
// could become a revisit), with the record's place in its file and the
// digest of its payload.
package warcsum

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

// Options choose what is listed and how digests are obtained.
type Options struct {
	Algorithm   digest.Algorithm // payload digest; SHA1 if zero
	SkipEmpty   bool             // leave out records with an empty payload
	AllStatuses bool             // list every HTTP status but 206, not only 2xx
	// TrustHeader reuses a WARC-Payload-Digest of the requested algorithm
	// instead of hashing the payload. Faster, and wrong where writers wrote
	// wrong digests; warccollres re-hashes every record it compares anyway.
	TrustHeader bool
	// ResponsesOnly leaves revisit records out. By default each is listed
	// as a revisit line (10 fields, ext -1, copy 0, the URI and date it
	// refers to: WARC-Refers-To-Target-URI, or its own URI when it names
	// none, and WARC-Refers-To-Date, or "*") so that the later stages keep
	// the responses existing revisits resolve to, and verification can
	// prove they still do. Field 6 is its WARC-Payload-Digest when that is
	// in the run's algorithm, else manifest.NoDigest.
	ResponsesOnly bool
	// Damage receives each damaged record (never listed), Warn each digest
	// disagreement (the computed digest is listed). Both are called from
	// the goroutine that reads the file.
	Damage func(error)
	Warn   func(error)
}

func (o *Options) algorithm() digest.Algorithm {
	if o.Algorithm == 0 {
		return digest.SHA1
	}
	return o.Algorithm
}

// Skip is a reason a record was read but not listed.
type Skip int

// The reasons, in the order the summary prints them.
const (
	SkipNotResponse Skip = iota // request, metadata, warcinfo, revisit, ARC dns:/filedesc ...
	SkipNotHTTP                 // a response whose block is no HTTP response
	SkipTruncated               // WARC-Truncated present
	SkipSegmented               // WARC-Segment-Number present
	SkipPartial                 // HTTP 206
	SkipStatus                  // status outside 2xx (without AllStatuses)
	SkipHTTPHead                // the HTTP head has no end, or is too long
	SkipNoURI                   // no target URI
	SkipNoDate                  // no usable date
	SkipEmpty                   // empty payload (with SkipEmpty)
	SkipRevisit                 // with ResponsesOnly: a revisit
	numSkips
)

var skipNames = [numSkips]string{
	"not a response", "not HTTP", "truncated", "segmented", "status 206",
	"status not 2xx", "HTTP head incomplete", "no target URI", "no date", "empty payload",
	"revisit",
}

func (s Skip) String() string { return skipNames[s] }

// Stats counts what a run read and listed.
type Stats struct {
	Files       int64 // files read to the end
	FilesFailed int64 // files that could not be opened or read to the end
	Records     int64 // records read, damaged ones included
	Listed      int64 // manifest lines written
	Revisits    int64 // revisit lines among them
	// RevisitsWithoutDigest counts revisit lines whose record names no
	// payload digest in the run's algorithm: the later stages hold what
	// they refer to in memory, not cluster by cluster.
	RevisitsWithoutDigest int64
	Skipped               [numSkips]int64 // records read but not listed, by reason
	Damaged               int64           // damaged records and stretches of bytes, never listed
	Checked               int64           // listed records whose WARC-Payload-Digest was compared with the payload
	Disagreements         int64           // WARC-Payload-Digest values that do not match the payload
	Bytes                 int64           // bytes of the files as stored
	PayloadBytes          int64           // payload bytes of listed records
	Cached                int64           // files not read again: a cache knew them unchanged
}

// Add adds o's counts to s.
func (s *Stats) Add(o *Stats) {
	s.Files += o.Files
	s.FilesFailed += o.FilesFailed
	s.Records += o.Records
	s.Listed += o.Listed
	s.Revisits += o.Revisits
	s.RevisitsWithoutDigest += o.RevisitsWithoutDigest
	for i := range s.Skipped {
		s.Skipped[i] += o.Skipped[i]
	}
	s.Damaged += o.Damaged
	s.Checked += o.Checked
	s.Disagreements += o.Disagreements
	s.Bytes += o.Bytes
	s.PayloadBytes += o.PayloadBytes
	s.Cached += o.Cached
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "files: %d read, %d failed", s.Files, s.FilesFailed)
	if s.Cached > 0 {
		fmt.Fprintf(w, "; %d of them known unchanged and not read again", s.Cached)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "records: %d read, %d listed (%d of them revisits), %d damaged\n", s.Records, s.Listed, s.Revisits, s.Damaged)
	if s.RevisitsWithoutDigest > 0 {
		fmt.Fprintf(w, "revisits naming no payload digest in this run's algorithm: %d (hash with the algorithm of their WARC-Payload-Digest to protect their originals digest by digest)\n", s.RevisitsWithoutDigest)
	}
	var skips []string
	for i, n := range s.Skipped {
		if n > 0 {
			skips = append(skips, fmt.Sprintf("%s %d", Skip(i), n))
		}
	}
	if len(skips) > 0 {
		fmt.Fprintf(w, "skipped: %s\n", strings.Join(skips, ", "))
	}
	fmt.Fprintf(w, "header digests: %d checked, %d disagree with the payload\n", s.Checked, s.Disagreements)
	fmt.Fprintf(w, "bytes read: %d (payload listed: %d)\n", s.Bytes, s.PayloadBytes)
}

// Read is the number of files read, to their end or not: those the cache
// did not know (Cached counts files known unchanged, failed ones too).
func (s *Stats) Read() int64 { return s.Files + s.FilesFailed - s.Cached }

// Failed reports whether anything went wrong: a file not read to its end
// or a damaged record.
func (s *Stats) Failed() bool { return s.FilesFailed > 0 || s.Damaged > 0 }

// Summer lists the candidate records of files. It keeps its hash state and
// buffers between files; use one Summer per goroutine.
type Summer struct {
	opt    Options
	name   string // of the file being read
	hash   hash.Hash
	hashes map[digest.Algorithm]hash.Hash // for header digests in another algorithm
	line   manifest.Line
	facts  Facts // of line, when it lists a response
	sum    []byte
	check  []byte
	// noted receives the damage of the file being read too (the Runner
	// keeps it with the file's cache entry).
	noted func(error)
	// counted, if set, receives what each record read whole added to the
	// file's counts (the Runner keeps it with the file's cache entry, from
	// which Cache.Derive lists a rewritten file without reading it).
	counted func(RecordCount)
	// rr is reset onto each file: a new one allocates buffers of a few
	// hundred kB, which would cost more than a small file's records.
	rr *record.Reader
	// index, if set, indexes the file being read from this read
	// (Runner.Index); indexFailed once it could not follow a record.
	index       RecordIndex
	indexFailed bool
}

// Facts are what the manifest line of a response does not say but a report
// of the collection needs: its HTTP status and media type.
type Facts struct {
	Status int
	MIME   string // the Content-Type's media type, lower case, without parameters; "" if none
}

// AppendFacts appends the facts line of a manifest line: "file offset
// status mime", mime "-" when there is none, with a line feed. A facts file
// is sorted like its manifest (LC_ALL=C sort -k1,1 -k2,2n to join them).
func AppendFacts(dst []byte, l *manifest.Line, f Facts) []byte {
	mime := f.MIME
	if mime == "" {
		mime = "-"
	}
	return fmt.Appendf(dst, "%s %d %d %s\n", l.File, l.Offset, f.Status, mime)
}

// mediaType reduces a Content-Type value to its media type, lower case:
// what a MIME breakdown groups by. Bytes that cannot stand in a manifest
// field are escaped.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return manifest.EscapeField(strings.ToLower(strings.TrimSpace(ct)))
}

// NewSummer returns a Summer with the options o.
func NewSummer(o Options) *Summer {
	s := &Summer{opt: o, hashes: map[digest.Algorithm]hash.Hash{}}
	s.opt.Algorithm = o.algorithm()
	s.hash = s.opt.Algorithm.New()
	s.hashes[s.opt.Algorithm] = s.hash
	return s
}

func (s *Summer) damage(err error) {
	if s.opt.Damage != nil {
		s.opt.Damage(err)
	}
	if s.noted != nil {
		s.noted(err)
	}
}

func (s *Summer) warn(err error) {
	if s.opt.Warn != nil {
		s.opt.Warn(err)
	}
}

// Facts returns the facts of the line SumFile emitted last: zero for a
// revisit line.
func (s *Summer) Facts() Facts { return s.facts }

// SumFile reads the file r and calls emit with each manifest line; name is
// field 1 of the lines (unescaped) and the name used in messages. The Stats
// returned count the file as read, or as failed with the error that ended it.
// Damaged records are passed to Options.Warn and counted, and do not end the
// file.
func (s *Summer) SumFile(r io.Reader, name string, emit func(*manifest.Line) error) (Stats, error) {
	var st Stats
	rr, err := record.Reuse(s.rr, r, name)
	if err != nil {
		st.FilesFailed++
		return st, err
	}
	s.rr = rr
	file := manifest.EscapeFile(name)
	s.name = name
	found := false
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		if isDamage(err) {
			st.Damaged++
			s.damage(err)
			continue
		}
		if err != nil {
			st.FilesFailed++
			return st, err
		}
		found = true
		before := st
		st.Records++
		listed, err := s.sumRecord(rr, rec, file, &st)
		if isDamage(err) {
			st.Damaged++
			s.damage(err)
			continue
		}
		if err != nil {
			st.FilesFailed++
			return st, err
		}
		if s.index != nil {
			s.endIndex(rr, rec)
		}
		if listed {
			st.Listed++
		}
		if s.counted != nil {
			s.counted(countOf(rec.Offset, rec.Length, &before, &st))
		}
		if listed {
			if err := emit(&s.line); err != nil {
				return st, err
			}
		}
	}
	if !found && st.Damaged > 0 {
		st.FilesFailed++
		return st, fmt.Errorf("%s: no WARC or ARC record could be read", name)
	}
	st.Files++
	return st, nil
}

// isDamage reports whether err is damage that costs one record only. (The
// target of errors.As escapes: in a function of its own it is allocated
// only when there is an error, not once per record.)
func isDamage(err error) bool {
	if err == nil {
		return false
	}
	var damage *record.Error
	return errors.As(err, &damage)
}

// sumRecord decides whether rec is a candidate and, if it is, hashes its
// payload into s.line. The record is always finished, so its damage is
// found whether it is listed or not.
func (s *Summer) sumRecord(rr *record.Reader, rec *record.Record, file string, st *Stats) (bool, error) {
	if rec.Type == "revisit" {
		if s.index != nil {
			s.beginIndex(rr, rec, nil)
		}
		if s.opt.ResponsesOnly {
			st.Skipped[SkipRevisit]++
			return false, rr.Finish()
		}
		s.facts = Facts{}
		return s.revisitLine(rr, rec, file, st)
	}
	skip, err := s.skipOf(rr, rec)
	if err != nil {
		return false, err
	}
	if skip >= 0 {
		if err := rr.Finish(); err != nil {
			return false, err
		}
		st.Skipped[skip]++
		return false, nil
	}
	payloadLength := rr.BlockLeft()
	sum, checked, err := s.payloadSum(rr, rec, st)
	if err != nil {
		return false, err
	}
	if err := rr.Finish(); err != nil {
		return false, err
	}
	if payloadLength == 0 && s.opt.SkipEmpty {
		st.Skipped[SkipEmpty]++
		return false, nil
	}
	st.PayloadBytes += payloadLength
	if checked {
		st.Checked++
	}
	s.line = manifest.Line{
		File:   file,
		Offset: rec.Offset,
		Length: rec.Length,
		URI:    manifest.URIField(rec),
		Date:   manifest.DateField(rec),
		Digest: s.opt.Algorithm.Format(sum),
		Fields: 6,
	}
	return true, nil
}

// skipOf returns why the response rec is no candidate, from its header
// and then its HTTP head (whose status and type it keeps in s.facts), or
// -1 if it is one.
func (s *Summer) skipOf(rr *record.Reader, rec *record.Record) (Skip, error) {
	skip := s.precheck(rec)
	s.facts = Facts{}
	if skip >= 0 {
		if s.index != nil {
			s.beginIndex(rr, rec, nil)
		}
		return skip, nil
	}
	head, err := rr.ReadHTTPHead()
	if s.index != nil {
		if err != nil {
			s.indexFailed = true // as warcindex stops at it
		} else {
			s.beginIndex(rr, rec, head)
		}
	}
	if err == nil && head.Status != 0 {
		s.facts = Facts{Status: head.Status, MIME: mediaType(head.Get("Content-Type"))}
	}
	switch {
	case err != nil:
		if isDamage(err) && errors.Is(err, record.ErrHeaderTooLong) {
			return SkipHTTPHead, nil
		}
		return skip, err
	case head.Status == 0:
		return SkipNotHTTP, nil
	case !head.Complete:
		return SkipHTTPHead, nil
	case head.Status == 206:
		return SkipPartial, nil
	case !s.opt.AllStatuses && (head.Status < 200 || head.Status > 299):
		return SkipStatus, nil
	}
	return skip, nil
}

// payloadSum reads the payload and returns its digest in the manifest's
// algorithm: the record's WARC-Payload-Digest when trusted, else its
// hash; checked if the record's digest was checked against the payload.
func (s *Summer) payloadSum(rr *record.Reader, rec *record.Record, st *Stats) (sum []byte, checked bool, err error) {
	claimed, claimedSum, claimErr := s.headerDigest(rec)
	if s.opt.TrustHeader && claimErr == nil && claimed == s.opt.Algorithm {
		if _, err := rr.WriteTo(io.Discard); err != nil {
			return nil, false, err
		}
		return claimedSum, false, nil
	}
	check, err := s.hashPayload(rr, claimed, claimErr)
	if err != nil {
		return nil, false, err
	}
	if claimErr != nil {
		if claimErr != errNoDigest {
			st.Disagreements++
			s.warn(fmt.Errorf("%s: offset %d: WARC-Payload-Digest: %w", s.name, rec.Offset, claimErr))
		}
		return s.sum, false, nil
	}
	s.checkClaim(rec, claimed, claimedSum, check, st)
	return s.sum, true, nil
}

// hashPayload hashes the rest of the block into s.sum and, when the
// record claims a digest in another algorithm (claimErr nil), in that
// one too: the hash it returns, nil if none.
func (s *Summer) hashPayload(rr *record.Reader, claimed digest.Algorithm, claimErr error) (hash.Hash, error) {
	s.hash.Reset()
	var w io.Writer = s.hash
	var check hash.Hash
	if claimErr == nil && claimed != s.opt.Algorithm {
		check = s.hashFor(claimed)
		check.Reset()
		w = io.MultiWriter(s.hash, check)
	}
	if _, err := rr.WriteTo(w); err != nil {
		return nil, err
	}
	s.sum = s.hash.Sum(s.sum[:0])
	return check, nil
}

// checkClaim counts and names a WARC-Payload-Digest that does not match
// the payload: check is its algorithm's hash, nil if that is s.sum's.
func (s *Summer) checkClaim(rec *record.Record, claimed digest.Algorithm, claimedSum []byte, check hash.Hash, st *Stats) {
	actual := s.sum
	if check != nil {
		s.check = check.Sum(s.check[:0])
		actual = s.check
	}
	if !bytes.Equal(actual, claimedSum) {
		st.Disagreements++
		s.warn(fmt.Errorf("%s: offset %d: WARC-Payload-Digest %s does not match the payload (%s)",
			s.name, rec.Offset, rec.Header.Get("WARC-Payload-Digest"), claimed.Format(actual)))
	}
}

// revisitLine lists a revisit record with what it refers to. A revisit
// without a URI or date cannot be named by verification; it is counted as
// skipped.
func (s *Summer) revisitLine(rr *record.Reader, rec *record.Record, file string, st *Stats) (bool, error) {
	if err := rr.Finish(); err != nil {
		return false, err
	}
	uri := manifest.URIField(rec)
	if uri == "" || rec.Date == "" {
		st.Skipped[SkipNoURI]++
		return false, nil
	}
	d := manifest.NoDigest
	if algo, sum, err := digest.ParseHeader(rec.Header.Get("WARC-Payload-Digest")); err == nil && algo == s.opt.Algorithm {
		d = algo.Format(sum)
	} else {
		st.RevisitsWithoutDigest++
	}
	// "-" is the manifest's "no reference", which no stage takes on a
	// revisit line: such a reference names none.
	refURI := manifest.EscapeField(record.StripAngles(rec.Header.Get("WARC-Refers-To-Target-URI")))
	if refURI == "" || refURI == "-" {
		refURI = uri
	}
	refDate := manifest.EscapeField(rec.Header.Get("WARC-Refers-To-Date"))
	if refDate == "" || refDate == "-" {
		refDate = "*"
	}
	st.Revisits++
	s.line = manifest.Line{
		File: file, Offset: rec.Offset, Length: rec.Length, URI: uri, Date: manifest.DateField(rec),
		Digest: d, Class: manifest.RevisitClass, Copy: manifest.RevisitCopy, RefURI: refURI, RefDate: refDate, Fields: 10,
	}
	return true, nil
}

// precheck returns why rec cannot be a candidate from its header alone, or
// -1 if its HTTP head must be looked at.
func (s *Summer) precheck(rec *record.Record) Skip {
	switch {
	case rec.Type != "response":
		return SkipNotResponse
	case rec.Header.Has("WARC-Truncated"):
		return SkipTruncated
	case rec.Header.Has("WARC-Segment-Number"):
		return SkipSegmented
	// A URI "-" or a date "-" or "*" is what the manifest spells "no
	// reference" or "any date": a later capture could not name the record
	// as its original.
	case rec.TargetURI() == "" || manifest.URIField(rec) == "-":
		return SkipNoURI
	case rec.Date == "" || rec.Date == "-" || rec.Date == "*":
		return SkipNoDate
	}
	return -1
}

// headerDigest reads the record's WARC-Payload-Digest, if it has one that
// can be decoded.
func (s *Summer) headerDigest(rec *record.Record) (digest.Algorithm, []byte, error) {
	v, ok := rec.Header.Lookup("WARC-Payload-Digest")
	if !ok {
		return 0, nil, errNoDigest
	}
	return digest.ParseHeader(v)
}

var errNoDigest = errors.New("no WARC-Payload-Digest")

func (s *Summer) hashFor(a digest.Algorithm) hash.Hash {
	h, ok := s.hashes[a]
	if !ok {
		h = a.New()
		s.hashes[a] = h
	}
	return h
}

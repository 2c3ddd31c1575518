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
	// Revisits also lists WARC revisit records, as 10-field lines with
	// ext 0, copy 2 and their WARC-Refers-To-Target-URI and -Date (the
	// record's own URI when it names none, "*" for a missing date), and the
	// digest of their WARC-Payload-Digest. Verification compares such
	// manifests from before and after a rewrite.
	Revisits bool
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
	SkipNotResponse   Skip = iota // request, metadata, warcinfo, revisit, ARC dns:/filedesc ...
	SkipNotHTTP                   // a response whose block is no HTTP response
	SkipTruncated                 // WARC-Truncated present
	SkipSegmented                 // WARC-Segment-Number present
	SkipPartial                   // HTTP 206
	SkipStatus                    // status outside 2xx (without AllStatuses)
	SkipHTTPHead                  // the HTTP head has no end, or is too long
	SkipNoURI                     // no target URI
	SkipNoDate                    // no usable date
	SkipEmpty                     // empty payload (with SkipEmpty)
	SkipRevisitDigest             // with Revisits: a revisit without a usable payload digest
	numSkips
)

var skipNames = [numSkips]string{
	"not a response", "not HTTP", "truncated", "segmented", "status 206",
	"status not 2xx", "HTTP head incomplete", "no target URI", "no date", "empty payload",
	"revisit without payload digest",
}

func (s Skip) String() string { return skipNames[s] }

// Stats counts what a run read and listed.
type Stats struct {
	Files         int64           // files read to the end
	FilesFailed   int64           // files that could not be opened or read to the end
	Records       int64           // records read, damaged ones included
	Listed        int64           // manifest lines written
	Skipped       [numSkips]int64 // records read but not listed, by reason
	Damaged       int64           // damaged records and stretches of bytes, never listed
	Checked       int64           // listed records whose WARC-Payload-Digest was compared with the payload
	Disagreements int64           // WARC-Payload-Digest values that do not match the payload
	Bytes         int64           // bytes of the files as stored
	PayloadBytes  int64           // payload bytes of listed records
}

// Add adds o's counts to s.
func (s *Stats) Add(o *Stats) {
	s.Files += o.Files
	s.FilesFailed += o.FilesFailed
	s.Records += o.Records
	s.Listed += o.Listed
	for i := range s.Skipped {
		s.Skipped[i] += o.Skipped[i]
	}
	s.Damaged += o.Damaged
	s.Checked += o.Checked
	s.Disagreements += o.Disagreements
	s.Bytes += o.Bytes
	s.PayloadBytes += o.PayloadBytes
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "files: %d read, %d failed\n", s.Files, s.FilesFailed)
	fmt.Fprintf(w, "records: %d read, %d listed, %d damaged\n", s.Records, s.Listed, s.Damaged)
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
	sum    []byte
	check  []byte
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
}

func (s *Summer) warn(err error) {
	if s.opt.Warn != nil {
		s.opt.Warn(err)
	}
}

// SumFile reads the file r and calls emit with each manifest line; name is
// field 1 of the lines (unescaped) and the name used in messages. The Stats
// returned count the file as read, or as failed with the error that ended it.
// Damaged records are passed to Options.Warn and counted, and do not end the
// file.
func (s *Summer) SumFile(r io.Reader, name string, emit func(*manifest.Line) error) (Stats, error) {
	var st Stats
	rr, err := record.NewReader(r, name)
	if err != nil {
		st.FilesFailed++
		return st, err
	}
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
		if listed {
			st.Listed++
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
	if s.opt.Revisits && rec.Type == "revisit" {
		return s.revisitLine(rr, rec, file, st)
	}
	skip := s.precheck(rec)
	if skip < 0 {
		head, err := rr.ReadHTTPHead()
		switch {
		case err != nil:
			var damage *record.Error
			if errors.As(err, &damage) && errors.Is(err, record.ErrHeaderTooLong) {
				skip = SkipHTTPHead
				break
			}
			return false, err
		case head.Status == 0:
			skip = SkipNotHTTP
		case !head.Complete:
			skip = SkipHTTPHead
		case head.Status == 206:
			skip = SkipPartial
		case !s.opt.AllStatuses && (head.Status < 200 || head.Status > 299):
			skip = SkipStatus
		}
	}
	if skip >= 0 {
		if err := rr.Finish(); err != nil {
			return false, err
		}
		st.Skipped[skip]++
		return false, nil
	}

	payloadLength := rr.BlockLeft()
	checked := false
	claimed, claimedSum, claimErr := s.headerDigest(rec)
	var sum []byte
	if s.opt.TrustHeader && claimErr == nil && claimed == s.opt.Algorithm {
		sum = claimedSum
		if _, err := rr.WriteTo(io.Discard); err != nil {
			return false, err
		}
	} else {
		s.hash.Reset()
		var w io.Writer = s.hash
		var check hash.Hash
		if claimErr == nil && claimed != s.opt.Algorithm {
			check = s.hashFor(claimed)
			check.Reset()
			w = io.MultiWriter(s.hash, check)
		}
		if _, err := rr.WriteTo(w); err != nil {
			return false, err
		}
		s.sum = s.hash.Sum(s.sum[:0])
		sum = s.sum
		if claimErr != nil && claimErr != errNoDigest {
			st.Disagreements++
			s.warn(fmt.Errorf("%s: offset %d: WARC-Payload-Digest: %w", s.name, rec.Offset, claimErr))
		}
		if claimErr == nil {
			checked = true
			actual := sum
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
		URI:    URIField(rec),
		Date:   DateField(rec),
		Digest: s.opt.Algorithm.Format(sum),
		Fields: 6,
	}
	return true, nil
}

// revisitLine lists a revisit record with what it refers to.
func (s *Summer) revisitLine(rr *record.Reader, rec *record.Record, file string, st *Stats) (bool, error) {
	if err := rr.Finish(); err != nil {
		return false, err
	}
	algo, sum, err := digest.ParseHeader(rec.Header.Get("WARC-Payload-Digest"))
	uri := URIField(rec)
	if err != nil || uri == "" || rec.Date == "" {
		st.Skipped[SkipRevisitDigest]++
		return false, nil
	}
	refURI := manifest.EscapeField(stripAngles(rec.Header.Get("WARC-Refers-To-Target-URI")))
	if refURI == "" {
		refURI = uri
	}
	refDate := manifest.EscapeField(rec.Header.Get("WARC-Refers-To-Date"))
	if refDate == "" {
		refDate = "*"
	}
	s.line = manifest.Line{
		File: file, Offset: rec.Offset, Length: rec.Length, URI: uri, Date: DateField(rec),
		Digest: algo.Format(sum), Ext: 0, Copy: 2, RefURI: refURI, RefDate: refDate, Fields: 10,
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
	case stripAngles(rec.URI) == "":
		return SkipNoURI
	case rec.Date == "":
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

// TargetURI is rec's target URI as written, without a wget-1.14 <...>
// wrapper and unescaped: what a revisit's Refers-To-Target-URI must say to
// name rec exactly.
func TargetURI(rec *record.Record) string { return stripAngles(rec.URI) }

// URIField is field 4 for rec: its target URI without a wget-1.14 <...>
// wrapper, escaped for the manifest. Later stages compare a record they
// read back with its line through this function.
func URIField(rec *record.Record) string { return manifest.EscapeField(stripAngles(rec.URI)) }

// DateField is field 5 for rec: its date as written, escaped.
func DateField(rec *record.Record) string { return manifest.EscapeField(rec.Date) }

// stripAngles removes the <...> that wget 1.14 wrapped around target URIs.
func stripAngles(uri string) string {
	if len(uri) >= 2 && uri[0] == '<' && uri[len(uri)-1] == '>' {
		return uri[1 : len(uri)-1]
	}
	return uri
}

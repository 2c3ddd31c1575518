package show

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/digest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/replaycheck"
	"warcdedup/restore"
	"warcdedup/rewritelog"
)

// Options of a look at one record.
type Options struct {
	File   string
	Offset int64
	// WorkDir is the job's work directory; "" to find it beside the
	// collection holding File, as warcdedup undo does.
	WorkDir string
	// CDX are the collection's CDX/CDXJ indexes: a revisit's original is
	// found through them with pywb's rule.
	CDX []string
}

// Record is one record and what the toolchain knows of it.
type Record struct {
	File    string  `json:"file"`
	Offset  int64   `json:"offset"`
	Length  int64   `json:"length"` // as stored
	Format  string  `json:"format"` // WARC, ARC
	Version string  `json:"version"`
	Type    string  `json:"type"`
	URI     string  `json:"uri,omitempty"`
	Date    string  `json:"date,omitempty"`
	Header  []Field `json:"header"` // WARC fields, or the ARC record line
	// HTTPHead is the HTTP status line and header lines at the start of
	// the block, as stored ("" when it holds none).
	HTTPHead string `json:"http_head,omitempty"`
	// PayloadLength and PayloadDigest are the payload's (the block after
	// the HTTP head), hashed now in the algorithm of its
	// WARC-Payload-Digest (sha1 when it has none); a revisit's digest is
	// its header's.
	PayloadLength int64     `json:"payload_length"`
	PayloadDigest string    `json:"payload_digest,omitempty"`
	Job           *Job      `json:"job,omitempty"`
	Revisit       *Revisit  `json:"revisit,omitempty"`
	Response      *Response `json:"response,omitempty"`
	// Notes say what could not be looked at, and why.
	Notes []string `json:"notes,omitempty"`
}

// Field is a header field as written.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Revisit is what is known of a revisit: what it refers to, who wrote it,
// its original and what undo would give back.
type Revisit struct {
	Profile      string `json:"profile"`
	RefersToURI  string `json:"refers_to_uri,omitempty"`
	RefersToDate string `json:"refers_to_date,omitempty"`
	RefersTo     string `json:"refers_to,omitempty"`
	// Written is the rewrite log's entry when this toolchain wrote it;
	// nil for another tool's revisit.
	Written  *Written `json:"written,omitempty"`
	Original *Place   `json:"original,omitempty"`
	// Resolves says the original was read where Original says, is a
	// response, and its payload hashes to the revisit's
	// WARC-Payload-Digest; Problem says why not.
	Resolves bool   `json:"resolves"`
	Problem  string `json:"problem,omitempty"`
	Undo     *Undo  `json:"undo,omitempty"`
}

// Place is where a record is, and how it was found.
type Place struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length,omitempty"`
	URI    string `json:"uri,omitempty"`
	Date   string `json:"date,omitempty"`
	Found  string `json:"found"`
	// Now says what the record there is now, when it was read.
	Now string `json:"now,omitempty"`
}

// Undo is what undo would write in place of a revisit.
type Undo struct {
	Command       string  `json:"command"` // warcdedup undo, or undo --all for another tool's revisit
	Length        int64   `json:"length,omitempty"`
	Header        []Field `json:"header,omitempty"`
	HTTPHead      int64   `json:"http_head_bytes,omitempty"`
	PayloadLength int64   `json:"payload_length,omitempty"`
	// Kept: the header or record end as the revisit kept them, the rule
	// not giving them back.
	Kept bool `json:"kept,omitempty"`
	// Problem says why undo would leave the revisit as it is.
	Problem string `json:"problem,omitempty"`
}

// Response is what is known of a response: its place among the captures
// of its payload, and the revisits that point at it.
type Response struct {
	// Copy is its number in the job's numbered manifest: 1 for the copy
	// kept, 2, 3... for duplicates; 0 when not known.
	Copy int `json:"copy,omitempty"`
	// Original is the copy a duplicate refers to (or became a revisit of).
	Original *Place `json:"original,omitempty"`
	// Revisits are the records that point at it: revisits in place now,
	// and duplicates the job numbered against it.
	Revisits []*Place `json:"revisits"`
}

// Inspect reads the record at opt.Offset of opt.File and finds what the
// toolchain knows of it. The error is one that stops the look: the file
// cannot be read, or no record starts at the offset. What could not be
// known (no work directory, an index that cannot be read) is a note.
func Inspect(ctx context.Context, opt Options) (*Record, error) {
	r := &Record{File: opt.File, Offset: opt.Offset}
	f, rr, rec, err := openAt(opt.File, opt.Offset)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.Format, r.Version, r.Type, r.URI, r.Date = rec.Format.String(), rec.Version, rec.Type, rec.TargetURI(), rec.Date
	for _, h := range rec.Header {
		r.Header = append(r.Header, Field{h.Name, h.Value})
	}
	if rec.Format == record.ARC {
		r.Header = append(r.Header, Field{"ARC record", rec.ARCLine})
	}
	recCopy := *rec
	recCopy.Header = append(record.Header(nil), rec.Header...)
	head, err := rr.ReadHTTPHead()
	if err != nil {
		return nil, err
	}
	var revHead []byte
	if head.Status != 0 {
		r.HTTPHead = string(head.Raw)
		if head.Complete {
			revHead = bytes.Clone(head.Raw)
		}
	}
	algo := digest.SHA1
	if a, _, err := digest.ParseHeader(rec.Header.Get("WARC-Payload-Digest")); err == nil {
		algo = a
	}
	h := algo.New()
	n, err := rr.WriteTo(h)
	if err == nil {
		err = rr.Finish()
	}
	if err != nil {
		return nil, err
	}
	r.Length, r.PayloadLength = rec.Length, n
	if rec.Type == "revisit" {
		r.PayloadLength = 0
		r.PayloadDigest = strings.TrimSpace(rec.Header.Get("WARC-Payload-Digest"))
	} else {
		r.PayloadDigest = algo.Format(h.Sum(nil))
	}

	job, err := openJob(opt.File, opt.WorkDir)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	defer job.close()
	r.Job = job
	switch rec.Type {
	case "revisit":
		r.Revisit, err = inspectRevisit(ctx, opt, job, &recCopy, revHead)
	case "response":
		r.Response, err = inspectResponse(opt, job, r)
	}
	return r, err
}

// openAt reads the record that starts at offset of name.
func openAt(name string, offset int64) (*os.File, *record.Reader, *record.Record, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if offset < 0 || offset >= fi.Size() {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%s: offset %d is not in the file (%d bytes)", name, offset, fi.Size())
	}
	rr, err := record.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset), name)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	rr.SetBase(offset)
	rec, err := rr.Next()
	if err != nil {
		f.Close()
		if err == io.EOF {
			err = fmt.Errorf("%s: offset %d: %w", name, offset, record.ErrNoRecord)
		}
		return nil, nil, nil, err
	}
	return f, rr, rec, nil
}

func inspectRevisit(ctx context.Context, opt Options, job *Job, rec *record.Record, revHead []byte) (*Revisit, error) {
	v := &Revisit{Profile: rec.Header.Get("WARC-Profile"), RefersToURI: record.StripAngles(rec.Header.Get("WARC-Refers-To-Target-URI")),
		RefersToDate: rec.Header.Get("WARC-Refers-To-Date"), RefersTo: rec.Header.Get("WARC-Refers-To")}
	want := strings.TrimSpace(rec.Header.Get("WARC-Payload-Digest"))
	v.Undo = &Undo{Command: "warcdedup undo --all"}
	if job != nil {
		w, err := job.written(opt.Offset)
		if err != nil {
			return v, err
		}
		if v.Written = w; w != nil {
			v.Undo.Command = "warcdedup undo"
		}
	}
	var err error
	switch {
	case len(opt.CDX) > 0:
		v.Original, err = originalByIndex(ctx, opt, job, v)
	case job != nil && job.table != nil:
		v.Original, err = originalByManifest(job, v, want)
	default:
		// A job without its manifest on digest (complete, or not hashed
		// yet) knows no more of where an original is than the file does.
		why, hint := "no work directory or --cdx index", "give the collection's index (--cdx) or its work directory (--work-dir)"
		if job != nil {
			why = "the job has no manifest on digest now, and no --cdx index"
			hint = fmt.Sprintf("the job in %s has no manifest on digest now (a complete job removes it, unless run with --keep-work): give the collection's index (--cdx)", job.WorkDir)
		}
		v.Original, err = originalInFile(opt.File, v, want, why, hint)
	}
	if err != nil {
		v.Problem = err.Error()
		v.Undo.Problem = "its original is not found"
		return v, nil
	}
	// The original, read: a response whose payload hashes to the
	// revisit's digest, and what undo would make of it.
	f, rr, orig, err := openAt(v.Original.File, v.Original.Offset)
	if err != nil {
		v.Problem = err.Error()
		v.Undo.Problem = "its original cannot be read"
		return v, nil
	}
	defer f.Close()
	v.Original.Now = fmt.Sprintf("a %s record of %s at %s", orig.Type, orig.TargetURI(), orig.Date)
	if orig.Type != "response" {
		v.Problem = fmt.Sprintf("%s offset %d is a %s record, not a response", v.Original.File, v.Original.Offset, orig.Type)
		v.Undo.Problem = v.Problem
		return v, nil
	}
	oh, err := rr.ReadHTTPHead()
	if err != nil {
		v.Problem = err.Error()
		return v, nil
	}
	origHead := bytes.Clone(oh.Raw)
	p, err := restore.PreviewUndo(rec, revHead, origHead, rr)
	if errors.Is(err, restore.ErrNotRestorable) {
		v.Undo.Problem = "undo leaves it as it is: " + err.Error()
		// Resolves all the same if the payload hashes to its digest.
		v.Resolves, err = payloadIs(rr, want)
	} else if err == nil {
		v.Resolves = true
		v.Undo.Length, v.Undo.HTTPHead, v.Undo.PayloadLength, v.Undo.Kept = p.Length(), int64(len(p.HTTPHead)), p.PayloadLength, p.Kept
		v.Undo.Header = headerFields(p.Header)
	}
	if err != nil {
		v.Problem = err.Error()
		if v.Undo.Problem == "" {
			v.Undo.Problem = "undo would refuse it: " + err.Error()
		}
	}
	return v, nil
}

// payloadIs reads the rest of rr's block and says whether it hashes to
// want.
func payloadIs(rr *record.Reader, want string) (bool, error) {
	algo, sum, err := digest.ParseHeader(want)
	if err != nil {
		return false, fmt.Errorf("the revisit's WARC-Payload-Digest: %w", err)
	}
	h := algo.New()
	if _, err := rr.WriteTo(h); err != nil {
		return false, err
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum) {
		return false, fmt.Errorf("the original's payload hashes to %s, not the revisit's %s", algo.Format(got), want)
	}
	return true, nil
}

// headerFields splits a WARC header as stored into its fields (the
// version line first, named "").
func headerFields(h []byte) []Field {
	var out []Field
	for i, l := range strings.Split(strings.TrimRight(string(h), "\r\n"), "\n") {
		l = strings.TrimRight(l, "\r")
		if i == 0 {
			out = append(out, Field{"", l})
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		out = append(out, Field{name, strings.TrimSpace(value)})
	}
	return out
}

// originalByIndex asks the indexes, as the access system would.
func originalByIndex(ctx context.Context, opt Options, job *Job, v *Revisit) (*Place, error) {
	root, name := filepath.Dir(opt.File), filepath.Base(opt.File)
	if job != nil {
		root, name = job.Collection, job.Name
	}
	rc := &replaycheck.Revisit{File: name, Offset: opt.Offset}
	if _, err := replaycheck.CheckOne(ctx, root, opt.CDX, rc); err != nil {
		return nil, err
	}
	if rc.Original == nil {
		return nil, errors.New(rc.Problem)
	}
	return &Place{File: filepath.Join(root, filepath.FromSlash(rc.Original.File)), Offset: rc.Original.Offset,
		Found: fmt.Sprintf("%s (pywb's rule: %s, timestamp %s)", strings.Join(opt.CDX, ", "), rc.Original.Lookup, rc.Original.Timestamp)}, nil
}

// originalByManifest looks the revisit's payload up in the job's manifest
// sorted on digest: the capture of its Refers-To URI and date (the copy
// kept first), followed to where it is now through the rewrite log.
func originalByManifest(job *Job, v *Revisit, want string) (*Place, error) {
	uri, date := manifest.EscapeField(v.RefersToURI), manifest.EscapeField(v.RefersToDate)
	var best *manifest.Line
	err := job.table.Find(want, func(l *manifest.Line) error {
		if l.IsRevisit() || l.URI != uri || (date != "" && l.Date != date) {
			return nil
		}
		if best == nil || (l.Copy == 1 && best.Copy != 1) {
			c := *l
			best = &c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if best == nil {
		return nil, fmt.Errorf("%s lists no capture of %s at %s with digest %s", job.Manifest, orDash(v.RefersToURI), orDash(v.RefersToDate), want)
	}
	path, err := job.path(best.File)
	if err != nil {
		return nil, err
	}
	off, length, last, err := job.now(best)
	if err != nil {
		return nil, fmt.Errorf("%s offset %d (%s): %w", best.File, best.Offset, job.Manifest, err)
	}
	found := fmt.Sprintf("%s, offset %d then", filepath.Base(job.Manifest), best.Offset)
	if off != best.Offset {
		found += ", moved by the rewrite log since"
	}
	if last != nil && last.Kind == rewritelog.Revisit {
		return nil, fmt.Errorf("%s offset %d, the capture it refers to, became a revisit itself (log line %d)", path, off, last.Line)
	}
	return &Place{File: path, Offset: off, Length: length, URI: best.URI, Date: best.Date, Found: found}, nil
}

// originalInFile looks for the revisit's original in its own file: the
// first response of its Refers-To URI (and date, if it names one) with
// its payload digest, as wget, Heritrix and warcprox write them.
// why says why it is looked for there, hint what to give when it is not
// found.
func originalInFile(name string, v *Revisit, want, why, hint string) (*Place, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		return nil, err
	}
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rec.Type != "response" || rec.TargetURI() != v.RefersToURI || (v.RefersToDate != "" && rec.Date != v.RefersToDate) {
			continue
		}
		if d := strings.TrimSpace(rec.Header.Get("WARC-Payload-Digest")); d != "" && d != want {
			continue
		}
		return &Place{File: name, Offset: rec.Offset, URI: rec.TargetURI(), Date: rec.Date,
			Found: "in the revisit's own file (" + why + ")"}, nil
	}
	return nil, fmt.Errorf("no response of %s at %s with digest %s in %s; %s",
		orDash(v.RefersToURI), orDash(v.RefersToDate), want, name, hint)
}

// inspectResponse finds the revisits that point at the response r: in
// the job's manifest, the revisits of its payload that name its URI and
// date and the duplicates numbered against it, each followed to where it
// is now and read; in a job without that manifest (complete, or not
// hashed yet), the revisits the rewrite log wrote of it in every file
// and other tools' in its own file (Job.revisitsOf); without a job, the
// revisits of its own file that name it.
func inspectResponse(opt Options, job *Job, r *Record) (*Response, error) {
	resp := &Response{Revisits: []*Place{}}
	uri, date := manifest.EscapeField(r.URI), manifest.EscapeField(r.Date)
	switch {
	case job == nil:
		return resp, revisitsInFile(opt.File, r, resp, nil, "in the response's own file (no work directory)")
	case job.table == nil:
		// No manifest on digest: the job is complete (a complete job
		// removes them) or has not hashed the collection yet.
		return resp, job.revisitsOf(r, resp)
	}
	var lines []manifest.Line
	err := job.table.Find(r.PayloadDigest, func(l *manifest.Line) error {
		lines = append(lines, *l)
		return nil
	})
	if err != nil {
		return resp, err
	}
	// The lines to place, and why.
	var places []manifest.Line
	var found []string
	for i := range lines {
		l := &lines[i]
		switch {
		case !l.IsRevisit() && l.File == job.escapedName() && l.URI == uri && l.Date == date:
			resp.Copy = l.Copy
			if l.IsDuplicate() {
				resp.Original = &Place{URI: l.RefURI, Date: l.RefDate, Found: filepath.Base(job.Manifest)}
			}
		case l.IsRevisit() && l.RefURI == uri && (l.RefDate == date || l.RefDate == "*"):
			places, found = append(places, *l), append(found, "a revisit listed in "+filepath.Base(job.Manifest))
		case l.IsDuplicate() && l.RefURI == uri && l.RefDate == date:
			places, found = append(places, *l), append(found, "a duplicate numbered against it in "+filepath.Base(job.Manifest))
		}
	}
	resp.Revisits = make([]*Place, len(places))
	// The rewrite log read for placeFiles files at a time, in the order
	// of their names: memory holds those files' entries, not the log's.
	order := make([]int, len(places))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(places[a].File, places[b].File) })
	for start := 0; start < len(order); {
		end, files := start, 0
		var batch []manifest.Line
		for ; end < len(order); end++ {
			if end == start || places[order[end]].File != places[order[end-1]].File {
				if files == placeFiles {
					break
				}
				files++
			}
			batch = append(batch, places[order[end]])
		}
		if err := job.follow(batch); err != nil {
			return resp, err
		}
		for _, i := range order[start:end] {
			resp.Revisits[i] = job.place(&places[i], found[i])
		}
		start = end
	}
	return resp, nil
}

// placeFiles bounds the files whose rewrite log entries are held at once
// while the copies of a response are placed.
const placeFiles = 64

// place is where the record of line l is now, and what it is.
func (j *Job) place(l *manifest.Line, found string) *Place {
	p := &Place{URI: l.URI, Date: l.Date, Found: found, Offset: l.Offset, Length: l.Length}
	path, err := j.path(l.File)
	if err != nil {
		p.Now = err.Error()
		return p
	}
	p.File = path
	off, length, last, err := j.now(l)
	if err != nil {
		p.Now = err.Error()
		return p
	}
	p.Offset, p.Length = off, length
	f, _, rec, err := openAt(path, off)
	if err != nil {
		p.Now = err.Error()
		return p
	}
	f.Close()
	p.Now = "a " + rec.Type
	if last != nil {
		p.Now += fmt.Sprintf(" (%s by rewrite log line %d)", map[rewritelog.Kind]string{rewritelog.Revisit: "written", rewritelog.Restored: "restored"}[last.Kind], last.Line)
	}
	return p
}

// revisitsInFile lists the revisits of the response's own file (name, as
// its Places give it) that name its URI (and date) with its payload
// digest, but for those at the offsets of listed, found as found says.
func revisitsInFile(name string, r *Record, resp *Response, listed map[int64]bool, found string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		return err
	}
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return nil
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			continue
		}
		if err != nil {
			return err
		}
		if rec.Type != "revisit" {
			continue
		}
		ref := record.StripAngles(rec.Header.Get("WARC-Refers-To-Target-URI"))
		refDate := rec.Header.Get("WARC-Refers-To-Date")
		if ref == "" {
			ref = rec.TargetURI()
		}
		if ref != r.URI || (refDate != "" && refDate != r.Date) || strings.TrimSpace(rec.Header.Get("WARC-Payload-Digest")) != r.PayloadDigest || listed[rec.Offset] {
			continue
		}
		resp.Revisits = append(resp.Revisits, &Place{File: name, Offset: rec.Offset, URI: rec.TargetURI(), Date: rec.Date,
			Found: found, Now: "a revisit"})
	}
}

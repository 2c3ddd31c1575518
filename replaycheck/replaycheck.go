// Package replaycheck checks, as the access system would, that revisits a
// job wrote replay as the records they replaced (the BA plan's step 6:
// "check a random sample through the access system"). A seeded random
// sample of the revisits the rewrite log says are in place now is drawn;
// each revisit is read from its file; its original is found through the
// collection's updated CDX/CDXJ index with pywb's rule; and the original's
// payload, read where the index says it is and hashed again, must hash to
// the revisit's WARC-Payload-Digest.
//
// Why the digest: the record a revisit replaced is gone from the file;
// what identifies its payload is the revisit's WARC-Payload-Digest, which
// the rewrite checked against that payload (and compared byte for byte
// with the original's) before writing it, and which the log repeats. A
// payload read through the index that hashes to it is the payload the
// revisit replaced, as far as the digest can tell; pywb then serves it
// under the revisit's own HTTP headers, which are the replaced record's.
//
// pywb 2.x resolves a revisit (shared/spec/records.md): the first
// non-revisit line of the revisit's own URL, earlier in the index, with
// its digest; else the non-revisit lines of WARC-Refers-To-Target-URI
// with its digest, the one closest in time to WARC-Refers-To-Date. URLs
// are matched as written (no SURT canonicalisation), as the revisit's
// Refers-To-Target-URI is the original's URI byte for byte.
//
// Memory: the sample, the index lines of the sampled URLs, and the
// rewrite log's entries of one file at a time (the log sorted on file by
// the system sort); the index is read once, streamed.
package replaycheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/cdx"
	"warcdedup/digest"
	"warcdedup/internal/syssort"
	"warcdedup/record"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// Options of a check.
type Options struct {
	Collection string   // the collection's directory
	Log        string   // the job's rewrite log
	Indexes    []string // the collection's CDX/CDXJ indexes, updated after the job
	Sample     int      // revisits to check; 0 for all of them
	Seed       uint64   // the sample drawn with it: the same revisits for the same seed
	// Sort sorts the log on file (its TempDir: the job's work directory's
	// temporary directory).
	Sort syssort.Sorter
}

// Revisit is one sampled revisit and what its check found.
type Revisit struct {
	File    string `json:"file"`
	Offset  int64  `json:"offset"`
	URI     string `json:"uri"`
	Date    string `json:"date"`
	Digest  string `json:"digest"`
	RefURI  string `json:"refers_to_uri"`
	RefDate string `json:"refers_to_date"`
	// Original is where the index led: file, offset, timestamp, and which
	// of pywb's lookups found it.
	Original *Original `json:"original,omitempty"`
	OK       bool      `json:"replays"`
	Problem  string    `json:"problem,omitempty"`
}

// Original is the record an index line resolves a revisit to.
type Original struct {
	File      string `json:"file"`
	Offset    int64  `json:"offset"`
	Timestamp string `json:"timestamp"`
	Lookup    string `json:"lookup"`
	Payload   int64  `json:"payload_bytes"`
}

// Result is what a check found.
type Result struct {
	Live     int64      `json:"revisits_in_place"` // revisits of the log in place now
	Sampled  int        `json:"sampled"`
	Replay   int        `json:"replay"`
	Failed   int        `json:"do_not_replay"`
	Revisits []*Revisit `json:"revisits"`
	Lines    int64      `json:"index_lines_read"`
}

// Check draws the sample and checks it.
func Check(ctx context.Context, opt Options) (*Result, error) {
	// The log sorted on file, read a file at a time: memory holds one
	// file's entries, not the log's.
	grouped, err := rewritelog.SortByFile(ctx, opt.Log, opt.Sort)
	if err != nil {
		return nil, err
	}
	defer grouped.Remove()
	byFile, err := grouped.Open()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x61726377))
	// Reservoir sampling over the log's live revisits, file by file in
	// the byte order of their escaped names, each in log order.
	var sample []*Revisit
	for byFile.Next() {
		moves := byFile.Moves()
		for _, f := range moves.Files() {
			err := moves.Live(f, func(mv rewritelog.Move, off int64) error {
				res.Live++
				r := &Revisit{File: f.Name, Offset: off}
				switch {
				case opt.Sample <= 0 || len(sample) < opt.Sample:
					sample = append(sample, r)
				default:
					if j := rng.Int64N(res.Live); j < int64(opt.Sample) {
						sample[j] = r
					}
				}
				return nil
			})
			if err != nil {
				byFile.Close()
				return nil, err
			}
		}
	}
	if err := byFile.Close(); err != nil {
		return nil, err
	}
	slices.SortFunc(sample, func(a, b *Revisit) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return int(a.Offset - b.Offset)
	})
	res.Revisits, res.Sampled = sample, len(sample)
	files, err := listFiles(opt.Collection)
	if err != nil {
		return nil, err
	}
	// The revisits as they are in their files.
	for _, r := range sample {
		if err := readRevisit(opt.Collection, r); err != nil {
			r.Problem = err.Error()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lines, err := indexLines(ctx, opt.Indexes, sample, &res.Lines)
	if err != nil {
		return nil, err
	}
	for _, r := range sample {
		if r.Problem == "" {
			if err := resolve(opt.Collection, files, r, lines); err != nil {
				r.Problem = err.Error()
			} else {
				r.OK = true
			}
		}
		if r.OK {
			res.Replay++
		} else {
			res.Failed++
		}
	}
	return res, nil
}

// readRevisit reads the revisit record at r's place.
func readRevisit(root string, r *Revisit) error {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(r.File)))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	rr, err := record.NewReader(io.NewSectionReader(f, r.Offset, fi.Size()-r.Offset), r.File)
	if err != nil {
		return err
	}
	rr.SetBase(r.Offset)
	rec, err := rr.Next()
	if err != nil {
		return fmt.Errorf("the log's revisit: %w", err)
	}
	if rec.Type != "revisit" {
		return fmt.Errorf("%s: offset %d: a %s record, where the log says a revisit is", r.File, r.Offset, rec.Type)
	}
	r.URI, r.Date = rec.TargetURI(), rec.Date
	r.Digest = rec.Header.Get("WARC-Payload-Digest")
	r.RefURI = record.StripAngles(rec.Header.Get("WARC-Refers-To-Target-URI"))
	r.RefDate = rec.Header.Get("WARC-Refers-To-Date")
	if r.Digest == "" {
		return fmt.Errorf("%s: offset %d: the revisit has no WARC-Payload-Digest", r.File, r.Offset)
	}
	return nil
}

// line is an index line kept for a sampled URL.
type line struct {
	url, timestamp, mime, status, digest, file string
	offset                                     int64
}

// indexLines reads the indexes once, keeping the lines whose URL is a
// sampled revisit's own or Refers-To URL.
func indexLines(ctx context.Context, indexes []string, sample []*Revisit, count *int64) (map[string][]line, error) {
	want := map[string]bool{}
	for _, r := range sample {
		if r.Problem == "" {
			want[r.URI], want[r.RefURI] = true, true
		}
	}
	out := map[string][]line{}
	for _, name := range indexes {
		in, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		rd, err := cdx.NewReader(in, name, cdx.Options{})
		if err != nil {
			in.Close()
			return nil, err
		}
		for {
			l, err := rd.Next()
			if err == io.EOF {
				break
			}
			var le *cdx.LineError
			if errors.As(err, &le) {
				continue
			}
			if err != nil {
				in.Close()
				return nil, err
			}
			*count++
			if *count%(1<<16) == 0 && ctx.Err() != nil {
				in.Close()
				return nil, ctx.Err()
			}
			if l.Kind != cdx.Record || !want[string(l.URL)] {
				continue
			}
			out[string(l.URL)] = append(out[string(l.URL)], line{url: string(l.URL), timestamp: string(l.Timestamp), mime: string(l.MIME),
				status: string(l.Status), digest: string(l.Digest), file: string(l.Filename), offset: l.Offset})
		}
		in.Close()
	}
	for _, ls := range out {
		slices.SortStableFunc(ls, func(a, b line) int { return strings.Compare(a.timestamp, b.timestamp) })
	}
	return out, nil
}

// normDigest is a digest without its label, as the indexes compare them.
func normDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 {
		d = d[i+1:]
	}
	return strings.ToUpper(strings.TrimSpace(d))
}

// emptySHA1 is the SHA-1 of the empty payload: pywb serves a revisit with
// it as its own, empty, payload.
const emptySHA1 = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"

// resolve finds r's original with pywb's rule and compares its payload.
func resolve(root string, files map[string][]string, r *Revisit, lines map[string][]line) error {
	want := normDigest(r.Digest)
	if want == emptySHA1 {
		r.Original = &Original{File: r.File, Offset: r.Offset, Lookup: "own empty payload"}
		return nil
	}
	ts := timestamp(r.Date)
	var found *line
	lookup := ""
	for i, l := range lines[r.URI] {
		if l.timestamp > ts {
			break
		}
		if l.mime != "warc/revisit" && normDigest(l.digest) == want {
			found, lookup = &lines[r.URI][i], "same-URL earlier capture"
			break
		}
	}
	if found == nil {
		if r.RefURI == "" {
			return fmt.Errorf("%s: offset %d: no WARC-Refers-To-Target-URI, and no earlier capture of %s with digest %s in the index", r.File, r.Offset, r.URI, r.Digest)
		}
		target := ts
		if r.RefDate != "" {
			target = timestamp(r.RefDate)
		}
		var best time.Duration
		for i, l := range lines[r.RefURI] {
			if l.mime == "warc/revisit" || normDigest(l.digest) != want {
				continue
			}
			if d := distance(l.timestamp, target); found == nil || d < best {
				found, best = &lines[r.RefURI][i], d
			}
		}
		lookup = "Refers-To lookup"
	}
	if found == nil {
		return fmt.Errorf("%s: offset %d: the index has no capture of %s with digest %s that is not a revisit (%d lines of that URL)", r.File, r.Offset, r.RefURI, r.Digest, len(lines[r.RefURI]))
	}
	r.Original = &Original{File: found.file, Offset: found.offset, Timestamp: found.timestamp, Lookup: lookup}
	name, err := locate(files, found.file)
	if err != nil {
		return fmt.Errorf("%s: offset %d: its original %s: %w", r.File, r.Offset, found.file, err)
	}
	r.Original.File = name
	n, err := payloadMatches(root, name, found.offset, r.Digest)
	r.Original.Payload = n
	if err != nil {
		return fmt.Errorf("%s: offset %d: its original, %s offset %d (%s): %w", r.File, r.Offset, name, found.offset, lookup, err)
	}
	return nil
}

// payloadMatches reads the response at offset of name and hashes its
// payload in the algorithm of want.
func payloadMatches(root, name string, offset int64, want string) (int64, error) {
	algo, sum, err := digest.ParseHeader(want)
	if err != nil {
		return 0, fmt.Errorf("the revisit's digest: %w", err)
	}
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if offset < 0 || offset >= fi.Size() {
		return 0, fmt.Errorf("offset %d is not in the file (%d bytes)", offset, fi.Size())
	}
	rr, err := record.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset), name)
	if err != nil {
		return 0, err
	}
	rr.SetBase(offset)
	rec, err := rr.Next()
	if err != nil {
		return 0, err
	}
	if rec.Type != "response" {
		return 0, fmt.Errorf("a %s record, not a response", rec.Type)
	}
	if _, err := rr.ReadHTTPHead(); err != nil {
		return 0, err
	}
	h := algo.New()
	n, err := rr.WriteTo(h)
	if err == nil {
		err = rr.Finish()
	}
	if err != nil {
		return n, err
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum) {
		return n, fmt.Errorf("its payload (%d bytes) hashes to %s, not the revisit's %s", n, algo.Format(got), want)
	}
	return n, nil
}

// listFiles maps the collection's files by base name to their relative
// names, to find the files indexes name by base name.
func listFiles(root string) (map[string][]string, error) {
	ins, err := warcsum.Collect([]string{root}, true)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, in := range ins {
		base := path.Base(in.Name)
		out[base] = append(out[base], in.Name)
		if base != in.Name {
			out[in.Name] = append(out[in.Name], in.Name)
		}
	}
	return out, nil
}

// locate finds the file an index line names: a relative name, a path
// ending in one, or a base name only one file has.
func locate(files map[string][]string, name string) (string, error) {
	for i := 0; i <= len(name); i++ {
		if i == 0 || name[i-1] == '/' {
			if fs := files[name[i:]]; len(fs) == 1 {
				return fs[0], nil
			}
		}
	}
	return "", fmt.Errorf("no file of the collection is %q, or several are", name)
}

// timestamp is a WARC date's 14 digits, as a CDX timestamp.
func timestamp(date string) string {
	var b strings.Builder
	for _, c := range date {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
			if b.Len() == 14 {
				break
			}
		}
	}
	return b.String()
}

// distance is how far apart two CDX timestamps are, in whole seconds as
// pywb sorts "closest"; an unreadable one is far.
func distance(a, b string) time.Duration {
	parse := func(ts string) (time.Time, error) {
		const layout, pad = "20060102150405", "19700101000000"
		if len(ts) < len(layout) {
			ts += pad[len(ts):]
		}
		return time.Parse(layout, ts[:len(layout)])
	}
	ta, err1 := parse(a)
	tb, err2 := parse(b)
	if err1 != nil || err2 != nil {
		return time.Duration(1<<63 - 1)
	}
	d := ta.Sub(tb)
	if d < 0 {
		d = -d
	}
	return d
}

// CheckOne checks one revisit, at r.File (relative to the collection) and
// r.Offset, as Check checks each of its sample: read, resolved through the
// indexes with pywb's rule, its original's payload hashed again
// (warcdedup show --cdx). It returns the index lines read; r says the rest.
func CheckOne(ctx context.Context, collection string, indexes []string, r *Revisit) (int64, error) {
	if err := readRevisit(collection, r); err != nil {
		r.Problem = err.Error()
		return 0, nil
	}
	files, err := listFiles(collection)
	if err != nil {
		return 0, err
	}
	var count int64
	lines, err := indexLines(ctx, indexes, []*Revisit{r}, &count)
	if err != nil {
		return count, err
	}
	if err := resolve(collection, files, r, lines); err != nil {
		r.Problem = err.Error()
	} else {
		r.OK = true
	}
	return count, nil
}

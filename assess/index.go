package assess

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"warcdedup/archname"
	"warcdedup/cdx"
	"warcdedup/digest"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/policy"
	"warcdedup/report"
	"warcdedup/workdir"
)

// IndexOptions are those of an assessment from CDX/CDXJ indexes alone.
type IndexOptions struct {
	Indexes []string // index files, plain or gzip
	// Dir is the assessment's directory: stats.json, report.html, and
	// the sorted lines while it runs.
	Dir        string
	Policy     policy.Policy
	Format     cdx.Format // of the lines; cdx.Auto detects each line's
	SortMemory string     // sort's buffer (sort -S); "" for syssort.DefaultMemory (64M)
	Jobs       int        // threads of the sort
	Model      RevisitModel
	Display    *progress.Display
}

// maxFiles bounds the file names an index assessment remembers (to count
// the files, and those that would be rewritten); beyond it the counts are
// lower bounds, and the report says so.
const maxFiles = 1 << 20

// maxBadLines is how many bad lines a report names, one by one.
const maxBadLines = 20

// Index assesses a collection from its CDX or CDXJ indexes alone, without
// reading any WARC file: every 2xx response line with a payload digest and
// a length is written, in a form that sorts by digest and capture, into
// Dir; the system sort orders it; one pass over it finds, for each payload
// class, its earliest capture (the original) and the duplicates, and
// estimates what their revisits would save with the RevisitModel. Memory
// is bounded by the breakdowns' limits and the number of files, not by
// the lines. The digests are the indexes' (taken from the records'
// WARC-Payload-Digest headers): trusted, not verified.
func Index(ctx context.Context, opt IndexOptions) (*Result, error) {
	if len(opt.Indexes) == 0 {
		return nil, errors.New("no index given")
	}
	if opt.Model == (RevisitModel{}) {
		opt.Model = DefaultRevisitModel
	}
	show := opt.Display
	if show == nil {
		show = progress.NewPlain(io.Discard, "warcdedup")
	}
	var indexes []string
	var total int64
	for _, name := range opt.Indexes {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory: name the index files", name)
		}
		abs, err := fspath.Abs(name)
		if err != nil {
			return nil, err
		}
		indexes = append(indexes, abs)
		total += fi.Size()
	}
	wd, err := workdir.Open(opt.Dir)
	if err != nil {
		return nil, err
	}
	defer wd.Close()
	a := &indexAssessment{opt: opt, show: show, files: map[string]bool{}, rewritten: map[string]bool{},
		mime: report.NewBreakdown(10000), host: report.NewBreakdown(100000), month: report.NewBreakdown(1 << 20), size: report.NewBreakdown(64),
		largest: report.NewLargest(20), algos: map[string]int64{}}
	rep := &report.Report{Title: "Assessment from the indexes " + strings.Join(indexes, ", "), Generated: time.Now().UTC(),
		Mode: "cdx", Collections: indexes, Policy: opt.Policy.String()}
	a.rep = rep
	show.Note("warcdedup: assessing from %s, %s, work directory %s", plural(len(indexes), "index", "indexes"), progress.Bytes(total), opt.Dir)

	lines := wd.File("tmp/lines")
	sorted := wd.File("tmp/lines-by-digest")
	stage := func(name string, run func() error) error {
		start := time.Now()
		err := run()
		rep.Stages = append(rep.Stages, report.Stage{Name: name, Took: time.Since(start)})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return ctx.Err()
	}
	err = stage("read indexes", func() error { return a.read(ctx, indexes, total, lines) })
	if err == nil {
		err = stage("sort by digest", func() error {
			s := show.Start("sort by digest", "files", 1)
			defer s.Done("")
			err := syssort.Sorter{TempDir: wd.File("tmp"), Memory: opt.SortMemory, Parallel: opt.Jobs}.Sort(ctx,
				"LC_ALL=C sort -k1,1 -k2,2 -k3,3 -k4,4 -k5,5n", []string{lines}, sorted)
			os.Remove(lines)
			return err
		})
	}
	if err == nil {
		err = stage("account", func() error { return a.account(sorted) })
	}
	os.Remove(sorted)
	a.finish(err)
	if werr := WriteReport(opt.Dir, rep); werr != nil && err == nil {
		err = werr
	}
	return &Result{Report: rep, Dir: opt.Dir}, err
}

// indexAssessment is one run of Index.
type indexAssessment struct {
	opt  IndexOptions
	show *progress.Display
	rep  *report.Report

	lines, records, badLines int64
	bad                      []string
	leftOut                  [nLeftOut]int64
	stored                   int64
	algos                    map[string]int64

	files, rewritten  map[string]bool
	filesOver         bool
	mime, host, month *report.Breakdown
	size              *report.Breakdown
	same, cross       report.Bucket
	arc, notSmaller   report.Reason
	split             int64
	low, high         int64
	largest           *report.Largest
}

// Why index lines are left out of the assessment.
const (
	leftRevisit  = iota // a revisit record: already deduplicated
	leftStatus          // not a 2xx response, or a 206 (requests, redirects, errors, partial content, metadata)
	leftDigest          // no payload digest
	leftLength          // no length
	leftFilename        // no file name
	leftTwice           // the same record (file and offset) listed again
	nLeftOut
)

var leftOutWhy = [nLeftOut]string{
	leftRevisit:  "revisit records (already deduplicated; counted as revisits)",
	leftStatus:   "lines of other records than 2xx responses, or of 206 partial content (requests, redirects, errors, metadata)",
	leftDigest:   "lines without a payload digest",
	leftLength:   "lines without a record length",
	leftFilename: "lines without a file name",
	leftTwice:    "lines of a record already listed (same file and offset)",
}

// read writes the lines to assess, one per candidate response:
//
//	digest key timestamp file offset length status mime url
//
// every field escaped as manifest fields are (no blanks), the key what
// the policy makes captures of the same payload share.
func (a *indexAssessment) read(ctx context.Context, indexes []string, total int64, out string) error {
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	defer o.Close()
	w := bufio.NewWriterSize(o, 1<<20)
	s := a.show.Start("read indexes", "bytes", total)
	defer s.Done("")
	var done atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := done.Load()
				s.Add(n - last)
				last = n
			}
		}
	}()
	var buf []byte
	for _, name := range indexes {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		r, err := cdx.NewReader(progress.CountingReader(f, &done), name, cdx.Options{Format: a.opt.Format})
		if err != nil {
			f.Close()
			return err
		}
		for {
			l, err := r.Next()
			if err == io.EOF {
				break
			}
			var le *cdx.LineError
			if errors.As(err, &le) {
				a.badLines++
				if len(a.bad) < maxBadLines {
					a.bad = append(a.bad, le.Error())
				}
				a.show.Print("warcdedup: error: %v", le)
				continue
			}
			if err != nil {
				f.Close()
				return err
			}
			if l.Kind != cdx.Record {
				continue
			}
			a.lines++
			if a.lines%65536 == 0 && ctx.Err() != nil {
				f.Close()
				return ctx.Err()
			}
			if buf, err = a.line(w, l, buf); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return o.Close()
}

// line writes one index line to assess, or counts why it is left out.
func (a *indexAssessment) line(w *bufio.Writer, l *cdx.Line, buf []byte) ([]byte, error) {
	if l.Length > 0 {
		a.stored += l.Length
	}
	if l.Filename != nil {
		a.file(a.files, l.Filename)
	}
	switch {
	case string(l.MIME) == "warc/revisit":
		a.leftOut[leftRevisit]++
		return buf, nil
	case len(l.Status) != 3 || l.Status[0] != '2' || !allDigits(string(l.Status)) || string(l.Status) == "206":
		a.leftOut[leftStatus]++
		return buf, nil
	case l.Digest == nil:
		a.leftOut[leftDigest]++
		return buf, nil
	case l.Length < 0:
		a.leftOut[leftLength]++
		return buf, nil
	case l.Filename == nil:
		a.leftOut[leftFilename]++
		return buf, nil
	}
	a.records++
	b := buf[:0]
	var algo string
	b, algo = appendDigest(b, l.Digest)
	a.algos[algo]++
	b = append(b, ' ')
	switch a.opt.Policy {
	case policy.Payload:
		b = append(b, '-')
	case policy.URI:
		b = appendEscaped(b, l.URL)
	default:
		// The replay policy's key as far as an index tells it: the
		// container, the status and the media type.
		if archname.IsARC(string(l.Filename)) {
			b = append(b, "arc|"...)
		} else {
			b = append(b, "warc|"...)
		}
		b = append(append(b, l.Status...), '|')
		b = appendEscaped(b, bytes.ToLower(l.MIME))
	}
	b = append(b, ' ')
	b = appendTimestamp(b, l.Timestamp)
	b = append(b, ' ')
	b = appendEscaped(b, l.Filename)
	b = append(b, ' ')
	b = strconv.AppendInt(b, max(l.Offset, 0), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, l.Length, 10)
	b = append(b, ' ')
	b = append(b, l.Status...)
	b = append(b, ' ')
	b = appendEscaped(b, l.MIME)
	b = append(b, ' ')
	b = appendEscaped(b, l.URL)
	b = append(b, '\n')
	_, err := w.Write(b)
	return b, err
}

// file remembers a file name in set, up to maxFiles names.
func (a *indexAssessment) file(set map[string]bool, name []byte) {
	if set[string(name)] {
		return
	}
	if len(set) >= maxFiles {
		a.filesOver = true
		return
	}
	set[string(name)] = true
}

// appendDigest appends the digest in the manifest's form ("sha1:BASE32")
// when it can be read as one (with or without its label, in any encoding
// WARC writers use; no label means sha1), else as written after "raw:",
// and returns the algorithm's name.
func appendDigest(b, d []byte) ([]byte, string) {
	label, value, ok := bytes.Cut(d, []byte(":"))
	if !ok {
		label, value = []byte("sha1"), d
	}
	// The common case, sha1 in upper-case base32, as is.
	if len(value) == 32 && (string(label) == "sha1" || string(label) == "SHA1" || string(label) == "sha-1") && isBase32(value) {
		return append(append(b, "sha1:"...), value...), "sha1"
	}
	if a, sum, err := digest.ParseHeader(string(label) + ":" + string(value)); err == nil {
		return a.AppendFormat(b, sum), a.String()
	}
	return appendEscaped(append(b, "raw:"...), d), "unknown"
}

func isBase32(v []byte) bool {
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// appendTimestamp appends a timestamp that sorts as a time: digits padded
// to 17 (milliseconds), anything else as it is, escaped; "-" for none.
func appendTimestamp(b, ts []byte) []byte {
	if len(ts) == 0 {
		return append(b, '-')
	}
	if len(ts) <= 17 && allDigits(string(ts)) {
		b = append(b, ts...)
		for range 17 - len(ts) {
			b = append(b, '0')
		}
		return b
	}
	return appendEscaped(b, ts)
}

// appendEscaped appends v as a manifest field: bytes 0x00-0x20 and 0x7F
// as %XX, "-" for an empty value.
func appendEscaped(b, v []byte) []byte {
	if len(v) == 0 {
		return append(b, '-')
	}
	for _, c := range v {
		if c <= 0x20 || c == 0x7F {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// indexRecord is one line of the sorted file.
type indexRecord struct {
	digest, key, ts, file string
	offset, length        int64
	status, mime, url     string
}

func parseIndexRecord(s string) (indexRecord, error) {
	f := strings.Split(s, " ")
	if len(f) != 9 {
		return indexRecord{}, fmt.Errorf("%d fields, want 9", len(f))
	}
	off, err1 := strconv.ParseInt(f[4], 10, 64)
	length, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return indexRecord{}, errors.New("offset or length not a number")
	}
	return indexRecord{digest: f[0], key: f[1], ts: f[2], file: f[3], offset: off, length: length, status: f[6], mime: f[7], url: f[8]}, nil
}

// indexClass is the payload class being accounted: its original and
// totals.
type indexClass struct {
	digest, key string
	original    indexRecord
	class       report.Class
	last        indexRecord // to tell a record listed twice
}

// account streams the sorted lines class by class.
func (a *indexAssessment) account(sorted string) error {
	f, err := os.Open(sorted)
	if err != nil {
		return err
	}
	defer f.Close()
	s := a.show.Start("account", "lines", a.records)
	defer s.Done("")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), cdx.MaxLineLength+4096)
	var c indexClass
	n := 0
	for sc.Scan() {
		n++
		if n%65536 == 0 {
			s.Add(65536)
		}
		r, err := parseIndexRecord(sc.Text())
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", sorted, n, err)
		}
		switch {
		case r.digest != c.digest:
			a.closeClass(&c)
			c = indexClass{digest: r.digest, key: r.key}
		case r.key != c.key:
			// The same bytes, served differently: an original of its own.
			a.closeClass(&c)
			a.split++
			c = indexClass{digest: r.digest, key: r.key}
		case r.file == c.last.file && r.offset == c.last.offset:
			a.leftOut[leftTwice]++
			a.records--
			continue
		}
		a.record(&c, r)
		c.last = r
	}
	if err := sc.Err(); err != nil {
		return err
	}
	a.closeClass(&c)
	return nil
}

// record accounts one candidate response of class c.
func (a *indexAssessment) record(c *indexClass, r indexRecord) {
	t := &a.rep.Totals
	t.Records++
	t.RecordBytes += r.length
	b := report.Bucket{Records: 1, Bytes: r.length}
	first := c.class.Copies == 0
	c.class.Copies++
	c.class.Bytes += r.length
	if first {
		c.original = r
		c.class.Digest, c.class.MIME, c.class.URI, c.class.Date = r.digest, r.mime, r.url, warcDate(r.ts)
	} else {
		t.Duplicates++
		t.DuplicateBytes += r.length
		c.class.DuplicateBytes += r.length
		b.Duplicates, b.DuplicateBytes = 1, r.length
		if archname.IsARC(r.file) {
			a.arc.Records++
			a.arc.Bytes += r.length
		} else {
			revisit := a.opt.Model.Length(len(r.url), strings.HasSuffix(strings.ToLower(r.file), ".gz"))
			a.low += max(r.length-int64(float64(revisit)*RevisitHigh), 0)
			a.high += max(r.length-int64(float64(revisit)*RevisitLow), 0)
			if r.length > revisit {
				b.BytesSaved = r.length - revisit
				t.RevisitsWritten++
				t.BytesSaved += b.BytesSaved
				a.file(a.rewritten, []byte(r.file))
			} else {
				a.notSmaller.Records++
				a.notSmaller.Bytes += r.length
			}
		}
		if r.url == c.original.url {
			a.same.Add(b)
		} else {
			a.cross.Add(b)
		}
	}
	a.mime.Add(r.mime, b)
	a.host.Add(report.HostOf(r.url), b)
	a.month.Add(monthOf(r.ts), b)
	a.size.Add(report.SizeClass(r.length), b)
}

func (a *indexAssessment) closeClass(c *indexClass) {
	if c.class.DuplicateBytes > 0 {
		a.largest.Offer(c.class)
	}
}

// warcDate turns a CDX timestamp into a WARC date (2024-06-01T12:00:00Z).
func warcDate(ts string) string {
	if len(ts) < 14 || !allDigits(ts[:14]) {
		return ts
	}
	return ts[:4] + "-" + ts[4:6] + "-" + ts[6:8] + "T" + ts[8:10] + ":" + ts[10:12] + ":" + ts[12:14] + "Z"
}

// finish fills the report: totals, breakdowns, what was left out and why,
// the estimate and its caveats, the exit status.
func (a *indexAssessment) finish(err error) {
	rep := a.rep
	t := &rep.Totals
	t.Files = int64(len(a.files))
	t.StoredBytes = a.stored
	t.Revisits = a.leftOut[leftRevisit]
	t.FilesRewritten = int64(len(a.rewritten))
	rep.Algorithm = a.algorithm()
	rep.ByMIME = a.mime.Top(12)
	rep.ByHost = a.host.Top(15)
	rep.ByMonth = a.month.Ordered(nil)
	rep.BySize = a.size.Ordered(report.SizeLabels())
	rep.SameURL, rep.CrossURL = a.same, a.cross
	rep.SameURL.Label, rep.CrossURL.Label = "same URL (re-fetched)", "another URL"
	rep.LargestClasses = a.largest.Classes()
	if a.arc.Records > 0 {
		a.arc.Why = "in an ARC file: ARC records have no revisit form (convert it to WARC with warcdedup run --convert-arc, or arc2warc first)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.arc)
	}
	if a.notSmaller.Records > 0 {
		a.notSmaller.Why = "its revisit would not be smaller than the record (short payloads; by the revisit length model)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.notSmaller)
	}
	if a.split > 0 && a.opt.Policy == policy.Replay {
		rep.NotDeduplicable = append(rep.NotDeduplicable, report.Reason{Records: a.split,
			Why: "served differently (status, MIME type or container) from the earlier captures of the same payload: kept as an original of its own under the replay policy"})
	}
	rep.Estimate = &report.Estimate{
		Method: fmt.Sprintf("From %s lines of %s, without reading any WARC file: each payload digest's earliest capture is its original "+
			"(under the replay policy, of the same status, MIME type and container), every later capture a duplicate; a duplicate's "+
			"revisit is taken to be %s long, and a duplicate saves its length less that, if it is smaller and not in an ARC file. "+
			"The range takes revisits %.2g to %.2g times as long.",
			progress.Count(a.lines), plural(len(rep.Collections), "index", "indexes"), a.opt.Model, RevisitLow, RevisitHigh),
		BytesSaved: t.BytesSaved, BytesSavedLow: min(a.low, t.BytesSaved), BytesSavedHigh: max(a.high, t.BytesSaved),
		Duplicates: t.Duplicates, DuplicatesLow: t.Duplicates, DuplicatesHigh: t.Duplicates,
	}
	rep.Caveats = append(rep.Caveats,
		"Header digests are trusted, not verified: the payload digests are those the indexes give (from each record's WARC-Payload-Digest, "+
			"or computed by the indexer). No WARC file was read, so no duplicate was proven byte for byte, and a wrong digest goes unnoticed.",
		"The bytes saved are estimated from the records' lengths in the indexes (as stored, compressed in .gz files) less a modelled revisit length; "+
			"a run builds each revisit and measures it.",
		"Stored bytes are the sum of the lengths of the records the indexes list; records they leave out (warcinfo, most often) are not counted.",
		"An index does not say which responses are truncated (WARC-Truncated) or segmented: they are counted, though a run leaves them out.")
	if a.opt.Policy == policy.Replay {
		rep.Caveats = append(rep.Caveats, "The indexes give no Content-Encoding, Content-Disposition or Location, which the replay policy also compares: "+
			"a run may find fewer duplicates.")
	}
	var left []string
	for why, n := range a.leftOut {
		if n > 0 {
			left = append(left, fmt.Sprintf("%s %s", progress.Count(n), leftOutWhy[why]))
		}
	}
	if len(left) > 0 {
		rep.Caveats = append(rep.Caveats, "Left out: "+strings.Join(left, "; ")+".")
	}
	if a.badLines > 0 {
		rep.Caveats = append(rep.Caveats, fmt.Sprintf("%s lines could not be read and were left out (see the exit status).", progress.Count(a.badLines)))
	}
	if a.filesOver {
		rep.Caveats = append(rep.Caveats, fmt.Sprintf("The indexes name more than %s files: the counts of files are lower bounds.", progress.Count(maxFiles)))
	}
	var reasons []string
	if err != nil {
		rep.Exit = 2
		reasons = append(reasons, "the assessment stopped: "+err.Error())
	}
	if a.badLines > 0 {
		reasons = append(reasons, fmt.Sprintf("%s index lines could not be read:", progress.Count(a.badLines)))
		for _, b := range a.bad {
			reasons = append(reasons, "  "+b)
		}
		if a.badLines > int64(len(a.bad)) {
			reasons = append(reasons, fmt.Sprintf("  and %s more", progress.Count(a.badLines-int64(len(a.bad)))))
		}
	}
	if rep.Exit == 0 && len(reasons) > 0 {
		rep.Exit = 1
	}
	rep.ExitReason = reasons
}

// plural is "1 index" or "2 indexes".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return progress.Count(int64(n)) + " " + many
}

// algorithm names the digest algorithm of most lines.
func (a *indexAssessment) algorithm() string {
	names := make([]string, 0, len(a.algos))
	for n := range a.algos {
		names = append(names, n)
	}
	sort.Slice(names, func(i, k int) bool {
		if a.algos[names[i]] != a.algos[names[k]] {
			return a.algos[names[i]] > a.algos[names[k]]
		}
		return names[i] < names[k]
	})
	if len(names) == 0 {
		return ""
	}
	if len(names) > 1 {
		return names[0] + " (and others)"
	}
	return names[0]
}

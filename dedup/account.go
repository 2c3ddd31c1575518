package dedup

import (
	"bufio"
	"container/heap"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
)

// account writes what the job did (or would do): the report's figures and
// breakdowns, the fixity list and the dependencies between files.
func (j *Job) account(ctx context.Context) (string, error) {
	a := newAccount(j)
	if err := a.records(); err != nil {
		return "", err
	}
	if err := a.classes(ctx); err != nil {
		return "", err
	}
	if !j.opt.DryRun {
		if err := a.fixity(); err != nil {
			return "", err
		}
	}
	a.fill()
	return fmt.Sprintf("%s duplicates, %s saved", progress.Count(a.rep.Totals.Duplicates), progress.Bytes(a.rep.Totals.BytesSaved)), nil
}

// account builds a job's report from its work files.
type account struct {
	j   *Job
	rep *report.Report

	mime, host, month, size *breakdown
	same, cross             report.Bucket
	arc, refusedDups, kept  report.Reason
	refusedFiles            map[string]bool
	largest                 classHeap
	replaced                int64 // files the log says were replaced
}

func newAccount(j *Job) *account {
	a := &account{j: j, rep: j.rep, refusedFiles: map[string]bool{},
		mime: newBreakdown(10000), host: newBreakdown(100000), month: newBreakdown(1 << 20), size: newBreakdown(64)}
	for _, r := range j.refused {
		// "FILE: left untouched: ..." or "FILE: offset N: left untouched: ..."
		if f, _, ok := strings.Cut(r, ": "); ok {
			a.refusedFiles[f] = true
		}
	}
	return a
}

// records streams the numbered manifest, the facts and the revisits
// written, all in file order, record by record.
func (a *account) records() error {
	j := a.j
	numbered, err := os.Open(j.wd.File(ByFileFile))
	if err != nil {
		return err
	}
	defer numbered.Close()
	facts, err := newLineScanner(j.wd.File(FactsByFile))
	if err != nil {
		return err
	}
	defer facts.close()
	saved, err := newLineScanner(j.wd.File(SavedFile))
	if err != nil {
		return err
	}
	defer saved.close()
	in := manifest.NewReader(numbered, j.wd.File(ByFileFile))
	t := &a.rep.Totals
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if l.IsRevisit() {
			t.Revisits++
			continue
		}
		t.Records++
		t.RecordBytes += l.Length
		mime := "-"
		if f := facts.find(l.File, l.Offset); f != nil && len(f) >= 4 {
			mime = f[3]
		}
		var revisitLen int64 = -1
		if f := saved.find(l.File, l.Offset); f != nil && len(f) >= 4 {
			revisitLen, _ = strconv.ParseInt(f[3], 10, 64)
		}
		b := bucketOf(&l, revisitLen)
		a.mime.add(mime, b)
		a.host.add(hostOf(l.URI), b)
		a.month.add(monthOf(l.Date), b)
		a.size.add(sizeClass(l.Length), b)
		if !l.IsDuplicate() {
			continue
		}
		t.Duplicates++
		t.DuplicateBytes += l.Length
		if l.RefURI == l.URI {
			a.same.Add(b)
		} else {
			a.cross.Add(b)
		}
		switch {
		case revisitLen >= 0:
			t.RevisitsWritten++
			t.BytesSaved += l.Length - revisitLen
		case isARC(l.File):
			a.arc.Records++
			a.arc.Bytes += l.Length
		case a.refusedFiles[l.File]:
			a.refusedDups.Records++
			a.refusedDups.Bytes += l.Length
		default:
			a.kept.Records++
			a.kept.Bytes += l.Length
		}
	}
	return nil
}

// bucketOf is one record's contribution to a breakdown.
func bucketOf(l *manifest.Line, revisitLen int64) report.Bucket {
	b := report.Bucket{Records: 1, Bytes: l.Length}
	if l.IsDuplicate() {
		b.Duplicates, b.DuplicateBytes = 1, l.Length
		if revisitLen >= 0 {
			b.BytesSaved = l.Length - revisitLen
		}
	}
	return b
}

func isARC(file string) bool {
	f := strings.ToLower(file)
	return strings.HasSuffix(f, ".arc") || strings.HasSuffix(f, ".arc.gz")
}

// hostOf is the host of a URI, lower case, without port or user.
func hostOf(uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		if scheme, _, ok := strings.Cut(uri, ":"); ok {
			return "(" + strings.ToLower(scheme) + ")"
		}
		return "(none)"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		rest = rest[:i]
	}
	return strings.ToLower(rest)
}

// monthOf is the YYYY-MM of a WARC date.
func monthOf(date string) string {
	if len(date) >= 7 && date[4] == '-' {
		return date[:7]
	}
	return "(unknown)"
}

// sizeClasses are the payload size ranges of the size breakdown, by the
// record's stored length.
var sizeClasses = []struct {
	limit int64
	label string
}{{1e3, "< 1 kB"}, {1e4, "1-10 kB"}, {1e5, "10-100 kB"}, {1e6, "100 kB-1 MB"}, {1e7, "1-10 MB"}, {1e8, "10-100 MB"}, {1 << 62, ">= 100 MB"}}

func sizeClass(n int64) string {
	for _, c := range sizeClasses {
		if n < c.limit {
			return c.label
		}
	}
	return sizeClasses[len(sizeClasses)-1].label
}

// breakdown groups records by a label, in memory up to a number of labels;
// records of further labels are counted under "other" (a collection of
// millions of hosts keeps a bounded account).
type breakdown struct {
	limit   int
	buckets map[string]*report.Bucket
	other   report.Bucket
}

func newBreakdown(limit int) *breakdown {
	return &breakdown{limit: limit, buckets: map[string]*report.Bucket{}}
}

func (b *breakdown) add(label string, x report.Bucket) {
	bk, ok := b.buckets[label]
	if !ok {
		if len(b.buckets) >= b.limit {
			b.other.Add(x)
			return
		}
		bk = &report.Bucket{Label: label}
		b.buckets[label] = bk
	}
	bk.Add(x)
}

// top returns the n buckets with the most duplicate bytes, then "other".
func (b *breakdown) top(n int) []report.Bucket {
	all := b.sorted(func(x, y *report.Bucket) bool {
		if x.DuplicateBytes != y.DuplicateBytes {
			return x.DuplicateBytes > y.DuplicateBytes
		}
		return x.Label < y.Label
	})
	if len(all) <= n && b.other.Records == 0 {
		return all
	}
	out := all[:min(n, len(all))]
	other := b.other
	other.Label = "other"
	for _, x := range all[min(n, len(all)):] {
		other.Add(x)
	}
	return append(out, other)
}

// ordered returns the buckets in label order (months), or in the order of
// labels given (size classes).
func (b *breakdown) ordered(labels []string) []report.Bucket {
	if labels == nil {
		return b.sorted(func(x, y *report.Bucket) bool { return x.Label < y.Label })
	}
	var out []report.Bucket
	for _, l := range labels {
		if bk, ok := b.buckets[l]; ok {
			out = append(out, *bk)
		}
	}
	return out
}

func (b *breakdown) sorted(less func(x, y *report.Bucket) bool) []report.Bucket {
	out := make([]report.Bucket, 0, len(b.buckets))
	for _, bk := range b.buckets {
		out = append(out, *bk)
	}
	sort.Slice(out, func(i, k int) bool { return less(&out[i], &out[k]) })
	return out
}

// classes streams the numbered manifest, digest by digest, for the largest
// classes and the dependencies between files.
func (a *account) classes(ctx context.Context) error {
	j := a.j
	f, err := os.Open(j.wd.File(NumberedFile))
	if err != nil {
		return err
	}
	defer f.Close()
	// Each duplicate and the file of its original, joined below with the
	// revisits written.
	pairsName := j.wd.File(tmpDir + "/pairs")
	pairs, err := os.Create(pairsName)
	if err != nil {
		return err
	}
	defer os.Remove(pairsName)
	pw := bufio.NewWriter(pairs)
	origFile := map[int]string{}
	in := manifest.NewReader(f, j.wd.File(NumberedFile))
	cur := map[int]*report.Class{}
	digest := ""
	flush := func() {
		for _, c := range cur {
			if c.DuplicateBytes > 0 {
				a.largest.offer(*c, 20)
			}
		}
		clear(cur)
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if l.IsRevisit() {
			continue
		}
		if l.Digest != digest {
			flush()
			clear(origFile)
			digest = l.Digest
		}
		c := cur[l.Ext]
		if c == nil {
			c = &report.Class{Digest: l.Digest, Ext: l.Ext, URI: l.URI, Date: l.Date}
			cur[l.Ext] = c
			origFile[l.Ext] = l.File
		}
		c.Copies++
		c.Bytes += l.Length
		if l.IsDuplicate() {
			c.DuplicateBytes += l.Length
			fmt.Fprintf(pw, "%s %d %s\n", l.File, l.Offset, origFile[l.Ext])
		}
	}
	flush()
	if err := pw.Flush(); err != nil {
		return err
	}
	if err := pairs.Close(); err != nil {
		return err
	}
	return a.deps(ctx, pairsName)
}

// deps writes, for each file, the files holding the originals its revisits
// need, and how many: none of them may be deleted while it is kept.
func (a *account) deps(ctx context.Context, pairsName string) error {
	j := a.j
	sorted := pairsName + "-by-file"
	if err := Sort(ctx, SortOptions{TempDir: j.wd.File(tmpDir), Memory: j.opt.SortMemory}, manifest.ByFile.Command, pairsName, sorted); err != nil {
		return err
	}
	defer os.Remove(sorted)
	pairs, err := newLineScanner(sorted)
	if err != nil {
		return err
	}
	defer pairs.close()
	saved, err := newLineScanner(j.wd.File(SavedFile))
	if err != nil {
		return err
	}
	defer saved.close()
	counts := map[[2]string]int64{}
	for !saved.done {
		s := saved.cur
		saved.advance()
		if len(s) < 2 {
			continue
		}
		off, _ := strconv.ParseInt(s[1], 10, 64)
		if p := pairs.find(s[0], off); len(p) >= 3 {
			counts[[2]string{p[0], p[2]}]++
		}
	}
	keys := make([][2]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, k int) bool {
		if keys[i][0] != keys[k][0] {
			return keys[i][0] < keys[k][0]
		}
		return keys[i][1] < keys[k][1]
	})
	var b strings.Builder
	b.WriteString("# file original-file revisits\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s %d\n", k[0], k[1], counts[k])
	}
	return writeFile(j.wd.File(DepsFile), []byte(b.String()))
}

// classHeap keeps the classes with the most duplicate bytes.
type classHeap []report.Class

func (h classHeap) Len() int           { return len(h) }
func (h classHeap) Less(i, k int) bool { return h[i].DuplicateBytes < h[k].DuplicateBytes }
func (h classHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *classHeap) Push(x any)        { *h = append(*h, x.(report.Class)) }
func (h *classHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *classHeap) offer(c report.Class, keep int) {
	heap.Push(h, c)
	if h.Len() > keep {
		heap.Pop(h)
	}
}

// fixity writes, from the rewrite log, one line per file this job
// replaced: its size and SHA-256 before and after (see writeFixity).
func (a *account) fixity() error {
	n, err := writeFixity(a.j.wd.File(LogFile), a.j.state.LogSizeAtHash, a.j.wd.File(FixityFile))
	a.replaced = n
	return err
}

// writeFixity writes the fixity list of the files the log's entries from
// offset from on replaced (this job's, or this undo's): each file's size
// and SHA-256 before the first of those runs and after the last. It
// returns how many files it lists.
func writeFixity(logName string, from int64, out string) (int64, error) {
	const header = "# file old-size old-sha256 new-size new-sha256\n"
	f, err := os.Open(logName)
	if os.IsNotExist(err) {
		return 0, writeFile(out, []byte(header))
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	files := map[string]*rewritelog.Fixity{}
	var order []string
	r := rewritelog.NewReader(io.NewSectionReader(f, from, 1<<62), logName)
	r.Fixity = func(fx rewritelog.Fixity) error {
		if fx.NewSHA256 == "-" {
			return nil
		}
		if prev, ok := files[fx.File]; ok {
			prev.NewSize, prev.NewSHA256 = fx.NewSize, fx.NewSHA256
			return nil
		}
		c := fx
		files[fx.File] = &c
		order = append(order, fx.File)
		return nil
	}
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			return 0, err
		}
	}
	var b strings.Builder
	b.WriteString(header)
	sort.Strings(order)
	for _, name := range order {
		fx := files[name]
		fmt.Fprintf(&b, "%s %d %s %d %s\n", manifest.EscapeFile(name), fx.OldSize, fx.OldSHA256, fx.NewSize, fx.NewSHA256)
	}
	return int64(len(order)), writeFile(out, []byte(b.String()))
}

// fill sets the report's figures from the stages' statistics.
func (a *account) fill() {
	j, rep := a.j, a.rep
	t := &rep.Totals
	t.Files = j.hashed.Files + j.hashed.FilesFailed
	t.StoredBytes = j.hashed.Bytes
	t.FilesRewritten = j.rewrote.Rewritten
	if !j.opt.DryRun {
		// Across the runs of the job (an interrupted one replaced some).
		t.FilesRewritten = a.replaced
	}
	t.FilesRefused = j.rewrote.Refused
	t.StaleLines = j.resolved.Stale
	t.DamagedRecords = j.hashed.Damaged
	t.Violations = j.verified.Violations
	rep.ByMIME = a.mime.top(12)
	rep.ByHost = a.host.top(15)
	rep.ByMonth = a.month.ordered(nil)
	var labels []string
	for _, c := range sizeClasses {
		labels = append(labels, c.label)
	}
	rep.BySize = a.size.ordered(labels)
	rep.SameURL, rep.CrossURL = a.same, a.cross
	rep.SameURL.Label, rep.CrossURL.Label = "same URL (re-fetched)", "another URL"
	sort.Sort(sort.Reverse(a.largest))
	rep.LargestClasses = a.largest
	if a.arc.Records > 0 {
		a.arc.Why = "in an ARC file: ARC records have no revisit form (convert the file to WARC with arc2warc first)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.arc)
	}
	if a.kept.Records > 0 {
		a.kept.Why = "its revisit would not be smaller than the record (short payloads)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.kept)
	}
	if a.refusedDups.Records > 0 {
		a.refusedDups.Why = "in a file that was refused and left untouched (see the exit reasons)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.refusedDups)
	}
	if n := j.resolved.Split; n > 0 {
		rep.NotDeduplicable = append(rep.NotDeduplicable, report.Reason{Records: n,
			Why: fmt.Sprintf("%s the earlier captures of the same bytes: kept as an original of its own under the %s policy", j.opt.Policy.Apart(), j.opt.Policy)})
	}
	if n := j.wholeFileGzip(); n > 0 {
		rep.NotDeduplicable = append(rep.NotDeduplicable, report.Reason{Records: n,
			Why: "in a file compressed as one gzip member (warcrecompress rewrites it with a member per record)"})
	}
}

// wholeFileGzip counts the damage reports of files compressed whole.
func (j *Job) wholeFileGzip() int64 {
	var n int64
	for _, d := range j.damaged {
		if strings.Contains(d, "recompressed with one member per record") {
			n++
		}
	}
	return n
}

// lineScanner reads a work file of lines sorted on file and offset, for a
// join with a manifest in the same order.
type lineScanner struct {
	f    *os.File
	sc   *bufio.Scanner
	cur  []string
	done bool
}

func newLineScanner(name string) (*lineScanner, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	s := &lineScanner{f: f, sc: sc}
	s.advance()
	return s, nil
}

func (s *lineScanner) advance() {
	if s.sc.Scan() {
		s.cur = strings.Split(s.sc.Text(), " ")
		return
	}
	s.cur, s.done = nil, true
}

// find returns the fields of the line of file and offset, if there is one,
// skipping the lines before it.
func (s *lineScanner) find(file string, offset int64) []string {
	for !s.done {
		if len(s.cur) < 2 {
			s.advance()
			continue
		}
		off, _ := strconv.ParseInt(s.cur[1], 10, 64)
		c := manifest.ByFile.Compare(&manifest.Line{File: s.cur[0], Offset: off}, &manifest.Line{File: file, Offset: offset})
		switch {
		case c < 0:
			s.advance()
		case c == 0:
			f := s.cur
			s.advance()
			return f
		default:
			return nil
		}
	}
	return nil
}

func (s *lineScanner) close() { s.f.Close() }

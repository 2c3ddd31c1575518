package dedup

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
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
		if j.runDir != "" {
			// The collection's records, every run's: the fixity list and
			// the dependencies of the revisits there are now. Records
			// that cannot be made (a damaged rewrite log) are named
			// among the exit reasons; what the run did stands.
			if err := j.collectionRecords(ctx); err != nil {
				if ctx.Err() != nil {
					return "", err
				}
				j.recordsProblem = err.Error()
				j.show.Print("warcdedup: error: the work directory's fixity.tsv and deps.tsv: %v", err)
			}
		}
	}
	a.fill()
	return fmt.Sprintf("%s duplicates, %s saved", progress.Count(a.rep.Totals.Duplicates), progress.Bytes(a.rep.Totals.BytesSaved)), nil
}

// account builds a job's report from its work files.
type account struct {
	j   *Job
	rep *report.Report

	mime, host, month, size *report.Breakdown
	same, cross             report.Bucket
	arc, refusedDups, kept  report.Reason
	refusedFiles            map[string]bool
	largest                 *report.Largest
	replaced                int64 // files the log says were replaced
}

func newAccount(j *Job) *account {
	a := &account{j: j, rep: j.rep, refusedFiles: map[string]bool{},
		mime: report.NewBreakdown(10000), host: report.NewBreakdown(100000), month: report.NewBreakdown(1 << 20), size: report.NewBreakdown(64),
		largest: report.NewLargest(20)}
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
	numbered, err := os.Open(j.wd.File(workdir.ByFileFile))
	if err != nil {
		return err
	}
	defer numbered.Close()
	facts, err := newLineScanner(j.wd.File(workdir.FactsByFile))
	if err != nil {
		return err
	}
	defer facts.close()
	saved, err := newLineScanner(j.wd.File(workdir.SavedFile))
	if err != nil {
		return err
	}
	defer saved.close()
	in := manifest.NewReader(numbered, j.wd.File(workdir.ByFileFile))
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
		a.mime.Add(mime, b)
		a.host.Add(report.HostOf(l.URI), b)
		a.month.Add(monthOf(l.Date), b)
		a.size.Add(report.SizeClass(l.Length), b)
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

// monthOf is the YYYY-MM of a WARC date.
func monthOf(date string) string {
	if len(date) >= 7 && date[4] == '-' {
		return date[:7]
	}
	return "(unknown)"
}

// classes streams the numbered manifest, digest by digest, for the largest
// classes and the dependencies between files.
func (a *account) classes(ctx context.Context) error {
	j := a.j
	f, err := os.Open(j.wd.File(workdir.NumberedFile))
	if err != nil {
		return err
	}
	defer f.Close()
	// Each duplicate and the file of its original, joined below with the
	// revisits written.
	pairsName := j.wd.File(workdir.TmpDir + "/pairs")
	pairs, err := os.Create(pairsName)
	if err != nil {
		return err
	}
	defer os.Remove(pairsName)
	pw := bufio.NewWriter(pairs)
	origFile := map[int]string{}
	in := manifest.NewReader(f, j.wd.File(workdir.NumberedFile))
	cur := map[int]*report.Class{}
	digest := ""
	flush := func() {
		for _, c := range cur {
			if c.DuplicateBytes > 0 {
				a.largest.Offer(*c)
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
	if err := (syssort.Sorter{TempDir: j.wd.File(workdir.TmpDir), Memory: j.opt.SortMemory}).Sort(ctx, manifest.ByFile.Command, []string{pairsName}, sorted); err != nil {
		return err
	}
	defer os.Remove(sorted)
	pairs, err := newLineScanner(sorted)
	if err != nil {
		return err
	}
	defer pairs.close()
	saved, err := newLineScanner(j.wd.File(workdir.SavedFile))
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
	return workdir.WriteFile(j.runFile(workdir.DepsFile), []byte(b.String()))
}

// fixity writes, from the rewrite log, one line per file this job
// replaced: its size and SHA-256 before and after (see writeFixity).
func (a *account) fixity() error {
	n, err := writeFixity(a.j.wd.File(workdir.LogFile), a.j.state.LogSizeAtHash, a.j.runFile(workdir.FixityFile))
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
		return 0, workdir.WriteFile(out, []byte(header))
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
	return int64(len(order)), workdir.WriteFile(out, []byte(b.String()))
}

// fill sets the report's figures from the stages' statistics.
func (a *account) fill() {
	j, rep := a.j, a.rep
	t := &rep.Totals
	t.Files = j.hashed.Files + j.hashed.FilesFailed
	t.FilesInProgress = int64(len(j.inProgress))
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
	rep.ByMIME = a.mime.Top(12)
	rep.ByHost = a.host.Top(15)
	rep.ByMonth = a.month.Ordered(nil)
	rep.BySize = a.size.Ordered(report.SizeLabels())
	rep.SameURL, rep.CrossURL = a.same, a.cross
	rep.SameURL.Label, rep.CrossURL.Label = "same URL (re-fetched)", "another URL"
	rep.LargestClasses = a.largest.Classes()
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

package stage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"warcdedup/archname"
	"warcdedup/internal/progress"
	"warcdedup/internal/sortedlines"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/verify"
	"warcdedup/workdir"
)

// Account adds up what a job did, or would do, into its report: the
// totals, the breakdowns by MIME type, host, capture month and payload
// size, same-URL against cross-URL duplicates, the largest classes, what
// was not deduplicated and why; and it writes the dependencies of the
// revisits the job wrote (deps.tsv). Its inputs are the stages' work
// files and results: warcdedup run's own, or those a cluster job's
// account merged from its hosts and ranges.
type Account struct {
	ByFile      string // the numbered manifest on file (workdir.ByFileFile)
	FactsByFile string // the facts on file
	Saved       string // saved.tsv
	Numbered    string // the numbered manifest on digest
	Deps        string // written: the files each file's new revisits need
	// Sorter sorts the account's own work file, in its TempDir.
	Sorter syssort.Sorter

	DryRun   bool
	Policy   policy.Policy
	Hashed   HashResult
	Resolved ResolveResult
	Rewrote  RewriteResult
	Verified verify.Stats
	// FilesReplaced is how many files the job replaced across its runs
	// (the lines of its fixity list: an interrupted run replaced some);
	// a dry run's files are those its rewrite would replace.
	FilesReplaced   int64
	FilesInProgress int64 // files passed over, still being written

	// Report gets the figures; its title, mode, collections and stages
	// are the caller's.
	Report *report.Report
}

// Run fills the report and writes deps.tsv.
func (a *Account) Run(ctx context.Context) error {
	t, err := a.Tally(ctx)
	if err != nil {
		return err
	}
	t.Fill(a.Verified)
	return nil
}

// Tally reads the stages' work files and writes deps.tsv: all of the
// account but its report, which Fill writes. It reads nothing of the
// verification, so that a job may run it while it verifies; it writes
// nothing of the Report.
func (a *Account) Tally(ctx context.Context) (*Tally, error) {
	t := newTally(a)
	if err := t.records(); err != nil {
		return nil, err
	}
	if err := t.classes(ctx); err != nil {
		return nil, err
	}
	return &Tally{t: t}, nil
}

// Tally is what an Account read, to be written into its report.
type Tally struct{ t *tally }

// Fill writes the account into its Report, with the figures of the
// verification.
func (t *Tally) Fill(verified verify.Stats) {
	t.t.acc.Verified = verified
	t.t.fill()
}

// Note says what the account found, for the report's stage.
func (a *Account) Note() string {
	return fmt.Sprintf("%s duplicates, %s saved", progress.Count(a.Report.Totals.Duplicates), progress.Bytes(a.Report.Totals.BytesSaved))
}

// tally is an Account at work.
type tally struct {
	acc *Account
	rep *report.Report

	mime, host, month, size *report.Breakdown
	same, cross             report.Bucket
	arc, refusedDups, kept  report.Reason
	apart                   report.Reason // copy 1 of a class beyond a digest's first
	refusedFiles            map[string]bool
	largest                 *report.Largest
	// totals are the record counts records adds up, into the report's
	// Totals once filled.
	totals report.Totals
}

func newTally(acc *Account) *tally {
	a := &tally{acc: acc, rep: acc.Report, refusedFiles: map[string]bool{},
		mime: report.NewBreakdown(10000), host: report.NewBreakdown(100000), month: report.NewBreakdown(1 << 20), size: report.NewBreakdown(64),
		largest: report.NewLargest(20)}
	for _, r := range acc.Rewrote.Refused {
		// "FILE: left untouched: ..." or "FILE: offset N: left untouched: ..."
		if f, _, ok := strings.Cut(r, ": "); ok {
			a.refusedFiles[f] = true
		}
	}
	return a
}

// records streams the numbered manifest, the facts and the revisits
// written, all in file order, record by record.
func (a *tally) records() error {
	numbered, err := os.Open(a.acc.ByFile)
	if err != nil {
		return err
	}
	defer numbered.Close()
	facts, err := sortedlines.Open(a.acc.FactsByFile)
	if err != nil {
		return err
	}
	defer facts.Close()
	saved, err := OpenSaved(a.acc.Saved)
	if err != nil {
		return err
	}
	defer saved.Close()
	in := manifest.NewReader(numbered, a.acc.ByFile)
	t := &a.totals
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
		if f := facts.Find(l.File, l.Offset); f != nil && len(f) >= 4 {
			mime = f[3]
		}
		revisitLen, err := saved.Find(l.File, l.Offset)
		if err != nil {
			return err
		}
		b := bucketOf(&l, revisitLen)
		a.mime.Add(mime, b)
		a.host.Add(report.HostOf(l.URI), b)
		a.month.Add(monthOf(l.Date), b)
		a.size.Add(report.SizeClass(l.Length), b)
		if !l.IsDuplicate() {
			if l.Fields >= 10 && l.Copy == 1 && l.Class > 0 {
				a.apart.Records++
				a.apart.Bytes += l.Length
			}
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
			t.RevisitedBytes += l.Length
			t.BytesSaved += l.Length - revisitLen
		case archname.IsARC(l.File):
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
	// Facts that could not be read to their end ended the join early:
	// the records after would be counted under no MIME type.
	if err := facts.Err(); err != nil {
		return fmt.Errorf("%s: %w", a.acc.FactsByFile, err)
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

// monthOf is the YYYY-MM of a WARC date.
func monthOf(date string) string {
	if len(date) >= 7 && date[4] == '-' {
		return date[:7]
	}
	return "(unknown)"
}

// classes streams the numbered manifest, digest by digest, for the largest
// classes and the dependencies between files.
func (a *tally) classes(ctx context.Context) error {
	f, err := os.Open(a.acc.Numbered)
	if err != nil {
		return err
	}
	defer f.Close()
	// Each duplicate and the file of its original, joined below with the
	// revisits written.
	if err := os.MkdirAll(a.acc.Sorter.TempDir, 0o755); err != nil {
		return err
	}
	pairsName := filepath.Join(a.acc.Sorter.TempDir, "pairs")
	pairs, err := os.Create(pairsName)
	if err != nil {
		return err
	}
	defer os.Remove(pairsName)
	pw := bufio.NewWriter(pairs)
	origFile := map[int]string{}
	in := manifest.NewReader(f, a.acc.Numbered)
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
		c := cur[l.Class]
		if c == nil {
			c = &report.Class{Digest: l.Digest, Ext: l.Class, URI: l.URI, Date: l.Date}
			cur[l.Class] = c
			origFile[l.Class] = l.File
		}
		c.Copies++
		c.Bytes += l.Length
		if l.IsDuplicate() {
			c.DuplicateBytes += l.Length
			fmt.Fprintf(pw, "%s %d %s\n", l.File, l.Offset, origFile[l.Class])
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
func (a *tally) deps(ctx context.Context, pairsName string) error {
	sorted := pairsName + "-by-file"
	if err := a.acc.Sorter.Sort(ctx, manifest.ByFile.Command, []string{pairsName}, sorted); err != nil {
		return err
	}
	defer os.Remove(sorted)
	pairs, err := sortedlines.Open(sorted)
	if err != nil {
		return err
	}
	defer pairs.Close()
	saved, err := OpenSaved(a.acc.Saved)
	if err != nil {
		return err
	}
	defer saved.Close()
	counts := DepsCounter{Sorter: a.acc.Sorter}
	for {
		s, err := saved.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if p := pairs.Find(s.File, s.Offset); len(p) >= 3 {
			if err := counts.Add(p[0], p[2], 1); err != nil {
				return err
			}
		}
	}
	// Pairs that could not be read to their end ended the join early:
	// the revisits after would be left out of deps.tsv.
	if err := pairs.Err(); err != nil {
		return fmt.Errorf("%s: %w", sorted, err)
	}
	return counts.Write(ctx, a.acc.Deps)
}

// WriteDeps writes a dependency list (deps.tsv), whole or not at all:
// for each file and each file holding originals its revisits need, how
// many revisits ("FILE<tab>ORIGINAL-FILE<tab>REVISITS", names as
// manifest field 1, sorted), and a comment line counting the revisits
// that refer to no record of the collection when there are any. Every
// deps.tsv, a run's or the work directory's, is written here.
func WriteDeps(out string, counts map[[2]string]int64, unresolved int64) error {
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
	b.WriteString(DepsHeader)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\t%s\t%d\n", k[0], k[1], counts[k])
	}
	if unresolved > 0 {
		fmt.Fprintf(&b, "# %d revisits refer to no record of the collection\n", unresolved)
	}
	return workdir.WriteFile(out, []byte(b.String()))
}

// DepsHeader starts every dependency list.
const DepsHeader = "# file\toriginal-file\trevisits\n"

// FixityHeader starts every fixity list.
const FixityHeader = "# file\told-size\told-sum\tnew-size\tnew-sum\n"

// WriteFixity writes the fixity list of the files the rewrite log's
// entries from byte offset from on replaced (a job's runs, or an undo's):
// each file's size and SHA-256 before the first of those runs and after
// the last. It returns how many files it lists.
func WriteFixity(logName string, from int64, out string) (int64, error) {
	header := FixityHeader
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
		if fx.NewSum == "-" {
			return nil
		}
		if prev, ok := files[fx.File]; ok {
			prev.NewSize, prev.NewSum = fx.NewSize, fx.NewSum
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
		fmt.Fprintf(&b, "%s\t%d\t%s\t%d\t%s\n", manifest.EscapeFile(name), fx.OldSize, fx.OldSum, fx.NewSize, fx.NewSum)
	}
	return int64(len(order)), workdir.WriteFile(out, []byte(b.String()))
}

// fill sets the report's figures from the stages' statistics. Every
// duplicate is counted once: as a revisit written, or as kept for one
// reason (in an ARC file, in a file refused, or left by the rewrite: its
// revisit would not be smaller, or a revisit already there refers to
// it), so that the reasons and the revisits add up to the duplicates.
func (a *tally) fill() {
	acc, rep := a.acc, a.rep
	t := &rep.Totals
	c := &a.totals
	t.Revisits += c.Revisits
	t.Records += c.Records
	t.RecordBytes += c.RecordBytes
	t.Duplicates += c.Duplicates
	t.DuplicateBytes += c.DuplicateBytes
	t.RevisitsWritten += c.RevisitsWritten
	t.RevisitedBytes += c.RevisitedBytes
	t.BytesSaved += c.BytesSaved
	t.Files = acc.Hashed.Stats.Files + acc.Hashed.Stats.FilesFailed
	t.FilesInProgress = acc.FilesInProgress
	t.StoredBytes = acc.Hashed.Stats.Bytes
	t.FilesRewritten = acc.Rewrote.Stats.Rewritten
	if !acc.DryRun {
		// Across the runs of the job (an interrupted one replaced some).
		t.FilesRewritten = acc.FilesReplaced
	}
	t.FilesRefused = acc.Rewrote.Stats.Refused
	t.StaleLines = acc.Resolved.Stats.Stale
	t.DamagedRecords = acc.Hashed.DamagedRecords()
	t.UnreadableFiles = acc.Hashed.UnreadableFiles()
	t.Violations = acc.Verified.Violations
	rep.ByMIME = a.mime.Top(12)
	rep.ByHost = a.host.Top(15)
	rep.ByMonth = a.month.Ordered(nil)
	rep.BySize = a.size.Ordered(report.SizeLabels())
	rep.SameURL, rep.CrossURL = a.same, a.cross
	rep.SameURL.Label, rep.CrossURL.Label = "same URL (re-fetched)", "another URL"
	rep.LargestClasses = a.largest.Classes()
	rep.NotDeduplicable = nil
	if a.arc.Records > 0 {
		a.arc.Why = "in an ARC file: ARC records have no revisit form (convert it to WARC with warcdedup run --convert-arc, or arc2warc first)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.arc)
	}
	if a.kept.Records > 0 {
		a.kept.Why = "its revisit would not be smaller than the record (short payloads)"
		if n := acc.Rewrote.Stats.Protected; n > 0 {
			a.kept.Why = fmt.Sprintf("its revisit would not be smaller than the record (short payloads), or (%s) a revisit already in the collection refers to it", progress.Count(n))
		}
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.kept)
	}
	if a.refusedDups.Records > 0 {
		a.refusedDups.Why = "in a file that was refused and left untouched (see the exit reasons)"
		rep.NotDeduplicable = append(rep.NotDeduplicable, a.refusedDups)
	}
	t.ServedApart, t.ServedApartBytes = a.apart.Records, a.apart.Bytes
	if a.apart.Records > 0 {
		split, coll := acc.Resolved.Stats.Split, acc.Resolved.Stats.Collisions
		switch {
		case split == 0 && coll > 0:
			rep.ServedApartWhy = "in other bytes under the same digest (a hash collision): each is the original of a class of its own"
		default:
			rep.ServedApartWhy = fmt.Sprintf("%s the earlier captures of the same bytes: each is the original of a class of its own under the %s policy", acc.Policy.Apart(), acc.Policy)
			if coll > 0 {
				rep.ServedApartWhy += fmt.Sprintf(" (%s of them other bytes under the same digest: a hash collision)", progress.Count(coll))
			}
		}
	}
	rep.FilesNotDeduplicated = slices.DeleteFunc(rep.FilesNotDeduplicated, func(g report.FileGroup) bool { return g.Read })
	if n := len(acc.Hashed.WholeGzip); n > 0 {
		rep.FilesNotDeduplicated = append(rep.FilesNotDeduplicated, report.FileGroup{Kind: "file compressed whole", Kinds: "files compressed whole",
			Why: WholeGzipWhy, Read: true, Files: int64(n), Bytes: acc.Hashed.WholeGzipBytes})
	}
}

package dedup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/internal/sortedlines"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// The records a work directory keeps of its collection cover every run:
// fixity.tsv every file the toolchain ever replaced there (its size and
// SHA-256 before the first replacement and now), deps.tsv the files the
// revisits in the collection now need (whichever run wrote them, undos
// taken into account), report.html and stats.json the last run's report
// with the list of every run and what they did together. Each run keeps
// its own beside them, in runs/TIME-MODE/: its report, and the fixity
// list and dependencies of what its job wrote.
//
// The rewrite log lists every record every run rewrote and every undo
// restored, so the fixity list and the totals are folded from it; the
// dependencies are those of the revisits a listing of the collection
// finds now (after.manifest after a run, the undo's listing less what it
// restored after an undo), each resolved by its Refers-To URI and date to
// the response that is its original: what replay needs, of this
// toolchain's revisits and of any other tool's.

// newRunDir makes the directory of a run's own records, named after the
// time it started and what it is ("2024-06-05T102231Z-run"), and returns
// its path relative to the work directory.
func newRunDir(w *workdir.Dir, start time.Time, mode string) (string, error) {
	base := start.UTC().Format(runDirLayout) + "-" + strings.ReplaceAll(mode, " ", "-")
	if err := os.MkdirAll(w.File(workdir.RunsDir), 0o755); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		rel := filepath.Join(workdir.RunsDir, base)
		if i > 1 {
			rel += "." + strconv.Itoa(i)
		}
		err := os.Mkdir(w.File(rel), 0o755)
		if err == nil {
			return rel, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", err
		}
	}
}

// runFile is where a file of the run's own records goes: in its run
// directory.
func (r *run) runFile(name string) string {
	return filepath.Join(r.wd.File(r.runDir), name)
}

// collectionRecords writes the work directory's fixity list and
// dependencies of the collection as every run has left it.
func (r *run) collectionRecords(ctx context.Context) error {
	if _, err := updateRecords(ctx, r.wd); err != nil {
		return err
	}
	var external []string
	if r.crawl != nil {
		external = append(external, r.wd.File(workdir.ResolvedOriginalsFile))
	}
	return writeDeps(ctx, r.wd, r.wd.File(workdir.DepsFile), depsListing{names: []string{r.wd.File(workdir.AfterFile)}, external: external})
}

// foldState is how far the work directory's fixity list and totals have
// taken the rewrite log in: each run folds only the entries appended
// since, so that their cost follows the run, not the years of runs
// before it.
type foldState struct {
	LogSize int64 `json:"log_size"`
	// Tail is the SHA-256 of the log's last bytes before LogSize: a log
	// that is no longer the one folded (cut, replaced) is folded anew.
	Tail       string            `json:"tail_sha256"`
	Collection report.Collection `json:"collection"`
}

// foldFile keeps the foldState.
const foldFile = "records.json"

// foldTail is how many bytes before LogSize Tail covers.
const foldTail = 4096

// updateRecords folds the rewrite log's entries appended since the last
// fold into the work directory's fixity list (each file's size and
// SHA-256 before the first replacement and after the last) and the
// totals of every run and undo, and returns the totals. The system sort
// gathers each file's lines and a merge adds them to the list, so that
// memory does not grow with the files of years of runs. Killed between
// the list and the state, the next fold takes the same entries again,
// which leaves the list as it is.
func updateRecords(ctx context.Context, wd *workdir.Dir) (*report.Collection, error) {
	st, _ := workdir.ReadJSON[foldState](wd.File(foldFile))
	logName := wd.File(workdir.LogFile)
	f, err := os.Open(logName)
	if errors.Is(err, os.ErrNotExist) {
		st = foldState{}
		if err := workdir.WriteFile(wd.File(workdir.FixityFile), []byte(stage.FixityHeader)); err != nil {
			return nil, err
		}
		return &st.Collection, workdir.WriteJSON(wd.File(foldFile), st)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	end, err := completeLines(f)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(wd.File(workdir.FixityFile)); err != nil || end < st.LogSize || tailSum(f, st.LogSize) != st.Tail {
		st = foldState{} // fold the whole log anew
	}
	lines := wd.File(workdir.TmpDir + "/fixity-lines")
	sorted := lines + "-sorted"
	defer os.Remove(lines)
	defer os.Remove(sorted)
	if err := foldSection(io.NewSectionReader(f, st.LogSize, end-st.LogSize), logName, lines, &st.Collection); err != nil {
		return nil, err
	}
	// "FILE SEQ ...": by file, then in the log's order, the keys of
	// manifest.ByFile (a name, then a number).
	if err := workSorter(wd).Sort(ctx, manifest.ByFile.Command, []string{lines}, sorted); err != nil {
		return nil, err
	}
	old := ""
	if st.LogSize > 0 {
		old = wd.File(workdir.FixityFile)
	}
	if st.Collection.FilesReplaced, err = mergeFixity(old, sorted, wd.File(workdir.FixityFile)); err != nil {
		return nil, err
	}
	st.LogSize, st.Tail = end, tailSum(f, end)
	return &st.Collection, workdir.WriteJSON(wd.File(foldFile), st)
}

// completeLines is the size of the log up to the end of its last whole
// line: one being appended meanwhile is folded next time.
func completeLines(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// tailSum is the SHA-256 of the foldTail bytes of f before end.
func tailSum(f *os.File, end int64) string {
	from := max(end-foldTail, 0)
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, from, end-from)); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// foldSection adds a section of the log's entries to the totals and
// writes its fixity lines to the file lines: "FILE SEQ OLD-SIZE OLD-SUM
// NEW-SIZE NEW-SUM", SEQ their order.
func foldSection(r io.Reader, logName, lines string, c *report.Collection) error {
	lf, err := os.Create(lines)
	if err != nil {
		return err
	}
	defer lf.Close()
	w := bufio.NewWriterSize(lf, 256<<10)
	var seq int64
	lr := rewritelog.NewReader(bufio.NewReaderSize(r, 256<<10), logName)
	lr.Fixity = func(fx rewritelog.Fixity) error {
		if fx.NewSum == "-" {
			return nil
		}
		seq++
		_, err := fmt.Fprintf(w, "%s %d %d %s %d %s\n", manifest.EscapeFile(fx.File), seq, fx.OldSize, fx.OldSum, fx.NewSize, fx.NewSum)
		return err
	}
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch e.Kind {
		case rewritelog.Revisit:
			c.RevisitsWritten++
			c.BytesSaved += e.OldLength - e.NewLength
		case rewritelog.Restored:
			c.RecordsRestored++
			c.BytesSaved -= e.NewLength - e.OldLength
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return lf.Close()
}

// mergeFixity writes to out the fixity list old (none for "") with the
// sorted fixity lines of newer replacements: each file's size and
// SHA-256 before its first replacement, after its last. It returns how
// many files the list holds.
func mergeFixity(old, sorted, out string) (int64, error) {
	var prev *sortedlines.Scanner
	if old != "" {
		var err error
		if prev, err = sortedlines.Open(old); err != nil {
			return 0, err
		}
		defer prev.Close()
	}
	next, err := sortedlines.Open(sorted)
	if err != nil {
		return 0, err
	}
	defer next.Close()
	o, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return 0, err
	}
	defer o.Abort()
	w := bufio.NewWriterSize(o, 256<<10)
	w.WriteString(stage.FixityHeader)
	var files int64
	emit := func(f []string) {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f[0], f[1], f[2], f[3], f[4])
		files++
	}
	// Each side's next file: the old list's line, or the newer lines of
	// one file folded (the first's old, the last's new).
	nextOld := func() []string {
		for prev != nil && !prev.Done {
			f := prev.Cur
			prev.Advance()
			if len(f) == 5 && !strings.HasPrefix(f[0], "#") {
				return f
			}
		}
		return nil
	}
	nextNew := func() []string {
		if next.Done {
			return nil
		}
		f := next.Cur
		cur := []string{f[0], f[2], f[3], f[4], f[5]}
		for next.Advance(); !next.Done && next.Cur[0] == cur[0]; next.Advance() {
			cur[3], cur[4] = next.Cur[4], next.Cur[5]
		}
		return cur
	}
	a, b := nextOld(), nextNew()
	for a != nil || b != nil {
		switch {
		case b == nil || a != nil && a[0] < b[0]:
			emit(a)
			a = nextOld()
		case a == nil || b[0] < a[0]:
			emit(b)
			b = nextNew()
		default: // replaced before and since: its first old, its last new
			emit([]string{a[0], a[1], a[2], b[3], b[4]})
			a, b = nextOld(), nextNew()
		}
	}
	// A list that could not be read to its end ended the merge early:
	// the files it still held would be left out of the list.
	if prev != nil {
		if err := prev.Err(); err != nil {
			return 0, fmt.Errorf("%s: %w", old, err)
		}
	}
	if err := next.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", sorted, err)
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	return files, o.CommitRenamed()
}

// depsListing is what the dependencies are found in: manifests of the
// collection now (responses and revisit lines), responses outside it
// that revisits may refer to (a crawl index's committed originals),
// and the revisits to leave out as restored since the listing was made.
type depsListing struct {
	names    []string
	external []string
	restored *restoredSince
}

// restoredSince names the rewrite log's entries from offset From on:
// the records they restored are revisits no more.
type restoredSince struct {
	Log  string
	From int64
}

// The kinds of capture lines writeDeps sorts: a response sorts before the
// revisits of the same URI and date that refer to it.
const (
	captureResponse = "0"
	captureRevisit  = "1"
)

// captureOrder is the order of the capture lines ("URI DATE KIND DIGEST
// FILE"): manifest.ByCapture's keys, URI and date, then the kind, so that
// a date's responses come before its revisits.
var captureOrder = &manifest.Order{Name: "URI, date, kind", Command: "LC_ALL=C sort -k1,1 -k2,2 -k3,3n"}

// workSorter sorts the work files of the records' listings in the work
// directory's temporary directory.
func workSorter(wd *workdir.Dir) syssort.Sorter {
	return syssort.Sorter{TempDir: wd.File(workdir.TmpDir), Compress: syssort.Compressor()}
}

// writeDeps writes to out, for every file, the files holding the
// originals its revisits need and how many: "file original-file count",
// sorted; a comment line counts the revisits that refer to no record of
// the collection (another tool's revisit of a record kept elsewhere). A
// revisit's original is the response with its Refers-To URI and date
// (any date for "*") and its digest; both are sorted by URI and date with
// the system sort and joined, one URI's responses in memory at a time.
func writeDeps(ctx context.Context, wd *workdir.Dir, out string, l depsListing) error {
	captures := wd.File(workdir.TmpDir + "/deps-captures")
	sorted := captures + "-sorted"
	defer os.Remove(captures)
	defer os.Remove(sorted)
	if err := l.captures(ctx, wd, captures); err != nil {
		return err
	}
	if err := workSorter(wd).Sort(ctx, captureOrder.Command, []string{captures}, sorted); err != nil {
		return err
	}
	in, err := os.Open(sorted)
	if err != nil {
		return err
	}
	defer in.Close()
	counts := &stage.DepsCounter{Sorter: workSorter(wd)}
	j := newDepsJoin(counts)
	sc := bufio.NewScanner(bufio.NewReaderSize(in, 256<<10))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), " ")
		if len(f) != 5 {
			return fmt.Errorf("%s: %q", sorted, sc.Text())
		}
		if err := j.add(f[0], f[1], f[2], f[3], f[4]); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	j.endURI()
	return counts.Write(ctx, out)
}

// captures writes the capture lines of the listing to name: "URI DATE 0
// DIGEST FILE" per response, "REFURI REFDATE 1 DIGEST FILE" per revisit
// (not restored since).
func (l depsListing) captures(ctx context.Context, wd *workdir.Dir, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 256<<10)
	var revisits *os.File // with restored: the revisits, to sort by file and drop
	var rw *bufio.Writer
	if l.restored != nil {
		if revisits, err = os.Create(name + "-revisits"); err != nil {
			return err
		}
		defer os.Remove(revisits.Name())
		defer revisits.Close()
		rw = bufio.NewWriterSize(revisits, 256<<10)
	}
	each := func(names []string, responsesOnly bool) error {
		for _, n := range names {
			if err := stage.EachLine(n, func(ln *manifest.Line) error {
				file := ln.File
				switch {
				case !ln.IsRevisit():
					_, err := fmt.Fprintf(w, "%s %s %s %s %s\n", ln.URI, ln.Date, captureResponse, ln.Digest, file)
					return err
				case responsesOnly:
				case rw != nil:
					_, err := fmt.Fprintf(rw, "%s %d %s %s %s\n", file, ln.Offset, ln.RefURI, ln.RefDate, ln.Digest)
					return err
				default:
					_, err := fmt.Fprintf(w, "%s %s %s %s %s\n", ln.RefURI, ln.RefDate, captureRevisit, ln.Digest, file)
					return err
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := each(l.names, false); err != nil {
		return err
	}
	if err := each(l.external, true); err != nil {
		return err
	}
	if rw != nil {
		if err := rw.Flush(); err != nil {
			return err
		}
		if err := l.unrestored(ctx, wd, revisits.Name(), w); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// unrestored writes the capture lines of the revisits in the file name
// ("FILE OFFSET REFURI REFDATE DIGEST") that the log's entries since
// l.restored.From did not restore.
func (l depsListing) unrestored(ctx context.Context, wd *workdir.Dir, name string, w *bufio.Writer) error {
	gone := name + "-restored"
	defer os.Remove(gone)
	if err := restoredEntries(*l.restored, gone); err != nil {
		return err
	}
	for _, n := range []string{name, gone} {
		if err := workSorter(wd).Sort(ctx, manifest.ByFile.Command, []string{n}, n+"-sorted"); err != nil {
			return err
		}
		defer os.Remove(n + "-sorted")
	}
	revs, err := sortedlines.Open(name + "-sorted")
	if err != nil {
		return err
	}
	defer revs.Close()
	restored, err := sortedlines.Open(gone + "-sorted")
	if err != nil {
		return err
	}
	defer restored.Close()
	for ; !revs.Done; revs.Advance() {
		r := revs.Cur
		if len(r) != 5 {
			return fmt.Errorf("%s: %q", name, strings.Join(r, " "))
		}
		off, _ := strconv.ParseInt(r[1], 10, 64)
		if restored.Find(r[0], off) != nil {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s %s %s %s %s\n", r[2], r[3], captureRevisit, r[4], r[0]); err != nil {
			return err
		}
	}
	// A list that could not be read to its end ended the loop (or a
	// Find) early: revisits left out, or counted though restored.
	if err := revs.Err(); err != nil {
		return fmt.Errorf("%s (sorted): %w", name, err)
	}
	if err := restored.Err(); err != nil {
		return fmt.Errorf("%s (sorted): %w", gone, err)
	}
	return nil
}

// restoredEntries writes "FILE OFFSET" of each record the log's entries
// from rs.From on restored, where it stood before (as the listing made
// then gives it).
func restoredEntries(rs restoredSince, out string) error {
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	defer o.Close()
	w := bufio.NewWriterSize(o, 256<<10)
	f, err := os.Open(rs.Log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		defer f.Close()
		r := rewritelog.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, rs.From, 1<<62), 256<<10), rs.Log)
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if e.Kind != rewritelog.Restored {
				continue
			}
			fmt.Fprintf(w, "%s %d\n", manifest.EscapeFile(e.File), e.OldOffset)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return o.Close()
}

// depsJoin joins, URI by URI, the revisits with the responses they refer
// to, counting revisits by their file and their original's. It holds the
// responses of one URI and date (a dated revisit's original is among
// those of its date, which sort just before it) and the revisits of the
// URI that name no date until a response resolves them, not the URI's
// every capture: a URI captured in every crawl of every site (a
// tracker's script, a dns: record) has millions.
type depsJoin struct {
	uri, date string
	responses []capture           // of the URI at date
	anyDate   map[[2]string]int64 // revisits naming no date, unresolved: by digest and file
	counts    *stage.DepsCounter
}

// capture is a response of the URI and date being joined.
type capture struct{ digest, file string }

func newDepsJoin(counts *stage.DepsCounter) *depsJoin {
	return &depsJoin{anyDate: map[[2]string]int64{}, counts: counts}
}

func (j *depsJoin) add(uri, date, kind, digest, file string) error {
	if uri != j.uri {
		j.endURI()
		j.uri, j.date = uri, date
	}
	if date != j.date {
		j.date, j.responses = date, j.responses[:0]
	}
	if kind == captureResponse {
		j.responses = append(j.responses, capture{digest, file})
		// The URI's revisits naming no date ("*" sorts before every
		// date) refer to its earliest response of their digest: this one,
		// if none before it was.
		for k, n := range j.anyDate {
			if sameDigest(digest, k[0]) {
				if err := j.counts.Add(k[1], file, n); err != nil {
					return err
				}
				delete(j.anyDate, k)
			}
		}
		return nil
	}
	if date == "*" {
		j.anyDate[[2]string{digest, file}]++
		return nil
	}
	for i := len(j.responses) - 1; i >= 0; i-- {
		if sameDigest(j.responses[i].digest, digest) {
			return j.counts.Add(file, j.responses[i].file, 1)
		}
	}
	j.counts.Unresolved++
	return nil
}

// endURI counts the revisits of the URI naming no date that no response
// of it resolved.
func (j *depsJoin) endURI() {
	for _, n := range j.anyDate {
		j.counts.Unresolved += n
	}
	clear(j.anyDate)
	j.responses = j.responses[:0]
}

// sameDigest reports whether a revisit's digest may be its original's: the
// same, or not comparable (none, or of another algorithm).
func sameDigest(a, b string) bool {
	if a == b || a == manifest.NoDigest || b == manifest.NoDigest {
		return true
	}
	la, _, _ := strings.Cut(a, ":")
	lb, _, _ := strings.Cut(b, ":")
	return la != lb
}

// runs reads the history of the work directory: every run directory's
// own report (stats.json) or undo (undo.json), oldest first.
func runs(wd *workdir.Dir) []report.Run {
	entries, _ := os.ReadDir(wd.File(workdir.RunsDir))
	var out []report.Run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		rel := filepath.Join(workdir.RunsDir, e.Name())
		if rep, err := readReport(filepath.Join(wd.File(rel), workdir.StatsFile)); err == nil {
			t := rep.Totals
			out = append(out, report.Run{Dir: filepath.ToSlash(rel), Started: rep.Generated, Mode: rep.Mode, Exit: rep.Exit,
				Files: t.Files, RevisitsWritten: t.RevisitsWritten, BytesSaved: t.BytesSaved, FilesRewritten: t.FilesRewritten})
			continue
		}
		if u, err := workdir.ReadJSON[undoRun](filepath.Join(wd.File(rel), workdir.UndoStatsFile)); err == nil {
			out = append(out, report.Run{Dir: filepath.ToSlash(rel), Started: runDirTime(e.Name()), Mode: "undo", Exit: u.Exit,
				Files: int64(u.Files), RecordsRestored: u.Stats.Records + u.Stats.Foreign, BytesSaved: u.Stats.BytesBefore - u.Stats.BytesAfter,
				FilesRewritten: int64(u.Stats.Restored)})
		}
	}
	slices.SortStableFunc(out, func(a, b report.Run) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

// undoRun is what the list of runs reads of an undo's result (undo.json,
// package undo's Result).
type undoRun struct {
	Files int
	Stats restore.Stats
	Exit  int
}

// runDirTime is the time a run directory's name gives (see newRunDir), or
// the zero time.
func runDirTime(name string) time.Time {
	t, _ := time.Parse(runDirLayout, name[:min(len(runDirLayout), len(name))])
	return t
}

// runDirLayout is the time at the start of a run directory's name.
const runDirLayout = "2006-01-02T150405Z"

// collectionReport writes the work directory's report: body (the last
// run's report; a dry run's only when no run has been made) with every
// run and what they did together.
func collectionReport(ctx context.Context, wd *workdir.Dir, body *report.Report) error {
	top := *body
	if body.Mode != "run" {
		if last, err := readReport(wd.File(workdir.StatsFile)); err == nil && last.Mode == "run" {
			top = *last
		}
	}
	var err error
	if top.Collection, err = updateRecords(ctx, wd); err != nil {
		return err
	}
	top.Runs = runs(wd)
	return writeReport(wd, &top)
}

// WriteUndoRecords writes an undo's fixity list (of the rewrite log from
// its size from on) into its run directory rel, and the work directory's
// fixity list and dependencies: the undo's listing of the collection
// (made before it restored) less the revisits it restored; with a
// crawl's, the index's originals it joined.
func WriteUndoRecords(ctx context.Context, wd *workdir.Dir, rel string, from int64, crawl bool) error {
	if _, err := stage.WriteFixity(wd.File(workdir.LogFile), from, filepath.Join(wd.File(rel), workdir.FixityFile)); err != nil {
		return err
	}
	if _, err := updateRecords(ctx, wd); err != nil {
		return err
	}
	if _, err := os.Stat(wd.File(workdir.UndoManifest)); err != nil {
		return nil // nothing was listed: nothing restored
	}
	l := depsListing{names: []string{wd.File(workdir.UndoManifest)}, restored: &restoredSince{Log: wd.File(workdir.LogFile), From: from}}
	if crawl {
		// A crawl's revisits may need the originals of the crawls of its
		// index, which the undo joined.
		if _, err := os.Stat(wd.File(workdir.UndoIndexOriginals)); err == nil {
			l.external = []string{wd.File(workdir.UndoIndexOriginals)}
		}
	}
	return writeDeps(ctx, wd, wd.File(workdir.DepsFile), l)
}

// NewRunDir makes the directory of a run's own records (runs/TIME-MODE)
// and returns its path relative to the work directory.
func NewRunDir(wd *workdir.Dir, start time.Time, mode string) (string, error) {
	return newRunDir(wd, start, mode)
}

// WriteCollectionReport writes the work directory's report: body with
// every run and what they did together.
func WriteCollectionReport(ctx context.Context, wd *workdir.Dir, body *report.Report) error {
	return collectionReport(ctx, wd, body)
}

package refs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/inplace"
	"warcdedup/internal/ordered"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// Rewriter rewrites the files a manifest names.
type Rewriter struct {
	Roots     []string          // directories field 1 is relative to
	Locations map[string]string // file name -> local path
	// Prefixes maps a name's first path element (a crawl of an index) to
	// the directory the rest is relative to (see source.Locator).
	Prefixes map[string]string
	// Exactly one of InPlace and OutputDir: replace each file, or write the
	// new file under OutputDir with the same relative name.
	InPlace   bool
	OutputDir string
	DryRun    bool // check and measure everything, write nothing
	// Originals says which records are kept and which responses existing
	// revisits refer to, and reads each original (in place, at the offset
	// the run's log moves it to); required.
	Originals *originals.Originals
	// Policy: a duplicate becomes a revisit only of an original with the
	// same key (policy.Replay, the zero value, by default).
	Policy policy.Policy
	// HardLinks lets a file with more than one name be rewritten in place:
	// the name given gets the new version, the others keep the old bytes
	// (and the disk space). By default such a file is refused.
	HardLinks bool
	// SHA256 makes each replacement take the new version's SHA-256 too
	// (rewritelog.Replacement.SHA256), for a crawl index's commit.
	SHA256 bool
	// WantSums, if set, makes the replacement of each file it says yes to
	// (by name) take the new version's SHA-256 and CRC-32 too
	// (rewritelog.Replacement.SHA256, CRC32), from its check's reads: a
	// WACZ member's staged copy, which its package's rebuild then need
	// not read for them (inplace.Placement.WantSums).
	WantSums func(name string) bool
	// Sections, if set, names the files that are a stretch of another
	// (WACZ members in their packages), read where they lie, each new
	// version put beside the file it is in (inplace.Placement.Sections).
	Sections func(name string) (inplace.Section, bool)
	Jobs     int // files rewritten at once; 1 if < 1
	// Refused receives each file left untouched and why; Warn other notes.
	Refused  func(error)
	Warn     func(error)
	Progress *Progress
	// Record, if set, receives each duplicate that is (or, in a dry run,
	// would be) a revisit in a file replaced or left as an earlier run left
	// it, in manifest order: its file (manifest field 1), offset and length
	// as its line gives them, and the length of its revisit. Records of
	// refused files are not given.
	Record func(file string, offset, length, revisitLength int64)
	// Container, if set, gives the WARC-Refers-To-Container of the
	// revisit of dup whose original is orig ("" for none): the WACZ
	// package of the original, when another than the duplicate's.
	Container func(dup, orig *manifest.Line) string
	// Replaced, if set, receives each file replaced, once its new version
	// is in place (see rewritelog.Replacement). It is called from the
	// workers, at once for different files.
	Replaced func(rewritelog.Replacement)
	// Apart, if set, keeps a duplicate that its original does not match
	// (ErrPayloadDiffers: a hash collision; ErrNotEquivalent: the policy
	// keeps them apart; originals.ErrOriginal: the original is gone or
	// stale) as the response it is instead of refusing its file, and
	// receives its line and why, in manifest order, once its file is
	// done (not for a refused file, which stays as it was anyway): the
	// lines a caller that numbered the copies without reading them
	// resolves again byte for byte. Nil refuses the file, as warcrefs
	// does for a manifest whose duplicates were proved.
	Apart func(l *manifest.Line, why error)

	// create makes the temporary file of a new version; tests replace it
	// to simulate failing disks.
	create func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error)
}

// Progress is updated while Run works.
type Progress struct {
	Files    atomic.Int64
	Revisits atomic.Int64
	Bytes    atomic.Int64 // bytes of input files done
}

// Stats counts what a run did.
type Stats struct {
	Lines          int64 // manifest lines read
	Files          int64 // files named by duplicate lines
	Rewritten      int64 // files replaced by (or written as) a new version
	Untouched      int64 // files with nothing left to do
	Refused        int64 // files left untouched because a check failed
	Revisits       int64 // records rewritten as revisits
	AlreadyRevisit int64 // records an earlier run already rewrote
	NotSmaller     int64 // records kept because their revisit would not be smaller
	ARC            int64 // ARC files skipped: their records have no revisit form
	Protected      int64 // records kept because an existing revisit refers to them
	Apart          int64 // with Rewriter.Apart: records kept because their original differs
	BytesBefore    int64 // size of the rewritten files before
	BytesAfter     int64 // and after
}

// Add adds o to s: the figures of runs over parts of a manifest, summed.
func (s *Stats) Add(o *Stats) {
	s.Lines += o.Lines
	s.Files += o.Files
	s.Rewritten += o.Rewritten
	s.Untouched += o.Untouched
	s.Refused += o.Refused
	s.Revisits += o.Revisits
	s.AlreadyRevisit += o.AlreadyRevisit
	s.Apart += o.Apart
	s.NotSmaller += o.NotSmaller
	s.ARC += o.ARC
	s.Protected += o.Protected
	s.BytesBefore += o.BytesBefore
	s.BytesAfter += o.BytesAfter
}

// Summary writes the end-of-run summary; a dry run says what would be.
func (s *Stats) Summary(w io.Writer, dryRun bool) {
	rewritten, written, saved := "rewritten", "written", "saved"
	if dryRun {
		rewritten, written, saved = "would be rewritten", "would be written", "would be saved"
	}
	fmt.Fprintf(w, "files: %d %s, %d untouched (nothing to do), %d refused, %d ARC files skipped\n", s.Rewritten, rewritten, s.Untouched, s.Refused, s.ARC)
	fmt.Fprintf(w, "revisits %s: %d; skipped: %d already revisits, %d not smaller as a revisit, %d referred to by existing revisits\n", written, s.Revisits, s.AlreadyRevisit, s.NotSmaller, s.Protected)
	fmt.Fprintf(w, "bytes of those files: %d before, %d after, %d %s\n", s.BytesBefore, s.BytesAfter, s.BytesBefore-s.BytesAfter, saved)
}

// task is the duplicate lines of one file.
type task struct {
	file  string
	lines chan manifest.Line
	// cut is set before lines is closed when reading the manifest stopped
	// with an error: more lines of the file may have followed, so the
	// file must not be replaced.
	cut     bool
	stats   Stats
	entries []rewritelog.Entry // of the revisits written, for the log
	records []recordResult     // for Rewriter.Record
	apart   []apartLine        // for Rewriter.Apart
	inplace.Outcome
}

// apartLine is a duplicate kept because its original differs.
type apartLine struct {
	line manifest.Line
	why  error
}

// isApart reports whether err says a duplicate's original differs from
// it (see Rewriter.Apart), not that the file or the line is wrong.
func isApart(err error) bool {
	return errors.Is(err, ErrPayloadDiffers) || errors.Is(err, ErrNotEquivalent) || errors.Is(err, originals.ErrOriginal)
}

// recordResult is a duplicate that is a revisit once the task is done:
// what Rewriter.Record gives of it besides the task's file, and no more
// (24 bytes; its whole line would be ten times that, for each revisit of
// the file held until the file is replaced).
type recordResult struct {
	offset, length, revisitLength int64
}

// Abandon finishes a task that no worker will run.
func (t *task) Abandon(err error) {
	close(t.lines)
	t.Outcome.Abandon(err)
}

// errCut is the error of a task whose lines the manifest cut short; the
// manifest's error is the one reported.
var errCut = errors.New("the manifest stopped before the file's last line")

// Run reads the manifest (10 fields, sorted by file and offset; only the
// duplicate lines, copy > 1, are rewritten: kept and revisit lines are
// ignored) and rewrites each file it names, writing the entries of every
// replaced file to log in file order (a dry run writes those it would, with
// "-" for the SHA-256 of the new versions). The error is one that stops the run
// (bad input, a file that could not be written, a failed log write); a
// refused file is reported through Refused, counted, and the run goes on.
func (r *Rewriter) Run(ctx context.Context, in *manifest.Reader, log *rewritelog.Log) (Stats, error) {
	if r.InPlace == (r.OutputDir != "") {
		return Stats{}, errors.New("give exactly one of in-place or an output directory")
	}
	if r.Originals == nil {
		return Stats{}, errors.New("no originals manifest: a duplicate becomes a revisit only of a checked original")
	}
	if log == nil {
		log = rewritelog.NewLog(io.Discard)
	}
	// Originals in files this run, or an earlier one the log records,
	// replaced in place moved: the log says where to. A run into an
	// output directory leaves them where they are.
	var moves originals.Mover
	if r.InPlace {
		moves = log
	}
	progress := r.Progress
	if progress == nil {
		progress = new(Progress)
	}
	// The files originals are read from stay open for the run: each is
	// closed (Originals.Lock) before this run replaces it.
	defer r.Originals.KeepOpen()()
	in.RequireFields(10)
	in.RequireOrder(manifest.ByFile)
	log.StartRun(time.Now())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(r.Jobs, 1)
	// jobs files are walked at once (their duplicates examined, their
	// new versions written); a file walked is then checked and put in
	// place (synced, read back, renamed, its cache entry derived) while
	// its walk, and its examiners, go to the next file: twice as many
	// workers as walks, so that no core waits on a sync or a read-back's
	// serial tail.
	walks := make(chan *walk, jobs)
	for range jobs {
		walks <- &walk{}
	}
	q := ordered.New[*task](4 * jobs)
	var readErr error
	var lines int64 // written by dispatch, read after it ends
	go func() {
		defer q.Close()
		readErr = r.dispatch(ctx, in, q, &lines)
	}()
	files := inplace.NewFiles()
	var total Stats
	fatal := inplace.Drive(q, cancel, 2*jobs, log, func() func(*task) error {
		w := &worker{r: r, log: log, moves: moves, progress: progress, files: files, walks: walks}
		return func(t *task) error {
			err := w.rewrite(ctx, t)
			for range t.lines {
			}
			progress.Files.Add(1)
			return err
		}
	}, func(t *task) error {
		total.Add(&t.stats)
		switch {
		case t.Err == errCut:
			return nil // readErr says why
		case t.Err != nil:
			return inplace.RefusedOr(t.Err, r.Refused)
		}
		if r.Record != nil {
			for _, rr := range t.records {
				r.Record(t.file, rr.offset, rr.length, rr.revisitLength)
			}
		}
		if r.Apart != nil {
			for i := range t.apart {
				r.Apart(&t.apart[i].line, t.apart[i].why)
			}
		}
		return nil
	})
	total.Lines = lines
	if readErr != nil && (fatal == nil || errors.Is(fatal, errCut) || errors.Is(fatal, context.Canceled)) {
		// The manifest's error stopped the run: its cut task, and those
		// the stop cancelled, say only that.
		fatal = readErr
	}
	return total, fatal
}

// dispatch groups the duplicate lines by file and hands out one task per
// file, streaming its lines.
func (r *Rewriter) dispatch(ctx context.Context, in *manifest.Reader, q *ordered.Queue[*task], lines *int64) (err error) {
	var cur *task
	defer func() {
		if cur != nil {
			cur.cut = err != nil
			close(cur.lines)
		}
	}()
	for {
		l, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		*lines++
		if !l.IsDuplicate() {
			continue
		}
		if cur == nil || cur.file != l.File {
			if cur != nil {
				close(cur.lines)
				cur = nil // closed: the deferred close must not close it again
			}
			t := &task{file: l.File, lines: make(chan manifest.Line, 1024), Outcome: inplace.NewOutcome()}
			if err := q.Add(ctx, t); err != nil {
				return err
			}
			cur = t
		}
		select {
		case cur.lines <- l:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// worker rewrites files one at a time, keeping its examiners.
type worker struct {
	r        *Rewriter
	log      *rewritelog.Log
	moves    originals.Mover // the log, in place
	progress *Progress
	files    *inplace.Files
	// walks holds the walks not in use, the run's Jobs in all; walk is
	// the worker's while it walks a file.
	walks chan *walk
	walk  *walk
	own   *examiner // the writer's own, for a record examined again
}

// walk is what a file's walk uses, kept from one file to the next: the
// examiners of the records ahead of the writer, each with its readers,
// hashes and gzip writer.
type walk struct {
	ahead []*examiner
}

// placement is where the files to rewrite are and where their new
// versions go.
func (r *Rewriter) placement(files *inplace.Files) *inplace.Placement {
	return &inplace.Placement{Locator: &source.Locator{Roots: r.Roots, Locations: r.Locations, Prefixes: r.Prefixes}, InPlace: r.InPlace,
		OutputDir: r.OutputDir, DryRun: r.DryRun, HardLinks: r.HardLinks, SHA256: r.SHA256, WantSums: r.WantSums, Sections: r.Sections, Create: r.create, Files: files, Warn: r.Warn}
}

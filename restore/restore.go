// Package restore is undo: it turns the revisits a deduplication wrote
// back into the records they replaced, in place (package inplace), each
// payload taken from the original its revisit refers to (package
// originals) by the rule of package revisit, each file's restored records
// logged (package rewritelog); it then checks what it restored against the
// log (CheckRestored). It also says what undo would write for one revisit
// without writing it (PreviewUndo, for warcdedup show).
package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
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

// Restorer undoes deduplication: it turns revisits back into the records
// they replaced, taking each payload from the original the revisit refers
// to, in place and as safely as the rewrite writes revisits (each file
// replaced only by a checked, complete new version, its entries logged).
//
// A revisit this toolchain wrote comes back byte for byte as the record it
// replaced: its header by the rule of revisit.Restore, or as the revisit
// kept it (revisit.Kept). In a .warc.gz file it gets a gzip member of its
// own: the member it had, bit for bit, when the log describes it and zlib
// makes it again, else one compressed afresh (see MemberStats). With All,
// other tools' revisits of the identical-payload-digest profile are made
// whole records too, by the same rule: a complete, self-contained copy of
// the crawl.
type Restorer struct {
	Roots     []string          // directories the file names are relative to
	Locations map[string]string // file name -> local path
	Prefixes  map[string]string // crawl name -> its directory (see source.Locator)
	// Captures is a manifest of the collection as it is now (warcsum's),
	// sorted on URI and date (manifest.CaptureKey): where the original a
	// revisit names by its WARC-Refers-To-Target-URI and -Date is.
	Captures *manifest.Table
	// Originals reads and checks each original, at the offset of its line
	// moved by the run's log from the size given to its Since on. Its tables,
	// sorted on digest, find the original of a revisit that names none
	// (some tools write only the digest): optional.
	Originals *originals.Originals
	// Written is the rewrite log: the revisits this toolchain wrote and
	// no run undid since. Only those are restored, unless All.
	Written *rewritelog.Moves
	// WrittenFor, if set, takes Written's place: the log's entries of
	// each file (escaped as manifest field 1), asked for once a file, in
	// the order of the files Run is given. With the log sorted on file
	// (rewritelog.ByFile.For) and the files in the same order, it is a
	// merge join: a file's entries are held while it is restored, never
	// the whole log's.
	WrittenFor func(file string) (*rewritelog.Moves, error)
	// All restores every revisit of the identical-payload-digest profile
	// whose original is found, whoever wrote it.
	All bool
	// Only, if set, restricts the restore to the revisits whose
	// Refers-To-Target-URI and -Date (as manifest fields) it accepts: the
	// revisits of the records of a crawl being removed.
	Only func(refURI, refDate string) bool
	// Retarget, if set, names for a revisit's original another response
	// of its payload that can take the original's place: the revisit is
	// then re-pointed to it (its Refers-To fields rewritten) instead of
	// restored, once the two payloads compared equal byte for byte and
	// replay alike under Policy. revisitDate is the revisit's WARC-Date
	// (a capture after it must not be named).
	Retarget  func(original *manifest.Line, revisitDate string) (manifest.Line, bool)
	Policy    policy.Policy
	HardLinks bool // replace files with several names (see inplace.Placement)
	Jobs      int  // files restored at once; 1 if < 1
	// Refused receives each file left untouched and why; Warn other notes
	// (each revisit left as it is, and why).
	Refused func(error)
	Warn    func(error)
	// Restored, if set, receives each file replaced, once its entries
	// are logged, in the order of the files.
	Restored func(RestoredFile)
	Progress *Progress

	create func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error)
}

// Progress is updated while Run works.
type Progress struct {
	Files atomic.Int64
	Bytes atomic.Int64 // bytes of the files done
}

// Stats counts what a restore did.
type Stats struct {
	Files     int64 // files read
	Restored  int64 // files replaced by their restored version
	Untouched int64 // files with nothing to restore
	Refused   int64 // files left untouched because a check failed
	Records   int64 // revisits this toolchain wrote, restored
	Foreign   int64 // other tools' revisits made whole (All)
	Left      int64 // revisits left as they are (see Warn)
	Repointed int64 // revisits re-pointed to another original (Retarget)
	// Of Records, Exact were restored by the rule alone, Kept from what
	// their revisit kept of them (see revisit.Kept).
	Exact, Kept             int64
	BytesBefore, BytesAfter int64 // of the files replaced
	// Members: how the gzip members of the records restored (Records and
	// Foreign) in .gz files were written.
	Members MemberStats
}

func (s *Stats) add(o *Stats) {
	s.Files += o.Files
	s.Restored += o.Restored
	s.Untouched += o.Untouched
	s.Refused += o.Refused
	s.Records += o.Records
	s.Foreign += o.Foreign
	s.Left += o.Left
	s.Repointed += o.Repointed
	s.Exact += o.Exact
	s.Kept += o.Kept
	s.BytesBefore += o.BytesBefore
	s.BytesAfter += o.BytesAfter
	s.Members.add(&o.Members)
}

// Summary writes the end-of-restore summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "files: %d restored, %d untouched (nothing to restore), %d refused\n", s.Restored, s.Untouched, s.Refused)
	fmt.Fprintf(w, "records restored: %d revisits this toolchain wrote (%d by the rule alone, %d from what the revisit kept), %d other tools' revisits made whole; %d revisits left as they are\n",
		s.Records, s.Exact, s.Kept, s.Foreign, s.Left)
	if m := s.Members; m.Rebuilt+m.Recompressed() > 0 {
		fmt.Fprintf(w, "gzip members of those records: %d rebuilt bit for bit, %d compressed afresh", m.Rebuilt, m.Recompressed())
		if m.Recompressed() > 0 {
			fmt.Fprintf(w, " (%s)", m.Reasons())
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "bytes of those files: %d before, %d after, %d more\n", s.BytesBefore, s.BytesAfter, s.BytesAfter-s.BytesBefore)
}

// restoreTask is one file to restore.
type restoreTask struct {
	file    string // escaped as manifest field 1
	stats   Stats
	entries []rewritelog.Entry // of the records restored, for the log
	// written is the log's entries of the file (Written, or of WrittenFor).
	written *rewritelog.Moves
	inplace.Outcome
}

// Abandon finishes a task that no worker will run.

// Files returns the files (escaped as manifest field 1) in which the log
// has revisits that no run undid, in the log's order. A file whose entries
// cannot be followed (a block of it incomplete, a later run's entry inside
// a revisit) is among them: its restore refuses it, saying why.
func Files(written *rewritelog.Moves) ([]string, error) {
	var files []string
	for _, f := range written.Files() {
		live := false
		err := written.Live(f, func(rewritelog.Move, int64) error {
			live = true
			return errStopLive
		})
		if live || err != nil && err != errStopLive {
			files = append(files, manifest.EscapeFile(f.Name))
		}
	}
	return files, nil
}

var errStopLive = errors.New("stop")

// Run restores the revisits of each file (escaped as manifest field 1),
// writing the entries of every replaced file to log ("restored") in the
// order of files. The error is one that stops the run (a full disk, a
// failed log write); a refused file is reported through Refused, counted,
// and the run goes on.
func (r *Restorer) Run(ctx context.Context, files []string, log *rewritelog.Log) (Stats, error) {
	if r.Originals == nil || r.Captures == nil {
		return Stats{}, errors.New("no manifest of the captures: a revisit is restored only from its original, read and checked")
	}
	if r.Written == nil && r.WrittenFor == nil && !r.All {
		return Stats{}, errors.New("no rewrite log: which revisits this toolchain wrote is known only from it (or restore every revisit)")
	}
	if log == nil {
		return Stats{}, errors.New("no log: the restored records' new offsets must be logged")
	}
	progress := r.Progress
	if progress == nil {
		progress = new(Progress)
	}
	log.StartRun(time.Now())
	// A run's entries are in the byte order of the files (rewritelog's
	// rule): the files of several runs (those a run's rewrite of the
	// collisions replaced after its rewrite, say) come in the order the
	// log first names them, which is not.
	files = slices.Sorted(slices.Values(files))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(r.Jobs, 1)
	q := ordered.New[*restoreTask](2 * jobs)
	// feedErr is the error of WrittenFor that stopped the files' feed;
	// read once the queue is drained.
	var feedErr error
	go func() {
		defer q.Close()
		for _, f := range files {
			t := &restoreTask{file: f, Outcome: inplace.NewOutcome(), written: r.Written}
			if r.WrittenFor != nil {
				if t.written, feedErr = r.WrittenFor(f); feedErr != nil {
					feedErr = fmt.Errorf("the rewrite log's entries of %s: %w", f, feedErr)
					cancel()
					return
				}
			}
			if q.Add(ctx, t) != nil {
				return
			}
		}
	}()
	written := inplace.NewFiles()
	var total Stats
	var mu sync.Mutex
	var workers []*restoreWorker
	defer func() {
		for _, w := range workers {
			w.close()
		}
	}()
	fatal := inplace.Drive(q, cancel, jobs, log, func() func(*restoreTask) error {
		w := newRestoreWorker(r, log, progress)
		w.files = written
		mu.Lock()
		workers = append(workers, w)
		mu.Unlock()
		return func(t *restoreTask) error {
			err := w.restore(ctx, t)
			progress.Files.Add(1)
			return err
		}
	}, func(t *restoreTask) error {
		total.add(&t.stats)
		if t.Err == nil && t.Result != nil && r.Restored != nil {
			r.Restored(RestoredFile{File: t.file, Fixity: t.Result.Fixity, Members: t.stats.Members, Foreign: t.stats.Foreign})
		}
		return inplace.RefusedOr(t.Err, r.Refused)
	})
	if feedErr != nil {
		fatal = feedErr
	}
	if fatal == nil {
		fatal = ctx.Err()
	}
	return total, fatal
}

func (r *Restorer) placement(files *inplace.Files) *inplace.Placement {
	return &inplace.Placement{Locator: &source.Locator{Roots: r.Roots, Locations: r.Locations, Prefixes: r.Prefixes}, InPlace: true,
		HardLinks: r.HardLinks, Create: r.create, Files: files, Warn: r.Warn}
}

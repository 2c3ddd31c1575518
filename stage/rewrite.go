package stage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/inplace"
	"warcdedup/internal/progress"
	"warcdedup/internal/tsv"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/refs"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// Rewrite turns the duplicates into revisits in place (warcrefs
// --in-place), or measures what it would do: stage 4. Each file named is
// replaced only by a checked, complete new version, logged in the rewrite
// log; each revisit written (or that would be) goes into saved.tsv, which
// the account reads; each file replaced gets its listing for the hash
// again from its old one (warcsum.Cache.Derive), so that only the
// revisits written are read there.
type Rewrite struct {
	In *manifest.Reader // the numbered lines of the files to rewrite, on file
	// Originals are numbered lines (at least copy 1 and the revisits) on
	// digest, where each duplicate's original is looked up, and Open
	// reads them: from the files here, or over HTTP from other hosts.
	Originals []*manifest.Table
	Open      originals.Opener
	// Roots and Prefixes say where the files rewritten are (see
	// refs.Rewriter).
	Roots    []string
	Prefixes map[string]string
	// Locations name files by where they are (refs.Rewriter.Locations):
	// the staged copies of WACZ members (PackageRewrite).
	Locations map[string]string
	// Container gives each revisit's WARC-Refers-To-Container
	// (refs.Rewriter.Container; PackageRewrite.Container).
	Container func(dup, orig *manifest.Line) string
	// Log is the rewrite log each replacement is appended to; LogFrom its
	// size when the job's hash stage listed the files: only the entries
	// since (this job's) move the manifest's offsets. A dry run writes no
	// log and no file.
	Log       string
	LogFrom   int64
	DryRun    bool
	HardLinks bool
	// SHA256: the cache entries of the files replaced get their new
	// versions' SHA-256, taken by the rewrite's check, for a crawl
	// index's commit (without it, a listing that wants it reads them).
	SHA256 bool
	// WantSums, if set, makes the check of the new version of each file it
	// says yes to (by name) take its SHA-256 and CRC-32, given to
	// Replaced (refs.Rewriter.WantSums): WACZ members' staged copies
	// (PackageRewrite.WantSums), whose packages' rebuild stores them with
	// those without reading them for them.
	WantSums func(name string) bool
	// Sections names the WACZ members rewritten where they lie in their
	// packages (refs.Rewriter.Sections; PackageRewrite.Sections).
	Sections func(name string) (inplace.Section, bool)
	Policy   policy.Policy
	Jobs     int // files rewritten at once
	// Cache is the directory of warcsum's per-file cache the hash stages
	// list the files through, with the Algorithm they list with; "" for
	// none, and the hash again reads each file replaced.
	Cache     string
	Algorithm digest.Algorithm
	// Replaced, if set, gets each file replaced, after the cache's entry
	// of it is derived (refs.Rewriter.Replaced): a WACZ member's copy,
	// whose index lines are derived (wacz.LineStore.Derive).
	Replaced func(rewritelog.Replacement)
	Saved    string // saved.tsv, whole or not at all
	// Apart, if set, gets the numbered lines (in the order of In) of the
	// duplicates left as they are because their original differs
	// (refs.Rewriter.Apart), whole or not at all: the copies of a resolve
	// that read nothing, for the collisions stage (Collide) to resolve byte
	// for byte. Without it, such a duplicate refuses its file.
	Apart    string
	Total    int64 // bytes of the files, for the progress
	Messages Messages
	Meter    progress.Meter
}

// RewriteResult is what a Rewrite did.
type RewriteResult struct {
	Stats   refs.Stats `json:"stats"`
	Refused []string   `json:"refused,omitempty"` // every file refused, and why
	// RefusedFiles name the files refused (as warcsum.Collect names
	// them), sorted: a job that completes does not record them as done,
	// so that the next run takes them again (their refusal may have
	// passed: a writer that closed the file, --hard-links given).
	RefusedFiles []string `json:"refused_files,omitempty"`
	// Derived counts the files replaced whose listing the hash again
	// takes from their old one (warcsum.Cache.Derive), not read again.
	Derived int64 `json:"derived"`
}

// Run rewrites.
func (r *Rewrite) Run(ctx context.Context) (RewriteResult, error) {
	var log *rewritelog.Log
	if r.DryRun {
		log = rewritelog.NewLog(io.Discard)
	} else {
		var err error
		if log, err = rewritelog.Open(r.Log); err != nil {
			return RewriteResult{}, err
		}
		defer log.Close()
		// Earlier jobs' runs shortened the files before this job hashed
		// them: only this job's runs move the manifest's offsets.
		log.Since(r.LogFrom)
	}
	originals, err := originals.New(r.Open, r.Originals...)
	if err != nil {
		return RewriteResult{}, err
	}
	saved, err := atomicfile.Create(r.Saved, 0o644)
	if err != nil {
		return RewriteResult{}, err
	}
	defer saved.Abort()
	sw := newSavedWriter(saved)
	var apart *apartWriter
	if r.Apart != "" {
		f, err := atomicfile.Create(r.Apart, 0o644)
		if err != nil {
			return RewriteResult{}, err
		}
		defer f.Abort()
		apart = &apartWriter{f: f, w: bufio.NewWriter(f), messages: r.Messages}
	}
	refused := &firstOf{}
	var refusedFiles refusedNames
	var prog refs.Progress
	rw := refs.Rewriter{Roots: r.Roots, Prefixes: r.Prefixes, Locations: r.Locations, Container: r.Container, InPlace: true, DryRun: r.DryRun, Originals: originals,
		Policy: r.Policy, HardLinks: r.HardLinks, SHA256: r.SHA256, WantSums: r.WantSums, Sections: r.Sections, Jobs: r.Jobs, Progress: &prog,
		Refused: func(err error) {
			refused.add(err)
			refusedFiles.add(err)
			r.Messages.Error(err)
		},
		Warn:   r.Messages.Warn,
		Record: sw.record}
	if apart != nil {
		rw.Apart = apart.write
	}
	var derived atomic.Int64
	if r.Cache != "" {
		if cache, err := warcsum.NewCache(r.Cache, Options(r.Algorithm)); err == nil {
			rw.Replaced = func(rp rewritelog.Replacement) {
				if err := cache.Derive(rp); err != nil {
					// Not an error: the hash again reads the file. The
					// log says why, for whoever wonders at its time.
					r.Messages.Note("%v; hash again reads the file", err)
					return
				}
				derived.Add(1)
			}
		}
	}
	if r.Replaced != nil {
		derive := rw.Replaced
		rw.Replaced = func(rp rewritelog.Replacement) {
			if derive != nil {
				derive(rp)
			}
			r.Replaced(rp)
		}
	}
	r.Meter.Begin("bytes", r.Total)
	stop := progress.Follow(&prog.Bytes, r.Meter)
	st, err := rw.Run(ctx, r.In, log)
	stop()
	res := RewriteResult{Stats: st, Refused: refused.list, RefusedFiles: refusedFiles.sorted(), Derived: derived.Load()}
	if err == nil {
		err = sw.w.Flush()
	}
	if err == nil {
		err = saved.CommitRenamed()
	}
	if err == nil && apart != nil {
		err = apart.commit()
	}
	return res, err
}

// apartWriter writes the lines of the duplicates kept apart from their
// original, as refs.Rewriter gives them (in manifest order, one file at a
// time).
type apartWriter struct {
	f        *atomicfile.File
	w        *bufio.Writer
	buf      []byte
	messages Messages
}

func (a *apartWriter) write(l *manifest.Line, why error) {
	a.messages.Note("%s offset %d: kept for now, resolved again byte for byte: %v", l.File, l.Offset, why)
	a.buf = l.Append(a.buf[:0])
	a.w.Write(a.buf) // its error is Flush's
}

func (a *apartWriter) commit() error {
	if err := a.w.Flush(); err != nil {
		return err
	}
	return a.f.CommitRenamed()
}

// refusedNames gathers the names of the files refused, from the workers.
type refusedNames struct {
	mu    sync.Mutex
	names []string
}

func (n *refusedNames) add(err error) {
	var re *inplace.RefusedError
	if !errors.As(err, &re) {
		return
	}
	name, uerr := manifest.UnescapeFile(re.File)
	if uerr != nil {
		return
	}
	n.mu.Lock()
	n.names = append(n.names, name)
	n.mu.Unlock()
}

func (n *refusedNames) sorted() []string {
	slices.Sort(n.names)
	return slices.Compact(n.names)
}

// Note says what a Rewrite did, for the report's stage.
func (r *RewriteResult) Note(dryRun bool) string {
	st := &r.Stats
	verb := "written"
	if dryRun {
		verb = "that would be written"
	}
	note := fmt.Sprintf("%s revisits %s in %s files, %s refused", progress.Count(st.Revisits+st.AlreadyRevisit), verb,
		progress.Count(st.Rewritten), progress.Count(st.Refused))
	if r.Derived > 0 {
		note += fmt.Sprintf("; %s files listed from the records written, not read again", progress.Count(r.Derived))
	}
	return note
}

// Reasons are why the exit status is not 0, as far as the rewrite goes:
// the files it refused and left untouched.
func (r *RewriteResult) Reasons() []string {
	if r.Stats.Refused == 0 {
		return nil
	}
	return append([]string{fmt.Sprintf("%s files refused and left untouched (rewrite stage)", progress.Count(r.Stats.Refused))}, First(r.Refused, 10)...)
}

// saved.tsv lists each duplicate that is (or in a dry run would be) a
// revisit, in the order of the rewrite's input (on file and offset):
//
//	FILE OFFSET OLD-LENGTH NEW-LENGTH
//
// separated by tabs (the reader takes the spaces of earlier work
// directories too), FILE as manifest field 1, the record's offset and length before the
// rewrite, and its revisit's length.
type savedWriter struct{ w *bufio.Writer }

func newSavedWriter(w io.Writer) *savedWriter { return &savedWriter{bufio.NewWriter(w)} }

func (s *savedWriter) write(l *manifest.Line, revisitLength int64) {
	s.record(l.File, l.Offset, l.Length, revisitLength)
}

// record is write of refs.Rewriter.Record's fields.
func (s *savedWriter) record(file string, offset, length, revisitLength int64) {
	fmt.Fprintf(s.w, "%s\t%d\t%d\t%d\n", file, offset, length, revisitLength)
}

// Saved is a line of saved.tsv.
type Saved struct {
	File           string // as manifest field 1
	Offset, Length int64  // of the record before the rewrite
	RevisitLength  int64
}

// SavedReader reads saved.tsv, a line at a time or alongside a manifest in
// file order (Find).
type SavedReader struct {
	f    *os.File
	sc   *bufio.Scanner
	name string
	line int
	cur  Saved
	err  error // of reading cur: io.EOF after the last line
}

// OpenSaved opens a saved.tsv.
func OpenSaved(name string) (*SavedReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	s := &SavedReader{f: f, sc: sc, name: name}
	s.advance()
	return s, nil
}

func (s *SavedReader) advance() {
	if !s.sc.Scan() {
		s.err = io.EOF
		if err := s.sc.Err(); err != nil {
			s.err = fmt.Errorf("%s: %w", s.name, err)
		}
		return
	}
	s.line++
	f := tsv.Split(s.sc.Text())
	var err1, err2, err3 error
	if len(f) == 4 {
		s.cur.File = f[0]
		s.cur.Offset, err1 = strconv.ParseInt(f[1], 10, 64)
		s.cur.Length, err2 = strconv.ParseInt(f[2], 10, 64)
		s.cur.RevisitLength, err3 = strconv.ParseInt(f[3], 10, 64)
	}
	if len(f) != 4 || err1 != nil || err2 != nil || err3 != nil {
		s.err = fmt.Errorf("%s: line %d: want \"FILE OFFSET LENGTH REVISIT-LENGTH\"", s.name, s.line)
	}
}

// Next returns the next line, or io.EOF after the last.
func (s *SavedReader) Next() (Saved, error) {
	if s.err != nil {
		return Saved{}, s.err
	}
	sv := s.cur
	s.advance()
	return sv, nil
}

// Find returns the revisit length of the record of file (as manifest
// field 1) and offset, or -1 when none was written, passing over the
// lines before it: a manifest in file order is joined with saved.tsv by
// calling Find for each of its lines.
func (s *SavedReader) Find(file string, offset int64) (int64, error) {
	for s.err == nil {
		switch c := manifest.ByFile.Compare(&manifest.Line{File: s.cur.File, Offset: s.cur.Offset}, &manifest.Line{File: file, Offset: offset}); {
		case c < 0:
			s.advance()
		case c == 0:
			n := s.cur.RevisitLength
			s.advance()
			return n, nil
		default:
			return -1, nil
		}
	}
	if s.err == io.EOF {
		return -1, nil
	}
	return -1, s.err
}

// Close closes the file.
func (s *SavedReader) Close() error { return s.f.Close() }

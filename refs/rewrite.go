package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/internal/ordered"
	"warcdedup/internal/spool"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/source"
)

// Rewriter rewrites the files a manifest names.
type Rewriter struct {
	Roots     []string          // directories field 1 is relative to
	Locations map[string]string // file name -> local path
	// Exactly one of InPlace and OutputDir: replace each file, or write the
	// new file under OutputDir with the same relative name.
	InPlace   bool
	OutputDir string
	DryRun    bool // check and measure everything, write nothing
	// Protect lists records existing revisits refer to; their lines are
	// skipped and counted, so those records stay responses.
	Protect *Protection
	Jobs    int // files rewritten at once; 1 if < 1
	// Refused receives each file left untouched and why; Warn other notes.
	Refused  func(error)
	Warn     func(error)
	Progress *Progress

	// create makes the temporary file of a new version; tests replace it
	// to simulate failing disks.
	create func(name string, perm os.FileMode) (*atomicfile.File, error)
}

// Progress is updated while Run works.
type Progress struct {
	Files    atomic.Int64
	Revisits atomic.Int64
	Bytes    atomic.Int64 // bytes of input files done
}

// Stats counts what a run did.
type Stats struct {
	Files          int64 // files named by copy > 1 lines
	Rewritten      int64 // files replaced by (or written as) a new version
	Untouched      int64 // files with nothing left to do
	Refused        int64 // files left untouched because a check failed
	Revisits       int64 // records rewritten as revisits
	AlreadyRevisit int64 // records an earlier run already rewrote
	NotSmaller     int64 // records kept because their revisit would not be smaller
	ARC            int64 // ARC files skipped: their records have no revisit form
	Protected      int64 // records kept because an existing revisit refers to them
	BytesBefore    int64 // size of the rewritten files before
	BytesAfter     int64 // and after
}

func (s *Stats) add(o *Stats) {
	s.Files += o.Files
	s.Rewritten += o.Rewritten
	s.Untouched += o.Untouched
	s.Refused += o.Refused
	s.Revisits += o.Revisits
	s.AlreadyRevisit += o.AlreadyRevisit
	s.NotSmaller += o.NotSmaller
	s.ARC += o.ARC
	s.Protected += o.Protected
	s.BytesBefore += o.BytesBefore
	s.BytesAfter += o.BytesAfter
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer, dryRun bool) {
	verb := "rewritten"
	if dryRun {
		verb = "would be rewritten"
	}
	fmt.Fprintf(w, "files: %d %s, %d untouched (nothing to do), %d refused, %d ARC files skipped\n", s.Rewritten, verb, s.Untouched, s.Refused, s.ARC)
	fmt.Fprintf(w, "revisits written: %d; skipped: %d already revisits, %d not smaller as a revisit, %d referred to by existing revisits\n", s.Revisits, s.AlreadyRevisit, s.NotSmaller, s.Protected)
	fmt.Fprintf(w, "bytes of those files: %d before, %d after, %d saved\n", s.BytesBefore, s.BytesAfter, s.BytesBefore-s.BytesAfter)
}

// LogEntry is one rewritten record, for updating an external index.
type LogEntry struct {
	File                 string
	OldOffset, OldLength int64
	NewOffset, NewLength int64
}

func (e *LogEntry) append(b []byte) []byte {
	return fmt.Appendf(b, "%s %d %d %d %d\n", e.File, e.OldOffset, e.OldLength, e.NewOffset, e.NewLength)
}

// task is the lines of one file.
type task struct {
	file  string
	lines chan manifest.Line
	// cut is set before lines is closed when reading the manifest stopped
	// with an error: more lines of the file may have followed, so the
	// file must not be replaced.
	cut   bool
	log   *spool.Spool
	done  chan struct{}
	stats Stats
	err   error
}

// Abandon finishes a task that no worker will run.
func (t *task) Abandon(err error) {
	close(t.lines)
	t.err = err
	close(t.done)
}

// errCut is the error of a task whose lines the manifest cut short; the
// manifest's error is the one reported.
var errCut = errors.New("the manifest stopped before the file's last line")

// Run reads the manifest (10 fields, sorted by file and offset; copy-1
// lines are ignored) and rewrites each file it names, writing the log of
// rewritten records to log (may be nil) in file order. The error is one
// that stops the run (bad input, a failed log write); a refused file is
// reported through Refused, counted, and the run goes on.
func (r *Rewriter) Run(ctx context.Context, in *manifest.Reader, log io.Writer) (Stats, error) {
	if r.InPlace == (r.OutputDir != "") {
		return Stats{}, errors.New("give exactly one of in-place or an output directory")
	}
	in.RequireFields(10)
	in.RequireOrder(manifest.ByFile)
	r.Protect.resolve(func(file string) (string, error) {
		src, _, err := r.paths(file)
		return src, err
	})
	if r.Progress == nil {
		r.Progress = new(Progress)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(r.Jobs, 1)
	q := ordered.New[*task](2 * jobs)
	var readErr error
	var protected int64 // written by dispatch, read after it ends
	go func() {
		defer q.Close()
		readErr = r.dispatch(ctx, in, q, &protected)
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{r: r, hashes: map[digest.Algorithm]hash.Hash{}}
			for t := range q.Work() {
				t.err = w.rewrite(ctx, t)
				for range t.lines {
				}
				r.Progress.Files.Add(1)
				close(t.done)
			}
		}()
	}
	var total Stats
	var fatal error
	for t := range q.Results() {
		<-t.done
		if fatal != nil && t.err == nil && log != nil {
			// Stopping: files already replaced are still logged, or an
			// external index would never learn their new offsets.
			t.log.WriteTo(log)
		}
		if fatal == nil {
			total.add(&t.stats)
			var refused *RefusedError
			switch {
			case errors.As(t.err, &refused):
				if r.Refused != nil {
					r.Refused(t.err)
				}
			case t.err == errCut:
				// readErr says why.
			case t.err != nil:
				fatal = t.err
			case log != nil:
				if _, err := t.log.WriteTo(log); err != nil {
					fatal = fmt.Errorf("writing the log: %w", err)
				}
			}
			if fatal != nil {
				cancel()
			}
		}
		t.log.Close()
		q.Release()
	}
	wg.Wait()
	total.Protected = protected
	if fatal == nil {
		fatal = readErr
	}
	return total, fatal
}

// dispatch groups the copy > 1 lines by file and hands out one task per
// file, streaming its lines.
func (r *Rewriter) dispatch(ctx context.Context, in *manifest.Reader, q *ordered.Queue[*task], protected *int64) (err error) {
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
		if l.Copy <= 1 {
			continue
		}
		if r.Protect.Has(l.URI, l.Date) {
			*protected++
			continue
		}
		if cur == nil || cur.file != l.File {
			if cur != nil {
				close(cur.lines)
				cur = nil // closed: the deferred close must not close it again
			}
			t := &task{file: l.File, lines: make(chan manifest.Line, 1024), log: spool.New(1 << 20), done: make(chan struct{})}
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

// worker rewrites files one at a time, keeping its buffers.
// lookAhead is read past a record's stated end, so that the check that
// the next record starts there sees its whole first line.
const lookAhead = 64 << 10

type worker struct {
	r      *Rewriter
	hashes map[digest.Algorithm]hash.Hash
	head   []byte
	buf    []byte
	zw     *gzip.Writer
	zbuf   bytes.Buffer
	rr     *record.Reader // reset onto each record examined or verified
	ahead  []*worker      // examiners of records ahead of the writer
}

// reader returns the worker's record reader, reset onto src.
func (w *worker) reader(src io.Reader, name string) (*record.Reader, error) {
	if w.rr == nil {
		rr, err := record.NewReader(src, name)
		w.rr = rr
		return rr, err
	}
	return w.rr, w.rr.Reset(src, name)
}

func (w *worker) hash(a digest.Algorithm) hash.Hash {
	h := w.hashes[a]
	if h == nil {
		h = a.New()
		w.hashes[a] = h
	}
	h.Reset()
	return h
}

// segment is a stretch of the new file: a copy of the source from srcOff,
// or (srcOff < 0) a revisit written for the record of line.
type segment struct {
	newOff, length int64
	srcOff         int64
	line           manifest.Line
}

// paths returns the file to read and the file to write for a manifest name.
func (r *Rewriter) paths(field string) (src, dst string, err error) {
	loc := source.Locator{Roots: r.Roots, Locations: r.Locations}
	src, err = loc.Where(field)
	if err != nil {
		return "", "", err
	}
	if strings.Contains(src, "://") {
		return "", "", fmt.Errorf("%s: warcrefs rewrites local files only, not %s", field, src)
	}
	if r.InPlace {
		return src, src, nil
	}
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return "", "", err
	}
	if err := source.CheckName(name); err != nil {
		return "", "", err
	}
	return src, filepath.Join(r.OutputDir, filepath.FromSlash(name)), nil
}

// rewrite does one file: walks it with its lines, writes the new version
// under a temporary name, checks it, and renames it over the target. Any
// failed check leaves the file untouched and returns a *RefusedError.
func (w *worker) rewrite(ctx context.Context, t *task) (err error) {
	r := w.r
	t.stats.Files = 1
	refuse := func(err error) error {
		var re *RefusedError
		if errors.As(err, &re) {
			return err
		}
		return &RefusedError{File: t.file, Offset: -1, Err: err}
	}
	defer func() {
		switch {
		case err == errCut:
			t.stats = Stats{}
		case err != nil:
			t.stats = Stats{Files: 1, Refused: 1}
		}
	}()
	srcPath, dstPath, err := r.paths(t.file)
	if err != nil {
		return refuse(err)
	}
	src, err := os.Open(srcPath)
	if err != nil {
		return refuse(err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return refuse(err)
	}
	size := fi.Size()
	gz, err := isGzip(src)
	if err != nil {
		return refuse(err)
	}

	// The new version goes to a temporary file beside its target, made
	// when the first revisit is to be written: a file with nothing to do
	// (a second run, or only records that would not shrink) is never
	// copied, so such a run needs neither space nor a writable directory.
	// Leftovers of interrupted runs are removed all the same.
	if !r.DryRun {
		removeLeftovers(dstPath)
	}
	var tmp *atomicfile.File
	defer func() {
		if tmp != nil {
			tmp.Abort()
		}
	}()
	var written int64 // bytes of the new version so far
	var segments []segment
	var entries []LogEntry
	// copySegment copies the source bytes of s unchanged. From file to file
	// io.Copy lets the kernel copy (copy_file_range), as cp does.
	copySegment := func(s segment) error {
		if _, err := src.Seek(s.srcOff, io.SeekStart); err != nil {
			return err
		}
		n, err := io.Copy(tmp.File, io.LimitReader(src, s.length))
		if err == nil && n != s.length {
			err = fmt.Errorf("copying %d bytes at %d: %w after %d", s.length, s.srcOff, io.ErrUnexpectedEOF, n)
		}
		return err
	}
	// copyTo copies source bytes [pos, end) unchanged, once there is a
	// temporary file; until then it only notes them.
	copyTo := func(pos, end int64) error {
		if end <= pos {
			return nil
		}
		s := segment{newOff: written, length: end - pos, srcOff: pos}
		segments = append(segments, s)
		written += end - pos
		if tmp == nil {
			return nil
		}
		return copySegment(s)
	}
	// write writes a revisit, making the temporary file and copying what
	// comes before it first if this is the first.
	write := func(b []byte) error {
		written += int64(len(b))
		if r.DryRun {
			return nil
		}
		if tmp == nil {
			if err := os.MkdirAll(filepath.Dir(dstPath), 0o755); err != nil {
				return err
			}
			create := r.create
			if create == nil {
				create = atomicfile.Create
			}
			f, err := create(dstPath, fi.Mode().Perm())
			if err != nil {
				return err
			}
			tmp = f
			for _, s := range segments {
				if err := copySegment(s); err != nil {
					return err
				}
			}
		}
		_, err := tmp.Write(b)
		return err
	}
	var pos, shrink int64 // in the source; bytes earlier runs saved before pos
	ahead := w.examineAhead(t, src, size, gz)
	defer ahead.stop()
	for e := range ahead.results {
		<-e.done
		l := e.line
		if ctx.Err() != nil {
			return ctx.Err()
		}
		at := l.Offset - shrink
		if at < pos {
			return refuse(&RefusedError{File: t.file, Offset: l.Offset, Err: ErrOverlap})
		}
		if at >= size {
			return refuse(&RefusedError{File: t.file, Offset: l.Offset, Err: fmt.Errorf("%w: the file has only %d bytes (the file is shorter than the manifest says)", ErrNotARecord, size)})
		}
		if err := copyTo(pos, at); err != nil {
			return refuse(err)
		}
		f, stored, err := e.found, e.stored, e.err
		if e.at != at {
			// Examined at the offset the shift known then gave; an earlier
			// run's revisit found since moved it.
			f, stored, err = w.prepare(src, size, gz, &l, at)
		}
		if err == errARC {
			t.stats = Stats{Files: 1, ARC: 1}
			if r.Warn != nil {
				r.Warn(fmt.Errorf("%s: skipped: %w", t.file, err))
			}
			return nil
		}
		if err != nil {
			return refuse(err)
		}
		switch {
		case f.already:
			t.stats.AlreadyRevisit++
			shrink += l.Length - f.length
			ahead.shrink.Store(shrink)
			if err := copyTo(at, at+f.length); err != nil {
				return refuse(err)
			}
			pos = at + f.length
			continue
		}
		if int64(len(stored)) >= f.length {
			t.stats.NotSmaller++
			if err := copyTo(at, at+f.length); err != nil {
				return refuse(err)
			}
			pos = at + f.length
			continue
		}
		entries = append(entries, LogEntry{File: t.file, OldOffset: at, OldLength: f.length, NewOffset: written, NewLength: int64(len(stored))})
		rs := segment{newOff: written, length: int64(len(stored)), srcOff: -1, line: l}
		if err := write(stored); err != nil {
			return refuse(err)
		}
		segments = append(segments, rs)
		t.stats.Revisits++
		r.Progress.Revisits.Add(1)
		pos = at + f.length
	}
	if t.cut {
		return errCut
	}
	if err := copyTo(pos, size); err != nil {
		return refuse(err)
	}
	r.Progress.Bytes.Add(size)
	if t.stats.Revisits == 0 {
		// Nothing to write: every line was done before or not worth it.
		t.stats.Untouched = 1
		return nil
	}
	t.stats.Rewritten = 1
	t.stats.BytesBefore, t.stats.BytesAfter = size, written
	if !r.DryRun {
		if err := tmp.Sync(); err != nil {
			return refuse(err)
		}
		if err := w.verify(tmp.File, src, segments, gz); err != nil {
			return refuse(fmt.Errorf("the new version failed its check and was removed: %w", err))
		}
		// The file must still be the one that was read: bytes appended
		// meanwhile (a crawler still writing it) would otherwise be lost.
		if err := unchanged(srcPath, fi); err != nil {
			return refuse(err)
		}
		if err := tmp.Commit(); errors.Is(err, atomicfile.ErrNotSynced) {
			// Replaced, complete; only the directory entry may not be on
			// disk yet. Not a refusal: the log must list its new offsets.
			if r.Warn != nil {
				r.Warn(err)
			}
		} else if err != nil {
			return refuse(err)
		}
	}
	for i := range entries {
		w.buf = entries[i].append(w.buf[:0])
		if _, err := t.log.Write(w.buf); err != nil {
			return err
		}
	}
	return nil
}

// prepare examines the record of l at offset at of src and, for a response,
// builds its revisit as it will be stored (a gzip member in a .gz file).
// The bytes returned are the caller's.
func (w *worker) prepare(src *os.File, size int64, gz bool, l *manifest.Line, at int64) (*found, []byte, error) {
	if at < 0 || at >= size {
		return nil, nil, &RefusedError{File: l.File, Offset: l.Offset, Err: fmt.Errorf("%w: the file has only %d bytes", ErrNotARecord, size)}
	}
	// Read the record and a little beyond (the start of the next one, for
	// the end check): not the rest of the file, which read-ahead would
	// otherwise pull through the kernel for every record.
	rr, err := w.reader(io.NewSectionReader(src, at, min(size-at, l.Length+lookAhead)), l.File)
	if err != nil {
		return nil, nil, &RefusedError{File: l.File, Offset: l.Offset, Err: err}
	}
	f, err := w.examine(rr, l)
	if err != nil || f.already {
		return f, nil, err
	}
	if !gz {
		return f, f.revisit, nil
	}
	stored, err := w.gzip(f.revisit)
	if err != nil {
		return nil, nil, err
	}
	return f, bytes.Clone(stored), nil
}

// examined is one line's record, examined ahead of the writer.
type examined struct {
	line   manifest.Line
	at     int64 // the offset it was examined at
	found  *found
	stored []byte
	err    error
	done   chan struct{}
}

// lookahead examines a file's records on several goroutines while the
// writer, which must go in file order, consumes them in order from results.
type lookahead struct {
	results chan *examined
	shrink  atomic.Int64 // the writer's shift, for offsets examined from now on
	halt    chan struct{}
	wg      sync.WaitGroup
}

// examiners is how many records of one file are examined at once.
func examiners() int { return min(runtime.GOMAXPROCS(0), 4) }

// examineAhead starts examining t's lines. The examiners are the worker's
// own (kept between files), each with its readers, hashes and gzip writer.
func (w *worker) examineAhead(t *task, src *os.File, size int64, gz bool) *lookahead {
	n := examiners()
	for len(w.ahead) < n {
		w.ahead = append(w.ahead, &worker{r: w.r, hashes: map[digest.Algorithm]hash.Hash{}})
	}
	a := &lookahead{results: make(chan *examined, 2*n), halt: make(chan struct{})}
	jobs := make(chan *examined, 2*n)
	for _, ex := range w.ahead[:n] {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for e := range jobs {
				e.found, e.stored, e.err = ex.prepare(src, size, gz, &e.line, e.at)
				close(e.done)
			}
		}()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(jobs)
		defer close(a.results)
		for l := range t.lines {
			e := &examined{line: l, at: l.Offset - a.shrink.Load(), done: make(chan struct{})}
			select {
			case a.results <- e:
			case <-a.halt:
				return
			}
			select {
			case jobs <- e:
			case <-a.halt:
				close(e.done)
				return
			}
		}
	}()
	return a
}

// stop ends the look-ahead early or late: it waits for every examiner, so
// nothing reads the file after the writer is done with it.
func (a *lookahead) stop() {
	close(a.halt)
	for e := range a.results {
		<-e.done
	}
	a.wg.Wait()
}

// unchanged checks that the file at path is still the one described by
// before: same file, size and modification time.
func unchanged(path string, before os.FileInfo) error {
	now, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(before, now) || now.Size() != before.Size() || !now.ModTime().Equal(before.ModTime()) {
		return fmt.Errorf("the file changed while it was being rewritten (%d bytes, now %d): run again", before.Size(), now.Size())
	}
	return nil
}

// gzip compresses a revisit as a gzip member of its own.
func (w *worker) gzip(b []byte) ([]byte, error) {
	w.zbuf.Reset()
	if w.zw == nil {
		// A revisit is about a kilobyte: the default level compresses it as
		// well as the best one, and its per-member reset is far cheaper.
		w.zw, _ = gzip.NewWriterLevel(&w.zbuf, gzip.DefaultCompression)
	} else {
		w.zw.Reset(&w.zbuf)
	}
	if _, err := w.zw.Write(b); err != nil {
		return nil, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, err
	}
	return w.zbuf.Bytes(), nil
}

// verify re-reads the new version from disk: every copied segment must equal
// the source byte for byte, and every revisit must read back as one whole
// revisit record of its length.
func (w *worker) verify(newFile, src *os.File, segments []segment, gz bool) error {
	a := make([]byte, 256<<10)
	b := make([]byte, 256<<10)
	var end int64
	for _, s := range segments {
		if s.newOff != end {
			return fmt.Errorf("segment at %d does not follow the one before", s.newOff)
		}
		end = s.newOff + s.length
		if s.srcOff >= 0 {
			for off := int64(0); off < s.length; {
				n := int(min(int64(len(a)), s.length-off))
				if _, err := newFile.ReadAt(a[:n], s.newOff+off); err != nil {
					return fmt.Errorf("re-reading offset %d: %w", s.newOff+off, err)
				}
				if _, err := src.ReadAt(b[:n], s.srcOff+off); err != nil {
					return fmt.Errorf("re-reading the source at %d: %w", s.srcOff+off, err)
				}
				if !bytes.Equal(a[:n], b[:n]) {
					return fmt.Errorf("bytes at %d differ from the source at %d", s.newOff+off, s.srcOff+off)
				}
				off += int64(n)
			}
			continue
		}
		rr, err := w.reader(io.NewSectionReader(newFile, s.newOff, s.length), "new version")
		if err != nil {
			return err
		}
		rec, err := rr.Next()
		if err == nil {
			err = rr.Finish()
		}
		if err != nil {
			return fmt.Errorf("revisit at %d: %w", s.newOff, err)
		}
		if rec.Type != "revisit" || rec.Length != s.length || refersURI(rec) != s.line.RefURI {
			return fmt.Errorf("revisit at %d reads back as a %q record of %d bytes", s.newOff, rec.Type, rec.Length)
		}
		if _, err := rr.Next(); err != io.EOF {
			return fmt.Errorf("revisit at %d: more than one record in %d bytes", s.newOff, s.length)
		}
	}
	fi, err := newFile.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != end {
		return fmt.Errorf("the new version has %d bytes, %d were written", fi.Size(), end)
	}
	return nil
}

func isGzip(f *os.File) (bool, error) {
	var head [3]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return false, err
	}
	return n == 3 && head[0] == 0x1f && head[1] == 0x8b && head[2] == 8, nil
}

// removeLeftovers deletes temporary files an interrupted run left beside
// target; they were never renamed, so nothing refers to them. Only names
// atomicfile.Create can have made for target are removed: its random part
// is digits, so the temporary file of another file whose name starts with
// target's ("a.warc-2.warc" beside "a.warc"), which a concurrent worker
// may be writing, is left alone.
func removeLeftovers(target string) {
	prefix := atomicfile.TempPrefix + filepath.Base(target) + "-"
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(target), globEscape(prefix)+"*"))
	for _, m := range matches {
		if isDigits(strings.TrimPrefix(filepath.Base(m), prefix)) {
			os.Remove(m)
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

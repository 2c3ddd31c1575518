package warcsum

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"warcdedup/archname"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/ordered"
	"warcdedup/internal/spool"
	"warcdedup/manifest"
	"warcdedup/workdir"
)

// Input is one file to read: where it is on disk and the name field 1 gives
// it (relative to the directory it was found under, or its base name when
// it was named directly).
type Input struct {
	Path string
	Name string
	Size int64
	// Offset, for a WARC member of a WACZ package, is where the member's
	// bytes start in the package file at Path: the input is the Size
	// bytes from there (a stored member is read by range, as replay tools
	// read it). 0 for a file of its own.
	Offset int64
	// Stamp, if set, tells this input's version in place of its file's
	// stamp: a member's, which a rebuild of its package around it leaves
	// as it was (see dedup's WACZ listing).
	Stamp string
}

// InProgress reports whether a file found in a directory is one a crawler
// is still writing: a WARC or ARC name with the ".open" that Heritrix and
// warcprox add until the file is complete ("x.warc.gz.open"). Such a file
// is never read as part of a collection: its last record may be cut short,
// and its writer will append to it and rename it.
func InProgress(name string) bool {
	stem, ok := strings.CutSuffix(strings.ToLower(name), ".open")
	return ok && archname.IsArchive(stem)
}

// Collect turns command-line paths into Inputs, in argument order and, within
// a directory, in byte order of the names. A file named directly is read
// whatever its name; files in a directory only if archname.IsArchive, and
// subdirectories only when recursive. Two inputs with the same name are an
// error, because field 1 must name one file.
func Collect(paths []string, recursive bool) ([]Input, error) {
	return Collector{Recursive: recursive}.Collect(paths)
}

// Collector is Collect that tells what it passes over that a user would
// miss: the files still being written.
type Collector struct {
	Recursive bool
	// Packages, if set, lists the WARC members of each WACZ package found
	// in a directory (a ".wacz" name, any case) as inputs of their own,
	// named as the package lists them ("x.wacz#archive/a.warc.gz"); a
	// package it gives none of is passed over (it says why itself).
	// Without it WACZ files are not read.
	Packages func(pkg Input) ([]Input, error)
	// InProgress, if set, receives the path of each file found in a
	// directory that a crawler is still writing (see InProgress): it is
	// not read. Called in the order of the inputs.
	InProgress func(path string)
	// Other, if set, receives the path of each other regular file found
	// in a directory, which is not read either (indexes, other formats:
	// warcdedup run counts them by kind).
	Other func(path string)
	// Link, if set, receives the path of each symbolic link found in a
	// directory under an archive's name: it is not followed (a rewrite or
	// a conversion in place through it would change a file outside the
	// collection, or remove the link and leave the file), nor read.
	Link func(path string)
}

// Collect is the package's Collect with c's settings.
func (c Collector) Collect(paths []string) ([]Input, error) {
	recursive := c.Recursive
	var inputs []Input
	seen := map[string]string{}
	add := func(in Input) error {
		if prev, dup := seen[in.Name]; dup {
			return fmt.Errorf("%s and %s would both be listed as %q: field 1 must name one file (name the directory above them instead)", prev, in.Path, in.Name)
		}
		seen[in.Name] = in.Path
		inputs = append(inputs, in)
		return nil
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(Input{Path: p, Name: filepath.Base(p), Size: fi.Size()}); err != nil {
				return nil, err
			}
			continue
		}
		// A directory named through a symbolic link ("current" -> a
		// month's crawl) is walked where it is; its files keep names
		// relative to it and paths beneath the name given.
		walked, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		// Paths are made by filepath.Join, which cleans them: a name
		// with ".." after a link ("to-sub/..": the link target's parent
		// to the kernel) would become another directory's. Such a
		// directory's files are named by the path walked.
		base := p
		if cleaned, err := filepath.EvalSymlinks(filepath.Clean(p)); err != nil || cleaned != walked {
			base = walked
		}
		var found []Input
		err = filepath.WalkDir(walked, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != walked && (!recursive || workdir.Recognize(path)) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				if d.Type()&fs.ModeSymlink != 0 && c.Link != nil && (archname.IsArchive(d.Name()) || strings.HasSuffix(strings.ToLower(d.Name()), ".wacz")) {
					c.Link(path)
				}
				return nil
			}
			wacz := c.Packages != nil && strings.HasSuffix(strings.ToLower(d.Name()), ".wacz")
			if !archname.IsArchive(d.Name()) && !wacz {
				switch {
				case InProgress(d.Name()):
					if c.InProgress != nil {
						c.InProgress(path)
					}
				case c.Other != nil:
					c.Other(path)
				}
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(walked, path)
			if err != nil {
				return err
			}
			in := Input{Path: filepath.Join(base, rel), Name: filepath.ToSlash(rel), Size: info.Size()}
			if wacz {
				members, err := c.Packages(in)
				if err != nil {
					return err
				}
				found = append(found, members...)
				return nil
			}
			found = append(found, in)
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(found, func(a, b Input) int { return strings.Compare(a.Name, b.Name) })
		for _, in := range found {
			if err := add(in); err != nil {
				return nil, err
			}
		}
	}
	return inputs, nil
}

// Progress is updated while Run works, for a display to read.
type Progress struct {
	Bytes      atomic.Int64 // bytes of input read so far
	Files      atomic.Int64 // files finished
	TotalBytes int64
	TotalFiles int64
}

// spoolMemory is how much of one file's manifest lines is held in memory
// while an earlier file is still being read; the rest goes to a temporary
// file, so memory stays bounded however many records a file holds.
const spoolMemory = 4 << 20

// fileSum is one file of a run and the lines (and facts) it produced.
type fileSum struct {
	in    Input
	out   *spool.Spool
	facts *spool.Spool // nil without Runner.Facts
	buf   []byte
	done  chan struct{}
	stats Stats
	err   error
	// sha256 of the file, for Runner.OnFile.
	sha256 string
}

// Abandon finishes a fileSum that no worker will run.
func (j *fileSum) Abandon(error) { close(j.done) }

// writer writes a fileSum's lines (and facts), and copies them to a cache
// entry being made.
type writer struct {
	j      *fileSum
	summer *Summer
	lines  io.Writer
	facts  io.Writer // nil without facts
}

func (w *writer) write(l *manifest.Line) error {
	j := w.j
	j.buf = l.Append(j.buf[:0])
	if _, err := w.lines.Write(j.buf); err != nil {
		return err
	}
	if w.facts == nil || l.IsRevisit() {
		return nil
	}
	j.buf = AppendFacts(j.buf[:0], l, w.summer.Facts())
	_, err := w.facts.Write(j.buf)
	return err
}

// countingReader adds what it reads from a file to a progress counter,
// and to the file's SHA-256 when h is set.
type countingReader struct {
	f      io.ReadSeeker
	n      *atomic.Int64
	h      hash.Hash
	read   int64
	seeked bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	c.read += int64(n)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	return n, err
}

// Seek lets the reader seek back over a damaged gzip member instead of
// keeping a copy of every byte it reads in case one is. The file's SHA-256
// is then not known from this read.
func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekCurrent { // not only asking where it is
		c.seeked = true
	}
	return c.f.Seek(off, whence)
}

// sum is the file's SHA-256 (hex) if it was read once, whole, in order
// (size bytes); "" otherwise.
func (c *countingReader) sum(size int64) string {
	if c.h == nil || c.seeked || c.read != size {
		return ""
	}
	return hex.EncodeToString(c.h.Sum(nil))
}

// Runner reads many files in parallel and writes their manifest lines in
// input order.
type Runner struct {
	Options
	Jobs     int       // files read in parallel; 1 if < 1
	Progress *Progress // updated while Run works; may be nil
	// Facts, if set, receives a facts line (see AppendFacts) per response
	// line, in the order of the manifest.
	Facts io.Writer
	// Cache, if set, keeps each file's lines, so that a file unchanged
	// since a run read it is not read again (see Cache).
	Cache *Cache
	// OnFileError receives each file that could not be read to its end. It
	// is called in input order from the goroutine that called Run.
	OnFileError func(Input, error)
	// OnFile, if set, receives each file's SHA-256 (hex) as read (or as
	// the cache kept it), in input order from the goroutine that called
	// Run: "" for a file that was not read whole, once, in order. It costs
	// a SHA-256 of the bytes read.
	OnFile func(in Input, sha256 string)
	// WantSum, if set, says of which inputs OnFile wants the SHA-256 (the
	// others get ""): a WACZ package's members, compared with its
	// datapackage.json, and not every plain file beside them.
	WantSum func(in Input) bool
	// Index, if set, is asked for an index of each input the run reads
	// (not of one the cache replays), nil for none: it sees every record
	// as it is read (FileIndex), and is closed when the input is read.
	Index func(in Input) FileIndex
	// Gzip writes the output and Facts gzip-compressed, each file's lines
	// (and facts) as a gzip member of their own, which read on as one
	// stream (package gzfile): compressed by the worker that reads the
	// file, once for the output and the cache entry, and a file the cache
	// replays is its entry's member copied as it is, neither inflated nor
	// compressed again.
	Gzip bool

	spoolMemory int // per-file output held in memory; spoolMemory if 0
}

// Run reads the inputs and writes their manifest lines to out: files in
// input order, records in file order, whatever Jobs is. A file that cannot
// be read is passed to OnFileError and counted; the run goes on. The error
// returned is one that makes the output unusable (writing it failed).
func (r *Runner) Run(inputs []Input, out io.Writer) (Stats, error) {
	jobs := max(r.Jobs, 1)
	progress := r.Progress
	if progress == nil {
		progress = new(Progress)
	}
	for _, in := range inputs {
		progress.TotalBytes += in.Size
	}
	progress.TotalFiles = int64(len(inputs))
	memory := r.spoolMemory
	if memory == 0 {
		memory = spoolMemory
	}

	// The queue bounds the files read ahead of the one being written, and
	// so the memory their spooled output takes. A failed write stops it.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	q := ordered.New[*fileSum](2 * jobs)
	// Spools written out are used again: their memory is then allocated
	// once, not once per file.
	spools := spool.NewPool(memory, 2*jobs)
	go func() {
		defer q.Close()
		for _, in := range inputs {
			j := &fileSum{in: in, out: spools.Get(), done: make(chan struct{})}
			if r.Facts != nil {
				j.facts = spools.Get()
			}
			if q.Add(ctx, j) != nil {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			summer := NewSummer(r.Options)
			for s := range q.Work() {
				if ctx.Err() == nil {
					s.stats, s.err = r.sum(summer, s, progress)
				}
				progress.Files.Add(1)
				close(s.done)
			}
		}()
	}

	bw := bufio.NewWriterSize(out, 256<<10)
	var fw *bufio.Writer
	if r.Facts != nil {
		fw = bufio.NewWriterSize(r.Facts, 256<<10)
	}
	var total Stats
	var fatal error
	for s := range q.Results() {
		<-s.done
		if fatal == nil {
			if s.err != nil && r.OnFileError != nil {
				r.OnFileError(s.in, s.err)
			}
			if r.OnFile != nil {
				r.OnFile(s.in, s.sha256)
			}
			total.Add(&s.stats)
			_, err := s.out.WriteTo(bw)
			if err == nil && fw != nil {
				_, err = s.facts.WriteTo(fw)
			}
			if err != nil {
				fatal = err
				stop()
			}
		}
		spools.Put(s.out)
		if s.facts != nil {
			spools.Put(s.facts)
		}
		q.Release()
	}
	wg.Wait()
	if fatal == nil && r.Gzip && len(inputs) == 0 {
		// No member: an empty stream, that the output be gzip still.
		fatal = emptyMembers(bw, fw)
	}
	if fatal == nil {
		fatal = bw.Flush()
	}
	if fatal == nil && fw != nil {
		fatal = fw.Flush()
	}
	return total, fatal
}

// emptyMembers writes an empty gzip stream to each writer not nil.
func emptyMembers(ws ...*bufio.Writer) error {
	for _, w := range ws {
		if w == nil {
			continue
		}
		if err := gzfile.NewWriter(w).Close(); err != nil {
			return err
		}
	}
	return nil
}

// sum reads one file, or replays what reading it gave when the cache
// knows it unchanged.
func (r *Runner) sum(summer *Summer, s *fileSum, progress *Progress) (st Stats, err error) {
	wantSum := r.OnFile != nil && (r.WantSum == nil || r.WantSum(s.in))
	if r.Index != nil {
		if ix := r.Index(s.in); ix != nil {
			summer.index, summer.indexFailed = ix, false
			defer func() {
				// A file the cache replays was not read: its index saw nothing.
				ix.Close(err == nil && st.Damaged == 0 && st.Cached == 0 && !summer.indexFailed)
				summer.index = nil
			}()
		}
	}
	if r.Cache == nil {
		return r.sumPath(summer, s, progress, nil, wantSum)
	}
	if e, ok := r.Cache.lookup(s.in); ok && e.check() == nil && (!wantSum || e.stamp.SHA256 != "") {
		if err := e.replay(s.out, s.factsWriter(), r.Gzip); err == nil {
			for _, m := range e.stamp.Messages {
				summer.damage(errors.New(m))
			}
			progress.Bytes.Add(s.in.Size)
			s.sha256 = e.stamp.SHA256
			st := e.stamp.Stats
			st.Cached = 1
			if e.stamp.Failed != "" {
				return st, errors.New(e.stamp.Failed)
			}
			return st, nil
		}
		// The entry could not be read whole: read the file.
		s.out.Reset()
		if s.facts != nil {
			s.facts.Reset()
		}
	}
	var ew *entryWriter
	if r.Gzip {
		ew = r.Cache.create(s.in, s.out, s.factsWriter())
	} else {
		ew = r.Cache.create(s.in, nil, nil)
	}
	if ew != nil {
		summer.noted, summer.counted = ew.message, ew.count
		defer func() { summer.noted, summer.counted = nil, nil }()
	}
	st, err = r.sumPath(summer, s, progress, ew, wantSum)
	if ew != nil {
		if cerr := ew.commit(st, err, s.sha256); cerr != nil && err == nil {
			// The cache is an optimisation: a file it cannot keep is
			// read again next time.
			ew.abort()
		}
	}
	return st, err
}

// factsWriter is where the file's facts go, nil for nowhere.
func (j *fileSum) factsWriter() io.Writer {
	if j.facts == nil {
		return nil
	}
	return j.facts
}

// sumPath reads the file, its lines and facts to the fileSum's spools and
// to ew's entry, if not nil (which, with Gzip, compresses for both).
func (r *Runner) sumPath(summer *Summer, s *fileSum, progress *Progress, ew *entryWriter, wantSum bool) (st Stats, err error) {
	w := &writer{j: s, summer: summer, lines: s.out, facts: s.factsWriter()}
	switch {
	case ew != nil && r.Gzip:
		w.lines, w.facts = ew.Lines(), ew.Facts()
		defer func() {
			// The members end whatever the file gave: the output has
			// what was listed, as it has without Gzip.
			if ferr := ew.finish(); ferr != nil && err == nil {
				st, err = Stats{FilesFailed: 1}, ferr
			}
		}()
	case ew != nil:
		w.lines = io.MultiWriter(w.lines, ew.Lines())
		if w.facts != nil {
			w.facts = io.MultiWriter(w.facts, ew.Facts())
		} else {
			w.facts = ew.Facts()
		}
	case r.Gzip:
		lines := gzfile.NewWriter(s.out)
		w.lines = lines
		var facts *gzfile.Writer
		if s.facts != nil {
			facts = gzfile.NewWriter(s.facts)
			w.facts = facts
		}
		defer func() {
			ferr := lines.Close()
			if facts != nil {
				ferr = errors.Join(ferr, facts.Close())
			}
			if ferr != nil && err == nil {
				st, err = Stats{FilesFailed: 1}, ferr
			}
		}()
	}
	return sumFile(summer, s, progress, w, wantSum)
}

// sumFile reads the file, its lines and facts to w.
func sumFile(summer *Summer, s *fileSum, progress *Progress, w *writer, wantSum bool) (Stats, error) {
	f, err := os.Open(s.in.Path)
	if err != nil {
		return Stats{FilesFailed: 1}, err
	}
	defer f.Close()
	var rs io.ReadSeeker = f
	if s.in.Offset > 0 {
		rs = io.NewSectionReader(f, s.in.Offset, s.in.Size) // a WACZ member
	}
	cr := &countingReader{f: rs, n: &progress.Bytes}
	if wantSum {
		cr.h = sha256.New()
	}
	st, err := summer.SumFile(cr, s.in.Name, w.write)
	st.Bytes = s.in.Size
	if err == nil {
		// The reader may stop at the last record's end: the rest of the
		// file counts too.
		if _, cerr := io.Copy(io.Discard, cr); cerr == nil {
			s.sha256 = cr.sum(s.in.Size)
		}
	}
	return st, err
}

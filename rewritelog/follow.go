package rewritelog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"warcdedup/manifest"
)

// Catalog is what a log names, read once without keeping its entries: its
// files, runs, and the files with an incomplete block. With it, offsets
// are followed through the log by a Follower, a merge join of lookups
// sorted on file and offset with each run's entries, which the log holds
// in that order: memory does not grow with the entries (a Moves holds
// them, 68 bytes each), only with the files and runs the log names.
type Catalog struct {
	name string
	from int64
	names
	files  []*File // in the order the log first names them
	byRank []*File // in the order of their escaped names
	runs   []runSection
	// incomplete are the files with a block whose entries are missing.
	incomplete map[string]*IncompleteError
	entries    int64
	// Runs are the start times of the runs kept (those with entries, at
	// or after since).
	Runs []time.Time
	// Legacy is true when the log had five-field lines (no digests).
	Legacy bool
}

// runSection is where a kept run's lines are in the log.
type runSection struct {
	start, end int64 // byte offsets, from the catalog's from
	line       int64 // the number of its first line, less one
}

// OpenCatalog reads the log file name from byte offset from on (the
// entries appended since it had that size; 0 for all), keeping the runs
// that started at or after since (every run for the zero time). A log
// shorter than its EndFile records is a *ShortError.
func OpenCatalog(name string, from int64, since time.Time) (*Catalog, error) {
	f, err := openWhole(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &Catalog{name: name, from: from, names: newNames(), incomplete: map[string]*IncompleteError{}}
	marks := &runMarks{r: io.NewSectionReader(f, from, 1<<62)}
	r := NewReader(marks, name)
	r.Incomplete = func(e *IncompleteError) error {
		if !since.IsZero() && (len(r.Runs) == 0 || r.Runs[len(r.Runs)-1].Before(since)) {
			return nil
		}
		if c.incomplete[e.Fixity.File] == nil {
			c.incomplete[e.Fixity.File] = e
		}
		return nil
	}
	kept := map[int]bool{}
	var keptRuns []int // runs of the reader kept, in order
	for {
		e, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !since.IsZero() && r.Runs[e.run].Before(since) {
			continue
		}
		if !kept[e.run] {
			kept[e.run] = true
			keptRuns = append(keptRuns, e.run)
			c.Runs = append(c.Runs, r.Runs[e.run])
		}
		if c.byName[string(e.file)] == nil {
			f := c.add(string(e.file))
			f.order = len(c.files)
			c.files = append(c.files, f)
		}
		c.entries++
	}
	c.Legacy = r.Legacy()
	c.runs = marks.sections(len(r.Runs), keptRuns)
	c.rank()
	return c, nil
}

// rank numbers the files in the byte order of their names as the log
// escapes them, the order of each run's entries.
func (c *Catalog) rank() {
	sorted := slices.Clone(c.files)
	escaped := make(map[*File]string, len(sorted))
	for _, f := range sorted {
		escaped[f] = manifest.EscapeFile(f.Name)
	}
	slices.SortFunc(sorted, func(a, b *File) int { return strings.Compare(escaped[a], escaped[b]) })
	for i, f := range sorted {
		f.rank = i
	}
	c.byRank = sorted
}

// Files are the files the log names, in the order it first names them.
func (c *Catalog) Files() []*File { return c.files }

// Entries is the number of entries kept.
func (c *Catalog) Entries() int { return int(c.entries) }

// Rank is f's place in the order a Follower takes files in.
func (c *Catalog) Rank(f *File) int { return f.rank }

// ByRank returns the file of that Rank, or nil.
func (c *Catalog) ByRank(rank int) *File {
	if rank < 0 || rank >= len(c.byRank) {
		return nil
	}
	return c.byRank[rank]
}

// Order is f's place in Files.
func (c *Catalog) Order(f *File) int { return f.order }

// Incomplete returns the first block of the file whose entries are
// missing, or nil.
func (c *Catalog) Incomplete(name string) error {
	if e := c.incomplete[name]; e != nil {
		return e
	}
	return nil
}

// runMarks notes where the "# run" lines of what is read through it
// start, and their line numbers.
type runMarks struct {
	r         io.Reader
	offset    int64 // of the next byte
	line      int64 // lines begun before the next byte
	lineStart bool  // the next byte starts a line
	matched   int   // bytes of "# run " matched at the start of the line
	marks     []runSection
	started   bool
}

var runPrefix = []byte("# run ")

func (m *runMarks) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if !m.started {
		m.started, m.lineStart = true, true
	}
	for _, b := range p[:n] {
		if m.lineStart {
			m.lineStart, m.matched = false, 0
			m.line++
		}
		if m.matched >= 0 && m.matched < len(runPrefix) {
			if b == runPrefix[m.matched] {
				m.matched++
				if m.matched == len(runPrefix) {
					m.marks = append(m.marks, runSection{start: m.offset - int64(len(runPrefix)) + 1, line: m.line - 1})
				}
			} else {
				m.matched = -1
			}
		}
		if b == '\n' {
			m.lineStart = true
		}
		m.offset++
	}
	return n, err
}

// sections returns where the kept runs (indexes among the reader's runs,
// of which there are runs) are: a run is its "# run" line and what
// follows up to the next; entries before the first are a run of their own.
func (m *runMarks) sections(runs int, kept []int) []runSection {
	all := m.marks
	if runs > len(all) {
		all = append([]runSection{{start: 0, line: 0}}, all...)
	}
	for i := range all {
		all[i].end = m.offset
		if i+1 < len(all) {
			all[i].end = all[i+1].start
		}
	}
	var out []runSection
	for _, k := range kept {
		out = append(out, all[k])
	}
	return out
}

// Follower follows records through the runs of a Catalog's log, as
// Moves.Follow does, reading each run's entries once, in step with the
// lookups: Follow must be called in the order of the files' Rank, and
// within a file in increasing offset order (the order the records keep
// through every run). Close it when done.
type Follower struct {
	c       *Catalog
	f       *os.File
	cursors []*runCursor
	file    *File
	passed  func(*File, Move, int)
}

// Follow returns a Follower of the catalog's log. Each entry of a file
// with Lines above 0 is given to passed (nil: none) once the follower
// has passed it, or at Close, with the number of Follows that landed on
// it (0: unmatched, as Moves.Unmatched gives it).
func (c *Catalog) Follow(passed func(f *File, mv Move, landed int)) (*Follower, error) {
	f, err := os.Open(c.name)
	if err != nil {
		return nil, err
	}
	fw := &Follower{c: c, f: f, passed: passed}
	for i, s := range c.runs {
		r := NewReader(io.NewSectionReader(f, c.from+s.start, s.end-s.start), c.name)
		r.line = s.line
		r.Incomplete = func(*IncompleteError) error { return nil }
		fw.cursors = append(fw.cursors, &runCursor{fw: fw, run: i, r: r})
	}
	return fw, nil
}

// Follow follows the record that started at off in f, length bytes long
// (-1: unknown), as Moves.Follow does.
func (fw *Follower) Follow(f *File, off, length int64, rewrote func(mv Move, off, length int64) error) (int64, int64, error) {
	if f != fw.file {
		if fw.file != nil && f.rank < fw.file.rank {
			return off, length, fmt.Errorf("rewritelog: %s followed after %s: out of order", f.Name, fw.file.Name)
		}
		for _, rc := range fw.cursors {
			if err := rc.seek(f); err != nil {
				return off, length, err
			}
		}
		fw.file = f
	}
	if err := fw.c.Incomplete(f.Name); err != nil {
		return off, length, err
	}
	for _, rc := range fw.cursors {
		newOff, hit, err := rc.follow(off, length)
		if err != nil {
			return off, length, err
		}
		if hit != nil {
			hit.landed++
			if rewrote != nil {
				if err := rewrote(hit.view(rc.run), off, length); err != nil {
					return off, length, err
				}
			}
			if length >= 0 {
				length += hit.newLen - hit.oldLen
			}
		}
		off = newOff
	}
	return off, length, nil
}

// Close passes the entries of the last file followed.
func (fw *Follower) Close() error {
	var err error
	for _, rc := range fw.cursors {
		if e := rc.leave(); err == nil {
			err = e
		}
	}
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runCursor reads one run's entries of the file followed: the last at or
// before the offset followed, and up to two after it.
type runCursor struct {
	fw    *Follower
	run   int
	r     *Reader
	file  *File
	prev  *cursorEntry
	ahead []*cursorEntry
	// next is the first entry read of a later file, held; eof: no more.
	next *cursorEntry
	eof  bool
	last int64 // the offset followed last
	free []*cursorEntry
	// window is prev and the entries ahead as a Block follows them,
	// windowOf the entries they are.
	window   []edit
	windowOf []*cursorEntry
}

// cursorEntry is an entry as a cursor holds it.
type cursorEntry struct {
	edit
	moveMeta
	file   *File
	digest []byte
	landed int // Follows that landed on it
}

func (e *cursorEntry) view(run int) Move {
	v := Move{OldOffset: e.oldOff, OldLength: e.oldLen, NewOffset: e.newOff, NewLength: e.newLen, Kind: e.kind, Member: e.member, Run: run, Line: e.line}
	if len(e.digest) > 0 {
		v.PayloadDigest = bytes.Clone(e.digest)
	}
	return v
}

// read reads the run's next entry, or nil at its end.
func (rc *runCursor) read() (*cursorEntry, error) {
	if rc.eof {
		return nil, nil
	}
	e, err := rc.r.next()
	if errors.Is(err, io.EOF) {
		rc.eof = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ce := &cursorEntry{}
	if n := len(rc.free); n > 0 {
		ce, rc.free = rc.free[n-1], rc.free[:n-1]
	}
	*ce = cursorEntry{edit: edit{oldOff: e.oldOff, oldLen: e.oldLen, newOff: e.newOff, newLen: e.newLen}, moveMeta: moveMeta{line: e.line, kind: e.kind, member: e.member != nil},
		file: rc.fw.c.byName[string(e.file)], digest: append(ce.digest[:0], e.digest...)}
	if ce.file == nil {
		return nil, fmt.Errorf("%s: line %d: %s is not in the log's catalog: the log changed while it was read", rc.fw.c.name, e.line, e.file)
	}
	return ce, nil
}

// done passes an entry of a file.
func (rc *runCursor) done(e *cursorEntry) {
	if e.file.Lines > 0 && rc.fw.passed != nil {
		rc.fw.passed(e.file, e.view(rc.run), e.landed)
	}
	rc.free = append(rc.free, e)
}

// leave passes every entry of the current file.
func (rc *runCursor) leave() error {
	if rc.prev != nil {
		rc.done(rc.prev)
		rc.prev = nil
	}
	for _, e := range rc.ahead {
		rc.done(e)
	}
	rc.ahead = rc.ahead[:0]
	for rc.file != nil {
		e, err := rc.readOf()
		if err != nil || e == nil {
			return err
		}
		rc.done(e)
	}
	return nil
}

// readOf reads the next entry of the current file, or nil.
func (rc *runCursor) readOf() (*cursorEntry, error) {
	if rc.next == nil {
		e, err := rc.read()
		if err != nil || e == nil {
			return nil, err
		}
		rc.next = e
	}
	if rc.next.file != rc.file {
		return nil, nil
	}
	e := rc.next
	rc.next = nil
	return e, nil
}

// seek passes the entries of the files before f.
func (rc *runCursor) seek(f *File) error {
	if err := rc.leave(); err != nil {
		return err
	}
	rc.file, rc.last = f, 0
	for {
		if rc.next == nil {
			e, err := rc.read()
			if err != nil || e == nil {
				return err
			}
			rc.next = e
		}
		if rc.next.file.rank >= f.rank {
			return nil
		}
		rc.done(rc.next)
		rc.next = nil
	}
}

// peek returns the i-th entry of the file after prev, or nil.
func (rc *runCursor) peek(i int) (*cursorEntry, error) {
	for len(rc.ahead) <= i {
		e, err := rc.readOf()
		if err != nil || e == nil {
			return nil, err
		}
		rc.ahead = append(rc.ahead, e)
	}
	return rc.ahead[i], nil
}

// follow follows the record at off, length bytes long, through the run:
// where it starts after it, and the entry that rewrote it, if any.
func (rc *runCursor) follow(off, length int64) (int64, *cursorEntry, error) {
	if off < rc.last {
		return off, nil, fmt.Errorf("rewritelog: %s: offset %d followed after %d: out of order", rc.file.Name, off, rc.last)
	}
	rc.last = off
	for {
		e, err := rc.peek(0)
		if err != nil {
			return off, nil, err
		}
		if e == nil || e.oldOff > off {
			break
		}
		if rc.prev != nil {
			rc.done(rc.prev)
		}
		rc.prev = e
		rc.ahead = rc.ahead[1:]
	}
	// The entry at or before off and the two after it are all a Block
	// needs to follow the record.
	rc.window, rc.windowOf = rc.window[:0], rc.windowOf[:0]
	if rc.prev != nil {
		rc.window, rc.windowOf = append(rc.window, rc.prev.edit), append(rc.windowOf, rc.prev)
	}
	ahead := 1
	if length > 0 {
		ahead = 2 // the range may cover the next entry's record
	}
	for k := range ahead {
		e, err := rc.peek(k)
		if err != nil {
			return off, nil, err
		}
		if e == nil {
			break
		}
		rc.window, rc.windowOf = append(rc.window, e.edit), append(rc.windowOf, e)
	}
	moved, i, fault := Block{edits: rc.window}.land(off, length)
	switch fault {
	case inRecord:
		return off, nil, &InsideError{Offset: off, Move: rc.windowOf[i].view(rc.run)}
	case coverHead:
		return off, nil, &CoverError{Offset: off, Length: length, Move: rc.windowOf[i].view(rc.run)}
	}
	if i < 0 {
		return moved, nil, nil
	}
	return moved, rc.windowOf[i], nil
}

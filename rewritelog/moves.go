package rewritelog

import (
	"bufio"
	"bytes"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"
)

// Moves is a log held in memory to follow offsets through it: 48 bytes
// per entry plus its payload digest (20 bytes for a base32 sha1, else its
// text), whatever the size of what is looked up in it. The entries'
// original members (field 10, about 80 bytes each) are not held: they are
// read again from the log when a file is restored (OriginalMembers).
type Moves struct {
	// edits are the entries' places, meta the rest of each; a span of
	// the edits is a Block.
	edits   []edit
	meta    []moveMeta
	digests []byte
	files   []*File
	names
	hit []uint64 // a bit per move: some lookup landed on it
	// versions are the "# file" lines of each file's last replacement
	// (dry runs left out): the version of the file the log describes.
	versions map[string]Fixity
	// incomplete are the files with a block whose entries are missing.
	incomplete map[string]*IncompleteError
	// Runs are the start times of the runs kept.
	Runs []time.Time
	// Legacy is true when the log had five-field lines (no digests).
	Legacy bool
	// fixes are the spans' "# file" lines.
	fixes []spanFix
	// reread opens the log again, to read entries of it a second time
	// (OriginalMembers); nil if it cannot be. The offsets of the spans
	// are in what it gives.
	reread func() (io.ReaderAt, func(), error)
}

// moveMeta is what an entry says besides where its record went.
type moveMeta struct {
	line   int64
	digOff uint32
	digLen uint16 // sha1Binary: 20 bytes of a "sha1:" base32 digest
	kind   Kind
	member bool // the entry has an original member (field 10)
}

const sha1Binary = 0xffff

// File is a file the log names.
type File struct {
	Name  string // relative, unescaped
	spans []runSpan
	// Lines counts what a caller found pointing into the file (index
	// lines); Unmatched reports only for files with some.
	Lines int64
	// In a Catalog: its place in the byte order of escaped names (the
	// order of a run's entries), and in the order the log names files.
	rank, order int
}

type runSpan struct {
	run        int
	first, end int
	pos        int64 // offset in the log of its first entry's line
	fix        int32 // its "# file" lines in Moves.fixes; -1 if none
}

// spanFix is what the "# file" lines of a span say of its file: the size
// and sum before the first of them and after the last.
type spanFix struct {
	oldSize, newSize int64
	oldSum, newSum   string
}

type resolution struct {
	f   *File
	err error
}

// Move is what one entry of the log did to a record.
type Move struct {
	OldOffset, OldLength, NewOffset, NewLength int64
	Kind                                       Kind
	// PayloadDigest of a revisit as written, "" when unknown.
	PayloadDigest []byte
	// Member says that the entry describes the gzip member the revisit
	// replaced (field 10): OriginalMembers reads it.
	Member bool
	Run    int
	Line   int64 // in the log
}

// LoadFile reads the log file name into memory (see Load), counting its
// lines first so that memory holds the entries and no more. A log shorter
// than its EndFile records is a *ShortError.
func LoadFile(name string, since time.Time) (*Moves, error) {
	f, err := openWhole(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	m, err := load(NewReader(f, name), since, lines)
	if m != nil {
		m.reread = reopen(name, 0)
	}
	return m, err
}

// reopen returns a function that opens the log file name again, its
// offsets from base on.
func reopen(name string, base int64) func() (io.ReaderAt, func(), error) {
	return func() (io.ReaderAt, func(), error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		return io.NewSectionReader(f, base, 1<<62), func() { f.Close() }, nil
	}
}

// LoadFileFrom is LoadFile of the entries from byte offset from of the
// log file on: those appended since it had that size.
func LoadFileFrom(name string, from int64) (*Moves, error) {
	f, err := openWhole(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	section := io.NewSectionReader(f, from, 1<<62)
	lines, err := countLines(section)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := section.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	m, err := load(NewReader(section, name), time.Time{}, lines)
	if m != nil {
		m.reread = reopen(name, from)
	}
	return m, err
}

// openWhole opens the log file name, checked against its EndFile.
func openWhole(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = CheckEnd(name, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Load reads the log into memory, keeping the runs that started at or
// after since (every run for the zero time). A block whose entries are
// missing is no error here: the file's offsets cannot be followed, which
// Live and Incomplete say of it (r.Incomplete is replaced). Its original
// members can be read again (OriginalMembers) if r reads a file, or
// something else that can be read at an offset (io.ReaderAt).
func Load(r *Reader, since time.Time) (*Moves, error) {
	m, err := load(r, since, 0)
	if m == nil {
		return m, err
	}
	switch src := r.src.(type) {
	case *os.File:
		m.reread = reopen(src.Name(), r.base)
	case io.ReaderAt:
		m.reread = func() (io.ReaderAt, func(), error) {
			return io.NewSectionReader(src, r.base, 1<<62), func() {}, nil
		}
	}
	return m, err
}

func load(r *Reader, since time.Time, sizeHint int) (*Moves, error) {
	return loadOf(r, since, sizeHint, nil)
}

// loadOf is load of the entries of the files keep holds (relative names;
// nil: every file), the whole log read and checked all the same.
func loadOf(r *Reader, since time.Time, sizeHint int, keep map[string]bool) (*Moves, error) {
	ld := &loader{r: r, since: since, keep: keep, fixity: r.Fixity, curRun: -1, kept: map[int]int{},
		m: &Moves{names: newNames(),
			edits: make([]edit, 0, sizeHint), meta: make([]moveMeta, 0, sizeHint), digests: make([]byte, 0, sizeHint*20),
			versions: map[string]Fixity{}, incomplete: map[string]*IncompleteError{}}}
	r.Fixity = ld.fixityLine
	r.Incomplete = ld.incompleteBlock
	for {
		e, err := r.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if err := ld.entry(e); err != nil {
			return nil, err
		}
	}
	m := ld.m
	m.Legacy = r.Legacy()
	m.hit = make([]uint64, (len(m.edits)+63)/64)
	return m, nil
}

// loader builds the Moves of a log as its reader reads it: the "# file"
// lines and the incomplete blocks through the reader's callbacks, each
// entry into the span of its file and run.
type loader struct {
	r      *Reader
	since  time.Time
	keep   map[string]bool
	fixity func(Fixity) error // the reader's own callback, still called
	m      *Moves
	// The block being read, whose "# file" line its first entry's span
	// takes (see Undone).
	block      Fixity
	blockFresh bool
	cur        *File       // the file whose span the last entry went to
	curRun     int         // and its run, in m.Runs
	kept       map[int]int // run in the log -> index in m.Runs
}

// fixityLine notes the "# file" line of a block of a file kept, and the
// version the file has after it.
func (ld *loader) fixityLine(f Fixity) error {
	if ld.keep != nil && !ld.keep[f.File] {
		ld.blockFresh = false
	} else {
		ld.block, ld.blockFresh = f, true
		if f.NewSum != "-" {
			ld.m.versions[f.File] = f
		}
	}
	if ld.fixity != nil {
		return ld.fixity(f)
	}
	return nil
}

// incompleteBlock keeps the first block of a file kept, in a run kept,
// whose entries are missing.
func (ld *loader) incompleteBlock(e *IncompleteError) error {
	if ld.keep != nil && !ld.keep[e.Fixity.File] {
		return nil
	}
	// The block's run is the reader's last (a block ends before the
	// next "# run" line is read).
	runs := ld.r.Runs
	if !ld.since.IsZero() && (len(runs) == 0 || runs[len(runs)-1].Before(ld.since)) {
		return nil
	}
	if ld.m.incomplete[e.Fixity.File] == nil {
		ld.m.incomplete[e.Fixity.File] = e
	}
	return nil
}

// entry adds e, if its file and run are kept, to the span of its file
// and run.
func (ld *loader) entry(e *rawEntry) error {
	if ld.keep != nil && !ld.keep[string(e.file)] {
		return nil
	}
	if !ld.since.IsZero() && ld.r.Runs[e.run].Before(ld.since) {
		return nil
	}
	ld.toSpan(e, ld.runOf(e.run))
	ld.takeBlock()
	mv, err := ld.meta(e)
	if err != nil {
		return err
	}
	m := ld.m
	m.edits = append(m.edits, edit{oldOff: e.oldOff, oldLen: e.oldLen, newOff: e.newOff, newLen: e.newLen})
	m.meta = append(m.meta, mv)
	ld.cur.spans[len(ld.cur.spans)-1].end = len(m.edits)
	return nil
}

// runOf is the index in m.Runs of the log's run, added at its first
// entry kept.
func (ld *loader) runOf(logRun int) int {
	run, ok := ld.kept[logRun]
	if !ok {
		run = len(ld.m.Runs)
		ld.kept[logRun] = run
		ld.m.Runs = append(ld.m.Runs, ld.r.Runs[logRun])
	}
	return run
}

// toSpan makes ld.cur the file of e, with a new span when e starts
// another file or run than the entry before.
func (ld *loader) toSpan(e *rawEntry, run int) {
	if ld.cur != nil && ld.cur.Name == string(e.file) && ld.curRun == run {
		return
	}
	m := ld.m
	ld.cur = m.byName[string(e.file)]
	if ld.cur == nil {
		ld.cur = m.add(string(e.file))
		m.files = append(m.files, ld.cur)
	}
	ld.cur.spans = append(ld.cur.spans, runSpan{run: run, first: len(m.edits), end: len(m.edits), pos: e.pos, fix: -1})
	ld.curRun = run
}

// takeBlock gives the current span the sizes and sums of the block being
// read, at its first entry: the span's first block, or a second one of
// the same run (whose new size and sum are then the span's).
func (ld *loader) takeBlock() {
	if !ld.blockFresh || ld.block.File != ld.cur.Name {
		return
	}
	ld.blockFresh = false
	m := ld.m
	s := &ld.cur.spans[len(ld.cur.spans)-1]
	if s.fix < 0 {
		s.fix = int32(len(m.fixes))
		m.fixes = append(m.fixes, spanFix{oldSize: ld.block.OldSize, oldSum: ld.block.OldSum})
	}
	sf := &m.fixes[s.fix]
	sf.newSize, sf.newSum = ld.block.NewSize, ld.block.NewSum
}

// meta is what the Moves keep of e besides its offsets, its digest
// appended to m.digests (a SHA-1 in base 32 as its 20 bytes).
func (ld *loader) meta(e *rawEntry) (moveMeta, error) {
	mv := moveMeta{line: e.line, kind: e.kind, member: e.member != nil}
	d := e.digest
	if len(d) == 0 {
		return mv, nil
	}
	m := ld.m
	if len(m.digests)+len(d) > 0xffffffff || len(d) >= sha1Binary {
		return mv, fmt.Errorf("%s: line %d: digest too long, or too many", ld.r.name, e.line)
	}
	mv.digOff = uint32(len(m.digests))
	if b, ok := sha1Base32(d); ok {
		mv.digLen = sha1Binary
		m.digests = append(m.digests, b[:]...)
	} else {
		mv.digLen = uint16(len(d))
		m.digests = append(m.digests, d...)
	}
	return mv, nil
}

// Version returns the "# file" line of the last replacement of the file
// (a relative name) the log records: the size and sum the file has if
// nothing but the runs logged changed it. False if the log has none.
func (m *Moves) Version(name string) (Fixity, bool) {
	f, ok := m.versions[name]
	return f, ok
}

// Incomplete returns the first block of the file whose entries are
// missing, or nil.
func (m *Moves) Incomplete(name string) error {
	if e := m.incomplete[name]; e != nil {
		return e
	}
	return nil
}

// Entries is the number of entries kept.
func (m *Moves) Entries() int { return len(m.edits) }

// block is the span s's entries as a Block.
func (m *Moves) block(s runSpan) Block { return Block{edits: m.edits[s.first:s.end]} }

// Files are the files the log names, in the order it first names them.
func (m *Moves) Files() []*File { return m.files }

// Lookup returns the file of the log with that relative name, or nil.
func (m *Moves) Lookup(name string) *File { return m.byName[name] }

// names finds the files of a log by the names indexes give them.
type names struct {
	byName map[string]*File
	byBase map[string][]*File
	// resolved caches the answer for each file name looked up.
	resolved map[string]resolution
}

func newNames() names {
	return names{byName: map[string]*File{}, byBase: map[string][]*File{}, resolved: map[string]resolution{}}
}

// add adds a file of the name.
func (n *names) add(name string) *File {
	f := &File{Name: name}
	n.byName[name] = f
	base := path.Base(name)
	n.byBase[base] = append(n.byBase[base], f)
	return f
}

// Resolve finds the file of the log that name (a file name in an index)
// is: the same relative name; else the longest suffix of name after a "/"
// that is one (an index naming files by absolute path, or by URL); else a
// file with the same base name (indexers write base names), if only one
// has it. It returns nil, nil for a file the log does not name.
func (n *names) Resolve(name []byte) (*File, error) {
	if r, ok := n.resolved[string(name)]; ok {
		return r.f, r.err
	}
	r := n.resolve(string(name))
	n.resolved[string(name)] = r
	return r.f, r.err
}

func (n *names) resolve(name string) resolution {
	if f := n.byName[name]; f != nil {
		return resolution{f: f}
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			if f := n.byName[name[i+1:]]; f != nil {
				return resolution{f: f}
			}
		}
	}
	switch fs := n.byBase[path.Base(name)]; len(fs) {
	case 0:
		return resolution{}
	case 1:
		return resolution{f: fs[0]}
	default:
		var names []string
		for _, f := range fs {
			names = append(names, f.Name)
		}
		return resolution{err: fmt.Errorf("file name %q: the log names %d files of that name (%v)", name, len(fs), names)}
	}
}

// InsideError is an offset that falls inside a record that the log
// rewrote, not at its start.
type InsideError struct {
	Offset int64
	Move   Move
}

func (e *InsideError) Error() string {
	return fmt.Sprintf("offset %d falls inside the record at %d+%d that log line %d rewrote", e.Offset, e.Move.OldOffset, e.Move.OldLength, e.Move.Line)
}

// Follow follows the record that started at off in f, length bytes long
// (-1: unknown), before the first run kept, through every run, and
// returns where it starts now and its length (an *IncompleteError for a
// file with a block whose entries are missing). A record that an entry
// rewrote gets the entry's new offset, and its length moves by what the
// entry says it shrank or grew (so it stays whatever the caller's length
// counts: an indexer may leave out the CRLF CRLF after an uncompressed
// record); every other record moves by what the entries before it saved.
//
// A range that ends where a rewritten record ends, and holds no other
// rewritten record, is that record's: warcio.js gives the record after a
// dns: response in NetarchiveSuite's WARC files the dns: record's offset
// and the length of both. Its offset moves as the records before it.
//
// For each entry that rewrote the record, in run order, Follow calls
// rewrote with the entry and the record's offset and length before it,
// and marks the entry as matched.
func (m *Moves) Follow(f *File, off, length int64, rewrote func(mv Move, off, length int64) error) (int64, int64, error) {
	if err := m.Incomplete(f.Name); err != nil {
		return off, length, err
	}
	for _, s := range f.spans {
		b := m.block(s)
		newOff, hit, fault := b.land(off, length)
		switch fault {
		case inRecord:
			return off, length, &InsideError{Offset: off, Move: m.view(s.first+hit, s.run)}
		case coverHead:
			return off, length, &CoverError{Offset: off, Length: length, Move: m.view(s.first+hit, s.run)}
		}
		if hit >= 0 {
			id := s.first + hit
			m.hit[id/64] |= 1 << (id % 64)
			if rewrote != nil {
				if err := rewrote(m.view(id, s.run), off, length); err != nil {
					return off, length, err
				}
			}
			if length >= 0 {
				e := &b.edits[hit]
				length += e.newLen - e.oldLen
			}
		}
		off = newOff
	}
	return off, length, nil
}

// CoverError is an index range that holds the start of a rewritten record
// without being that record's.
type CoverError struct {
	Offset, Length int64
	Move           Move
}

func (e *CoverError) Error() string {
	return fmt.Sprintf("the range %d+%d holds the start of the record at %d+%d that log line %d rewrote, and does not end with it", e.Offset, e.Length, e.Move.OldOffset, e.Move.OldLength, e.Move.Line)
}

// view is mv as a Move. Its PayloadDigest is a slice of its own, or of
// m.digests, never rewritten: Moves is read by the restores of several
// files at once, and a Move may be kept after the next view.
func (m *Moves) view(id, run int) Move {
	e, mv := &m.edits[id], &m.meta[id]
	v := Move{OldOffset: e.oldOff, OldLength: e.oldLen, NewOffset: e.newOff, NewLength: e.newLen, Kind: mv.kind, Member: mv.member, Run: run, Line: mv.line}
	switch mv.digLen {
	case 0:
	case sha1Binary:
		v.PayloadDigest = base32.StdEncoding.AppendEncode(append(make([]byte, 0, 37), "sha1:"...), m.digests[mv.digOff:mv.digOff+20])
	default:
		v.PayloadDigest = m.digests[mv.digOff : mv.digOff+uint32(mv.digLen) : mv.digOff+uint32(mv.digLen)]
	}
	return v
}

// sha1Base32 decodes a "sha1:" digest of 32 upper-case base32 letters,
// the form nearly every WARC-Payload-Digest has, into its 20 bytes.
func sha1Base32(d []byte) ([20]byte, bool) {
	var b [20]byte
	if len(d) != 37 || string(d[:5]) != "sha1:" {
		return b, false
	}
	for i := 5; i < len(d); i++ {
		if c := d[i]; !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return b, false
		}
	}
	n, err := base32.StdEncoding.Decode(b[:], d[5:])
	return b, err == nil && n == 20
}

// Unmatched calls fn for every entry no Follow landed on, of the files
// with Lines above 0, in log order within each file.
func (m *Moves) Unmatched(fn func(f *File, mv Move)) {
	for _, f := range m.files {
		if f.Lines == 0 {
			continue
		}
		for _, s := range f.spans {
			for id := s.first; id < s.end; id++ {
				if m.hit[id/64]&(1<<(id%64)) == 0 {
					fn(f, m.view(id, s.run))
				}
			}
		}
	}
}

// Live calls fn, in log order, for each revisit of f that the log's runs
// wrote and no later run rewrote again (undid): where it stands now, after
// every run kept, and the entry that wrote it.
func (m *Moves) Live(f *File, fn func(mv Move, off int64) error) error {
	if err := m.Incomplete(f.Name); err != nil {
		return err
	}
	for si, s := range f.spans {
		for id := s.first; id < s.end; id++ {
			mv := &m.meta[id]
			if mv.kind != Revisit {
				continue
			}
			off, live, err := m.after(f.spans[si+1:], m.edits[id].newOff, m.edits[id].newLen)
			if err != nil {
				return fmt.Errorf("%s: the revisit log line %d wrote: %w", f.Name, mv.line, err)
			}
			if live {
				if err := fn(m.view(id, s.run), off); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// after follows the record at off, length bytes long, through the runs of
// spans: where it stands after them, or false if one of them rewrote it.
func (m *Moves) after(spans []runSpan, off, length int64) (int64, bool, error) {
	for _, s := range spans {
		b := m.block(s)
		moved, i, pos := b.step(off)
		if j := i + 1; j < b.Len() && b.edits[j].oldOff < off+length {
			return 0, false, &CoverError{Offset: off, Length: length, Move: m.view(s.first+j, s.run)}
		}
		switch pos {
		case at:
			return 0, false, nil
		case inside:
			return 0, false, &InsideError{Offset: off, Move: m.view(s.first+i, s.run)}
		}
		off = moved
	}
	return off, true, nil
}

// OriginalMembers reads again from the log the original members (field
// 10) of f's entries at the log lines given, which must be entries whose
// Move has Member, and calls fn with each, in log order. Only the spans of
// the file that hold one are read. An entry found there that is not the
// one loaded (the log changed since) is an error.
func (m *Moves) OriginalMembers(f *File, lines []int64, fn func(line int64, member string) error) error {
	if len(lines) == 0 {
		return nil
	}
	want := make(map[int64]bool, len(lines))
	for _, l := range lines {
		want[l] = true
	}
	if m.reread == nil {
		return errors.New("the rewrite log was not read from a file: its original members cannot be read again")
	}
	var src io.ReaderAt
	for _, s := range f.spans {
		ms := m.meta[s.first:s.end]
		needed := 0
		for i := range ms {
			if ms[i].member && want[ms[i].line] {
				needed++
			}
		}
		if needed == 0 {
			continue
		}
		if src == nil {
			var done func()
			var err error
			if src, done, err = m.reread(); err != nil {
				return err
			}
			defer done()
		}
		if err := m.rereadSpan(src, s, want, needed, fn); err != nil {
			return fmt.Errorf("reading the original members of %s again: %w", f.Name, err)
		}
	}
	return nil
}

// rereadSpan reads the lines of the span s's entries from the log src and
// gives fn the members wanted of them (needed in all).
func (m *Moves) rereadSpan(src io.ReaderAt, s runSpan, want map[int64]bool, needed int, fn func(int64, string) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(src, s.pos, 1<<62), 64<<10)
	ms, es := m.meta[s.first:s.end], m.edits[s.first:s.end]
	// A span's entries are consecutive lines of the log, but for "# file"
	// lines and comments between them; they are matched by order, not by
	// line number (a log grouped by file, ByFile, keeps the log's numbers
	// of lines that are not consecutive in what it reads).
	for i := 0; i < len(ms) && needed > 0; {
		mv, ed := &ms[i], &es[i]
		text, err := br.ReadBytes('\n')
		if err != nil && (err != io.EOF || len(text) == 0) {
			return fmt.Errorf("line %d: %w", mv.line, noEOF(err))
		}
		text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		i++
		e, err := ParseEntry(text)
		if err != nil {
			return fmt.Errorf("line %d: %w", mv.line, err)
		}
		if e.OldOffset != ed.oldOff || e.OldLength != ed.oldLen || e.NewOffset != ed.newOff || e.NewLength != ed.newLen || e.Kind != mv.kind || (e.OriginalMember != "") != mv.member {
			return fmt.Errorf("line %d is not the entry read there before: the log changed", mv.line)
		}
		if mv.member && want[mv.line] {
			needed--
			if err := fn(mv.line, e.OriginalMember); err != nil {
				return err
			}
		}
	}
	if needed > 0 {
		return errors.New("the log ends before its entries: the log changed")
	}
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Undoing is what the log says of a file its last replacements restored
// records of (an undo): see Undone.
type Undoing struct {
	// Before is the "# file" line of the earliest run whose revisits
	// they restored: its OldSize and OldSum are the file before it.
	Before Fixity
	// Restores is the replacements that restored records since that run
	// (one, when one undo restored them all).
	Restores int
	// Unbroken says that each replacement from that run on started from
	// the version the one before it left: nothing else changed the file
	// in between.
	Unbroken bool
}

// Undone says what the file was before the runs whose revisits the
// log's last replacements of it restored: the runs since it last had no
// revisit of the log's (going back from the end, the replacements that
// restored records, then those that wrote revisits only). False if its
// last replacement restored nothing, or the log has no "# file" line of
// that run.
func (m *Moves) Undone(name string) (Undoing, bool) {
	f := m.byName[name]
	if f == nil {
		return Undoing{}, false
	}
	restores := func(s runSpan) bool {
		for _, mv := range m.meta[s.first:s.end] {
			if mv.kind == Restored {
				return true
			}
		}
		return false
	}
	i := len(f.spans)
	for i > 0 && restores(f.spans[i-1]) {
		i--
	}
	last := i
	if last == len(f.spans) {
		return Undoing{}, false // the last replacement restored nothing
	}
	for i > 0 && !restores(f.spans[i-1]) {
		i--
	}
	if i == last || f.spans[i].fix < 0 {
		return Undoing{}, false
	}
	sf := m.fixes[f.spans[i].fix]
	u := Undoing{Before: Fixity{File: name, OldSize: sf.oldSize, OldSum: sf.oldSum, NewSize: sf.newSize, NewSum: sf.newSum},
		Restores: len(f.spans) - last, Unbroken: true}
	for j := i + 1; j < len(f.spans); j++ {
		if f.spans[j].fix < 0 || f.spans[j-1].fix < 0 {
			u.Unbroken = false
			break
		}
		prev, next := m.fixes[f.spans[j-1].fix], m.fixes[f.spans[j].fix]
		if prev.newSum == "-" || next.oldSize != prev.newSize || next.oldSum != prev.newSum {
			u.Unbroken = false
			break
		}
	}
	return u, true
}

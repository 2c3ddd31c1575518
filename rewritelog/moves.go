package rewritelog

import (
	"errors"
	"fmt"
	"io"
	"path"
	"time"
)

// Moves is a log held in memory to follow offsets through it: about 48
// bytes per entry plus its payload digest (~37 bytes for sha1), whatever
// the size of what is looked up in it.
type Moves struct {
	moves   []move
	digests []byte
	files   []*File
	byName  map[string]*File
	byBase  map[string][]*File
	// resolved caches the answer for each file name looked up.
	resolved map[string]resolution
	hit      []uint64 // a bit per move: some lookup landed on it
	// Runs are the start times of the runs kept.
	Runs []time.Time
	// Legacy is true when the log had five-field lines (no digests).
	Legacy bool
}

type move struct {
	oldOff, oldLen, newOff, newLen int64
	line                           int64
	digOff                         uint32
	digLen                         uint16
	kind                           Kind
}

// File is a file the log names.
type File struct {
	Name  string // relative, unescaped
	spans []runSpan
	// Lines counts what a caller found pointing into the file (index
	// lines); Unmatched reports only for files with some.
	Lines int64
}

type runSpan struct {
	run        int
	first, end int
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
	Run           int
	Line          int64 // in the log
}

// Load reads the log into memory, keeping the runs that started at or
// after since (every run for the zero time).
func Load(r *Reader, since time.Time) (*Moves, error) {
	m := &Moves{byName: map[string]*File{}, byBase: map[string][]*File{}, resolved: map[string]resolution{}}
	var cur *File
	curRun := -1
	keep := map[int]int{} // run in the log -> index in m.Runs
	for {
		e, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if !since.IsZero() && r.Runs[e.Run].Before(since) {
			continue
		}
		run, ok := keep[e.Run]
		if !ok {
			run = len(m.Runs)
			keep[e.Run] = run
			m.Runs = append(m.Runs, r.Runs[e.Run])
		}
		if cur == nil || cur.Name != e.File || curRun != run {
			cur = m.byName[e.File]
			if cur == nil {
				cur = &File{Name: e.File}
				m.byName[e.File] = cur
				base := path.Base(e.File)
				m.byBase[base] = append(m.byBase[base], cur)
				m.files = append(m.files, cur)
			}
			cur.spans = append(cur.spans, runSpan{run: run, first: len(m.moves), end: len(m.moves)})
			curRun = run
		}
		mv := move{oldOff: e.OldOffset, oldLen: e.OldLength, newOff: e.NewOffset, newLen: e.NewLength, line: e.Line, kind: e.Kind}
		if d := e.PayloadDigest; d != "" {
			if len(d) > 0xffff || len(m.digests)+len(d) > 0xffffffff {
				return nil, fmt.Errorf("%s: line %d: digest too long, or too many", r.name, e.Line)
			}
			mv.digOff, mv.digLen = uint32(len(m.digests)), uint16(len(d))
			m.digests = append(m.digests, d...)
		}
		m.moves = append(m.moves, mv)
		cur.spans[len(cur.spans)-1].end = len(m.moves)
	}
	m.Legacy = r.Legacy()
	m.hit = make([]uint64, (len(m.moves)+63)/64)
	return m, nil
}

// Entries is the number of entries kept.
func (m *Moves) Entries() int { return len(m.moves) }

// Files are the files the log names, in the order it first names them.
func (m *Moves) Files() []*File { return m.files }

// Resolve finds the file of the log that name (a file name in an index)
// is: the same relative name; else the longest suffix of name after a "/"
// that is one (an index naming files by absolute path, or by URL); else a
// file with the same base name (indexers write base names), if only one
// has it. It returns nil, nil for a file the log does not name.
func (m *Moves) Resolve(name []byte) (*File, error) {
	if r, ok := m.resolved[string(name)]; ok {
		return r.f, r.err
	}
	r := m.resolve(string(name))
	m.resolved[string(name)] = r
	return r.f, r.err
}

func (m *Moves) resolve(name string) resolution {
	if f := m.byName[name]; f != nil {
		return resolution{f: f}
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			if f := m.byName[name[i+1:]]; f != nil {
				return resolution{f: f}
			}
		}
	}
	switch fs := m.byBase[path.Base(name)]; len(fs) {
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
// returns where it starts now and its length. A record that an entry
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
	for _, s := range f.spans {
		ms := m.moves[s.first:s.end]
		// The last entry at or before off.
		lo, hi := 0, len(ms)
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if ms[mid].oldOff <= off {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		i := lo - 1
		var hit *move
		newOff := off
		if i >= 0 {
			mv := &ms[i]
			switch {
			case mv.oldOff == off:
				hit, newOff = mv, mv.newOff
			case off < mv.oldOff+mv.oldLen:
				return off, length, &InsideError{Offset: off, Move: m.view(mv, s.run)}
			default:
				newOff += mv.newOff + mv.newLen - mv.oldOff - mv.oldLen
			}
		}
		if j := i + 1; hit == nil && length > 0 && j < len(ms) && ms[j].oldOff < off+length {
			mv := &ms[j]
			if end := mv.oldOff + mv.oldLen; end < off+length || end > off+length+4 || j+1 < len(ms) && ms[j+1].oldOff < off+length {
				return off, length, &CoverError{Offset: off, Length: length, Move: m.view(mv, s.run)}
			}
			hit = mv
			i = j
		}
		if hit != nil {
			id := s.first + i
			m.hit[id/64] |= 1 << (id % 64)
			if rewrote != nil {
				if err := rewrote(m.view(hit, s.run), off, length); err != nil {
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

// CoverError is an index range that holds the start of a rewritten record
// without being that record's.
type CoverError struct {
	Offset, Length int64
	Move           Move
}

func (e *CoverError) Error() string {
	return fmt.Sprintf("the range %d+%d holds the start of the record at %d+%d that log line %d rewrote, and does not end with it", e.Offset, e.Length, e.Move.OldOffset, e.Move.OldLength, e.Move.Line)
}

func (m *Moves) view(mv *move, run int) Move {
	v := Move{OldOffset: mv.oldOff, OldLength: mv.oldLen, NewOffset: mv.newOff, NewLength: mv.newLen, Kind: mv.kind, Run: run, Line: mv.line}
	if mv.digLen > 0 {
		v.PayloadDigest = m.digests[mv.digOff : mv.digOff+uint32(mv.digLen) : mv.digOff+uint32(mv.digLen)]
	}
	return v
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
					fn(f, m.view(&m.moves[id], s.run))
				}
			}
		}
	}
}

package rewritelog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"time"

	"warcdedup/internal/syssort"
)

// Grouped is a log sorted on file by the system sort (SortByFile), to be
// read file by file (Open) in the byte order of the escaped names: a
// merge join with a sorted list of files holds one file's entries at a
// time, not the log's (Moves holds about 68 bytes an entry).
//
// Each line of it is the escaped file name, the line's number in the log
// (syssort.Num) and the line, so that a file's lines keep their order
// and every error names the log's line. A file's lines are its entries,
// its "# file" lines, each "# run" line before its first line of that
// run, and a "#" where a comment of the log closed one of its blocks:
// read alone they are a log of the file that says of it what the whole
// log says (Moves of the file's group answer Version, Lookup, Live,
// Incomplete, Undone and OriginalMembers as those of the whole log).
type Grouped struct {
	name string
	file *syssort.File
	// tagged is what file was sorted from, while file was sorted in
	// memory: file's lines are then its bytes, which the sort's Budget
	// counts as its own, so it goes after file. (On disk, it went at
	// once: a second copy of the log.)
	tagged *syssort.File
}

// SortByFile reads the log file name (checked against its EndFile, as
// LoadFile does) and sorts its lines on file with s. What its groups
// cannot check alone is checked here: an entry of another file inside a
// block, files out of order within a run.
func SortByFile(ctx context.Context, name string, s syssort.Sorter) (*Grouped, error) {
	f, err := openWhole(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tagged, _ := s.Create("rewrite-log-by-file")
	t := tagger{out: tagged, name: name}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if err := t.line(sc.Bytes()); err != nil {
			tagged.Remove()
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		tagged.Remove()
		return nil, fmt.Errorf("%s: after line %d: %w", name, t.n, err)
	}
	sorted, err := s.SortLines(ctx, "rewrite-log-by-file", tagged)
	if err != nil {
		tagged.Remove()
		return nil, fmt.Errorf("sorting %s on file: %w", name, err)
	}
	if sorted.OnDisk() {
		tagged.Remove()
		tagged = nil
	}
	return &Grouped{name: name, file: sorted, tagged: tagged}, nil
}

// Remove removes the sorted copy, then what it was sorted from.
func (g *Grouped) Remove() {
	g.file.Remove()
	g.tagged.Remove()
}

// tagger writes each line of a log with its file and number.
type tagger struct {
	out  *syssort.File
	name string
	n    int64
	// run is the last "# run" line and its number; last the file of the
	// run's last line, which the next file's must follow in byte order;
	// block the file of the open block ("" for none).
	run       []byte
	runLine   int64
	last      []byte
	lastInRun bool
	block     []byte
	buf       []byte
}

func (t *tagger) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", t.name, t.n, fmt.Sprintf(format, args...))
}

func (t *tagger) emit(file []byte, n int64, text []byte) error {
	t.buf = append(append(t.buf[:0], file...), ' ')
	t.buf = append(syssort.Num(t.buf, n), ' ')
	return t.out.Line(append(t.buf, text...))
}

func (t *tagger) line(text []byte) error {
	t.n++
	if len(text) == 0 {
		return nil
	}
	if text[0] == '#' {
		if t.block != nil {
			// It closes the block, in the file's group as in the log.
			if err := t.emit(t.block, t.n, []byte("#")); err != nil {
				return err
			}
			t.block = nil
		}
		if bytes.HasPrefix(text, []byte("# run ")) {
			t.run, t.runLine, t.lastInRun = append(t.run[:0], text...), t.n, false
			return nil
		}
		if _, ok, err := ParseFixity(text); ok {
			if err != nil {
				return t.errorf("%v", err)
			}
			file, _, _ := bytes.Cut(text[len("# file "):], []byte(" "))
			if err := t.of(file); err != nil {
				return err
			}
			t.block = append(t.block[:0], file...)
			return t.emit(file, t.n, text)
		}
		return nil // a comment
	}
	file, _, _ := bytes.Cut(text, []byte(" "))
	if len(file) == 0 {
		return t.errorf("an entry without a file name")
	}
	if t.block != nil && !bytes.Equal(file, t.block) {
		return t.errorf("an entry of %s in the block of %s", file, t.block)
	}
	if err := t.of(file); err != nil {
		return err
	}
	return t.emit(file, t.n, text)
}

// of notes a line of file: the first of the run gets the run's line
// before it, in its group.
func (t *tagger) of(file []byte) error {
	if t.lastInRun {
		switch c := bytes.Compare(file, t.last); {
		case c == 0:
			return nil
		case c < 0:
			return t.errorf("%s after %s: files out of order within a run", file, t.last)
		}
	}
	t.last, t.lastInRun = append(t.last[:0], file...), true
	if t.run != nil {
		return t.emit(file, t.runLine, t.run)
	}
	return nil
}

// ByFile reads a Grouped log a file at a time.
type ByFile struct {
	name  string
	lines *syssort.Lines
	// next is the first line of the next group, read already.
	next    []byte
	hasNext bool
	err     error
	file    string
	moves   *Moves
}

// Open reads the groups from the first.
func (g *Grouped) Open() (*ByFile, error) {
	l, err := g.file.Open()
	if err != nil {
		return nil, err
	}
	b := &ByFile{name: g.name, lines: l}
	b.advance()
	return b, nil
}

// advance reads the next line into b.next.
func (b *ByFile) advance() {
	b.hasNext = b.lines.Next()
	if b.hasNext {
		b.next = append(b.next[:0], b.lines.Bytes()...)
	} else if err := b.lines.Err(); err != nil && b.err == nil {
		b.err = err
	}
}

// Next reads the next file's group: File and Moves are it.
func (b *ByFile) Next() bool {
	if b.err != nil || !b.hasNext {
		b.file, b.moves = "", nil
		return false
	}
	file, _, _ := bytes.Cut(b.next, []byte(" "))
	b.file = string(file)
	var text []byte
	var numbers []int64
	for b.hasNext {
		f, rest, _ := bytes.Cut(b.next, []byte(" "))
		if string(f) != b.file {
			break
		}
		num, line, _ := bytes.Cut(rest, []byte(" "))
		n, err := syssort.ParseNum(num)
		if err != nil {
			b.err = fmt.Errorf("%s sorted on file: %q: %w", b.name, b.next, err)
			return false
		}
		text = append(append(text, line...), '\n')
		numbers = append(numbers, n)
		b.advance()
	}
	r := NewReader(bytes.NewReader(text), b.name)
	r.numbers = numbers
	m, err := Load(r, time.Time{})
	if err != nil {
		b.err = err
		return false
	}
	b.moves = m
	return true
}

// File is the escaped name (manifest field 1) of the group read last.
func (b *ByFile) File() string { return b.file }

// Moves are the entries of the group read last.
func (b *ByFile) Moves() *Moves { return b.moves }

// For returns the entries of the file (escaped as manifest field 1),
// empty if the log names it nowhere: files must be asked for in
// increasing byte order, the groups before it are passed (seen, if set,
// is called with each group passed or returned).
func (b *ByFile) For(file string, seen func(file string, m *Moves)) (*Moves, error) {
	for b.moves == nil || b.file < file {
		if !b.Next() {
			if b.err != nil {
				return nil, b.err
			}
			return emptyMoves(), nil
		}
		if seen != nil {
			seen(b.file, b.moves)
		}
	}
	if b.file == file {
		return b.moves, nil
	}
	return emptyMoves(), nil
}

// Err is the error that stopped Next, if any.
func (b *ByFile) Err() error { return b.err }

// Close lets the sorted copy go (it stays for another Open).
func (b *ByFile) Close() error {
	err := b.lines.Close()
	if b.err != nil {
		return b.err
	}
	return err
}

// emptyMoves are those of a log that names no file.
func emptyMoves() *Moves {
	m, _ := load(NewReader(bytes.NewReader(nil), ""), time.Time{}, 0)
	return m
}

// Names says whether the log names the file (relative, unescaped): it
// has entries of it, a "# file" line of a replacement of it, or an
// incomplete block of it.
func (m *Moves) Names(name string) bool {
	_, versioned := m.versions[name]
	return versioned || m.byName[name] != nil || m.incomplete[name] != nil
}

package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Table is a manifest file whose lines are sorted on a key, by default the
// digest (field 6, any order within a digest: warccollres -p output,
// warcsumproc output, or a sort by manifest.ByDigest), searched by key
// without holding it in memory. Opening it reads it once to check the
// order and to note where every markEvery-th byte's next line starts, so
// a look-up reads only the stretch of the file that can hold the key.
type Table struct {
	name  string
	key   *TableKey
	r     io.ReaderAt
	size  int64
	marks []mark
	lines int64
	// algorithms are the labels of the digests of its lines ("sha1"), in
	// order of first appearance; a revisit line without a digest has none.
	algorithms []string
	// free holds the buffers of finished look-ups for the next: allocated
	// anew, a look-up's reader cost 8 KiB and its probe 1 KiB, tens of MB
	// in a run's rewrite. A list under a lock, as Find may run on several
	// goroutines at once: it holds as many as ran at once, at most.
	mu   sync.Mutex
	free []*lookup
}

// lookup is what one Find reads with.
type lookup struct {
	sr    io.SectionReader
	br    *bufio.Reader
	probe [probeWindow]byte
	want  []byte // the key searched for
	key   []byte // a line's key
}

// mark notes the first line that starts at or after a file position.
type mark struct {
	key    string
	offset int64
}

// A TableKey is what a Table is sorted and searched on.
type TableKey struct {
	Order *Order // the sort that gives a table of the key
	// of appends the key of a raw line to dst, ofLine that of a line.
	of     func(dst, line []byte) []byte
	ofLine func(dst []byte, l *Line) []byte
}

// The keys of tables.
var (
	// DigestKey: field 6, the digest.
	DigestKey = &TableKey{Order: ByDigest,
		of:     func(dst, line []byte) []byte { return append(dst, Field(line, 5)...) },
		ofLine: func(dst []byte, l *Line) []byte { return append(dst, l.Digest...) }}
	// CaptureKey: fields 4 and 5, the URI and the date of a capture (see
	// CaptureKeyOf), which revisits name their original by.
	CaptureKey = &TableKey{Order: ByCapture,
		of: func(dst, line []byte) []byte {
			dst = append(dst, Field(line, 3)...)
			return append(append(dst, 0), Field(line, 4)...)
		},
		ofLine: func(dst []byte, l *Line) []byte { return append(append(append(dst, l.URI...), 0), l.Date...) }}
)

// CaptureKeyOf is the CaptureKey of the capture of uri at date (manifest
// fields 4 and 5, escaped): the two joined by a NUL, which sorts before
// every byte an escaped field holds, so the keys sort as the fields do.
func CaptureKeyOf(uri, date string) string { return uri + "\x00" + date }

// markEvery is the spacing of the marks: memory is about 80 bytes per
// 64 KiB of table (1.2 MB for a 1 GB table); a look-up bisects the stretch
// between two marks (see seek). Past maxMarks marks (a table of 4 GiB,
// some 30 million lines) every other mark is dropped and the spacing
// doubled, so that memory stays under about 5 MB whatever the table's
// size: a look-up then bisects a longer stretch, one more small read per
// doubling.
// (Variables so that a test can prove the bound on a small table.)
var (
	markEvery int64 = 64 << 10
	maxMarks        = 1 << 16
)

// OpenTable opens the table in the named file, sorted on digest. Close it
// when done.
func OpenTable(name string) (*Table, error) { return OpenTableBy(name, DigestKey) }

// OpenTableBy opens the table in the named file, sorted on key.
func OpenTableBy(name string, key *TableKey) (*Table, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
		// A pipe (<(sort ...)) has size 0: read as an empty table, every
		// look-up would fail as if the manifest lacked the line.
		f.Close()
		return nil, fmt.Errorf("%s: a pipe, not a file: a table is searched where it lies (write the manifest to a file first)", name)
	}
	t, err := NewTableBy(f, fi.Size(), name, key)
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// NewTable reads r (size bytes, named name in errors) once, checking every
// line and the digest order.
func NewTable(r io.ReaderAt, size int64, name string) (*Table, error) {
	return NewTableBy(r, size, name, DigestKey)
}

// NewTableBy is NewTable for a table sorted on key.
func NewTableBy(r io.ReaderAt, size int64, name string, key *TableKey) (*Table, error) {
	t := &Table{name: name, key: key, r: r, size: size}
	in := NewReader(io.NewSectionReader(r, 0, size), name)
	var prev, cur []byte
	var next int64 // where the next mark goes
	every := markEvery
	for {
		l, err := in.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		cur = key.ofLine(cur[:0], &l)
		if bytes.Compare(cur, prev) < 0 {
			return nil, in.Errorf("%w: not sorted on %s; sort it with %s", ErrOrder, key.Order.Name, key.Order.Command)
		}
		prev, cur = cur, prev
		if l.Digest != NoDigest {
			if label, _, _ := strings.Cut(l.Digest, ":"); !slices.Contains(t.algorithms, label) {
				t.algorithms = append(t.algorithms, label)
			}
		}
		if pos := in.Offset(); pos >= next {
			t.marks = append(t.marks, mark{key: string(prev), offset: pos})
			next = pos + every
			if len(t.marks) >= maxMarks {
				t.marks = thinMarks(t.marks)
				every *= 2
			}
		}
		t.lines++
	}
}

// thinMarks keeps every other mark (the first always: a look-up before
// the second mark starts from 0 either way), in place.
func thinMarks(marks []mark) []mark {
	n := 0
	for i := 0; i < len(marks); i += 2 {
		marks[n] = marks[i]
		n++
	}
	clear(marks[n:])
	return marks[:n]
}

// Name is the table's name.
func (t *Table) Name() string { return t.name }

// Algorithms returns the digest algorithms of the table's lines, as their
// labels ("sha1"), in order of first appearance.
func (t *Table) Algorithms() []string { return t.algorithms }

// Lines is the number of lines in the table.
func (t *Table) Lines() int64 { return t.lines }

// Close closes the file of a table made by OpenTable.
func (t *Table) Close() error {
	if c, ok := t.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// getLookup takes a finished look-up's buffers, or makes new ones.
func (t *Table) getLookup() *lookup {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.free); n > 0 {
		lk := t.free[n-1]
		t.free = t.free[:n-1]
		return lk
	}
	return &lookup{br: bufio.NewReaderSize(nil, scanBuffer)}
}

// putLookup keeps a finished look-up's buffers for the next.
func (t *Table) putLookup(lk *lookup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.free = append(t.free, lk)
}

// ErrStop ends Find early without an error.
var ErrStop = errors.New("stop")

// Find calls fn with each line of the key (a digest, or what the table's
// key is), in table order. fn's error ends the search and is returned,
// except ErrStop.
func (t *Table) Find(key string, fn func(*Line) error) error {
	// Start at the last mark before the key: every line of the key starts
	// after it.
	i := sort.Search(len(t.marks), func(i int) bool { return t.marks[i].key >= key })
	var start int64
	if i > 0 {
		start = t.marks[i-1].offset
	}
	end := t.size
	if i < len(t.marks) {
		end = t.marks[i].offset
	}
	lk := t.getLookup()
	defer t.putLookup(lk)
	want := append(lk.want[:0], key...)
	lk.want = want
	start = t.seek(lk, want, start, end)
	lk.sr = *io.NewSectionReader(t.r, start, t.size-start)
	br := lk.br
	br.Reset(&lk.sr)
	for {
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: read it whole.
			long := bytes.Clone(text)
			for errors.Is(err, bufio.ErrBufferFull) {
				text, err = br.ReadSlice('\n')
				long = append(long, text...)
			}
			text = long
		}
		if err == io.EOF && len(text) == 0 {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		text = bytes.TrimSuffix(text, []byte("\n"))
		lk.key = t.key.of(lk.key[:0], text)
		switch c := bytes.Compare(lk.key, want); {
		case c < 0:
			continue
		case c > 0:
			return nil
		}
		l, perr := Parse(text)
		if perr != nil {
			return fmt.Errorf("%s: %w (the table changed since it was opened?)", t.name, perr)
		}
		if ferr := fn(&l); ferr != nil {
			if ferr == ErrStop {
				return nil
			}
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

// Find reads a stretch between two marks from a line start at or before
// the key's first line. Reading the whole stretch cost a look-up 64 KiB
// and a key comparison per line (a tenth of warcrefs' CPU); seek narrows
// it by bisection first, a small read a step.
const (
	probeWindow = 1 << 10 // read by a step: enough for a line or two
	scanBelow   = 4 << 10 // a stretch this short is read through
	scanBuffer  = 8 << 10
)

// seek returns a line start in [lo, hi] from which reading finds every
// line of want: lo is a line start after which the first line of want
// starts (or lo itself is one), and hi the start of a line whose key is at
// least want (or the end).
func (t *Table) seek(lk *lookup, want []byte, lo, hi int64) int64 {
	buf := &lk.probe
	for hi-lo > scanBelow {
		mid := lo + (hi-lo)/2
		// The first line that starts after mid, whole in the window; a
		// longer one stops the bisection (reading from lo is still right).
		n, err := t.r.ReadAt(buf[:], mid)
		if err != nil && err != io.EOF {
			break
		}
		w := buf[:n]
		nl := bytes.IndexByte(w, '\n')
		if nl < 0 {
			break
		}
		line := w[nl+1:]
		end := bytes.IndexByte(line, '\n')
		p := mid + int64(nl) + 1
		if end < 0 || p >= hi {
			break
		}
		lk.key = t.key.of(lk.key[:0], line[:end])
		if bytes.Compare(lk.key, want) < 0 {
			lo = p // the line at p is before want's: they start after it
		} else {
			hi = p // want's first line starts at or before p
		}
	}
	return lo
}

// Field returns the i-th (from 0) space-separated field of a manifest
// line, or nil if it has fewer fields: a way to look at one field, such as
// the digest (field 5), without parsing the line.
func Field(line []byte, i int) []byte {
	for ; i > 0; i-- {
		j := bytes.IndexByte(line, ' ')
		if j < 0 {
			return nil
		}
		line = line[j+1:]
	}
	if j := bytes.IndexByte(line, ' '); j >= 0 {
		return line[:j]
	}
	return line
}

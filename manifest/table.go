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
)

// Table is a manifest file whose lines are sorted on digest (field 6, any
// order within a digest: warccollres -p output, warcsumproc output, or a
// sort by manifest.ByDigest), searched by digest without holding it in
// memory. Opening it reads it once to check the order and to note where
// every markEvery-th byte's next line starts, so a look-up reads only the
// stretch of the file that can hold the digest.
type Table struct {
	name  string
	r     io.ReaderAt
	size  int64
	marks []mark
	lines int64
	// algorithms are the labels of the digests of its lines ("sha1"), in
	// order of first appearance; a revisit line without a digest has none.
	algorithms []string
}

// mark notes the first line that starts at or after a file position.
type mark struct {
	digest string
	offset int64
}

// markEvery is the spacing of the marks: memory is about 80 bytes per
// 64 KiB of table (1.2 MB for a 1 GB table), and a look-up reads at least
// one such stretch.
const markEvery = 64 << 10

// OpenTable opens the table in the named file. Close it when done.
func OpenTable(name string) (*Table, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	t, err := NewTable(f, fi.Size(), name)
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// NewTable reads r (size bytes, named name in errors) once, checking every
// line and the digest order.
func NewTable(r io.ReaderAt, size int64, name string) (*Table, error) {
	t := &Table{name: name, r: r, size: size}
	in := NewReader(io.NewSectionReader(r, 0, size), name)
	var prev string
	var next int64 // where the next mark goes
	for {
		l, err := in.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		if l.Digest < prev {
			return nil, in.Errorf("%w: not sorted on digest; sort it with %s", ErrOrder, ByDigest.Command)
		}
		prev = l.Digest
		if l.Digest != NoDigest {
			if label, _, _ := strings.Cut(l.Digest, ":"); !slices.Contains(t.algorithms, label) {
				t.algorithms = append(t.algorithms, label)
			}
		}
		if pos := in.Offset(); pos >= next {
			t.marks = append(t.marks, mark{digest: l.Digest, offset: pos})
			next = pos + markEvery
		}
		t.lines++
	}
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

// ErrStop ends Find early without an error.
var ErrStop = errors.New("stop")

// Find calls fn with each line of the digest, in table order. fn's error
// ends the search and is returned, except ErrStop.
func (t *Table) Find(digest string, fn func(*Line) error) error {
	// Start at the last mark before the digest: every line of the digest
	// starts after it.
	i := sort.Search(len(t.marks), func(i int) bool { return t.marks[i].digest >= digest })
	var start int64
	if i > 0 {
		start = t.marks[i-1].offset
	}
	br := bufio.NewReaderSize(io.NewSectionReader(t.r, start, t.size-start), 64<<10)
	want := []byte(digest)
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
		d := field(text, 5)
		switch c := bytes.Compare(d, want); {
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

// field returns the i-th (0-based) space-separated field of a line.
func field(line []byte, i int) []byte {
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

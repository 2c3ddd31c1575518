package crawlindex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"warcdedup/fixity"
)

// rawRun reads a run's lines as bytes, for a compaction, which only
// merges them, and the join, which parses only the lines it writes: no
// other line is parsed into fields of its own, so that a merge costs a
// comparison of bytes a line. What the order and the partitions rely on
// is checked as it is read: lines of 6 fields, the offset a number, sorted
// as manifest.ByDigest sorts them (digest, date, file, offset: an
// original's ext is 0), digests of the run's partition. A compaction also
// checks, at the run's end, its size and SHA-256 as the generation's
// CONTENTS lists them, which proves every line what the commit that wrote
// it checked in full.
type rawRun struct {
	run  *run
	f    *os.File
	br   *bufio.Reader
	h    *fixity.Hash
	n    int64
	want *content // as CONTENTS lists it; nil if it does not, or unchecked
	gen  string   // the generation's name, for messages

	line   []byte // the current line, without its line feed
	long   []byte // a line longer than the buffer, whole
	key    rawKey
	prev   []byte // the previous line's key fields, copied
	prevK  rawKey
	number int
	ok     bool
}

// rawKey is where the fields manifest.ByDigest compares are in a line.
type rawKey struct {
	digest, date, file []byte
	offset             int64
}

func (k *rawKey) compare(o *rawKey) int {
	if c := bytes.Compare(k.digest, o.digest); c != 0 {
		return c
	}
	if c := bytes.Compare(k.date, o.date); c != 0 {
		return c
	}
	if c := bytes.Compare(k.file, o.file); c != 0 {
		return c
	}
	switch {
	case k.offset < o.offset:
		return -1
	case k.offset > o.offset:
		return 1
	}
	return 0
}

// openRawRun opens a run of ix's generation; with sum, its size and
// SHA-256 are checked at its end.
func (ix *Index) openRawRun(r *run, sum bool) (*rawRun, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, err
	}
	rr := &rawRun{run: r, f: f, br: bufio.NewReaderSize(f, 256<<10), gen: filepath.Base(ix.gen)}
	if c, ok := ix.contents[r.rel()]; ok && sum {
		rr.want, rr.h = &c, fixity.New(contentsAlgorithm)
	}
	if err := rr.next(); err != nil {
		f.Close()
		return nil, err
	}
	return rr, nil
}

func (rr *rawRun) errorf(format string, args ...any) error {
	return fmt.Errorf("index: %s:%d: %s", rr.run.path, rr.number, fmt.Sprintf(format, args...))
}

// next reads the next line.
func (rr *rawRun) next() error {
	if rr.ok {
		// Keep the key of the line before, for the order.
		rr.prev = append(rr.prev[:0], rr.key.digest...)
		rr.prev = append(rr.prev, rr.key.date...)
		rr.prev = append(rr.prev, rr.key.file...)
		d, t := len(rr.key.digest), len(rr.key.date)
		rr.prevK = rawKey{digest: rr.prev[:d], date: rr.prev[d : d+t], file: rr.prev[d+t:], offset: rr.key.offset}
	}
	text, err := rr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		rr.long = append(rr.long[:0], text...)
		for errors.Is(err, bufio.ErrBufferFull) {
			text, err = rr.br.ReadSlice('\n')
			rr.long = append(rr.long, text...)
		}
		text = rr.long
	}
	if rr.h != nil {
		rr.h.Write(text)
	}
	rr.n += int64(len(text))
	switch {
	case err == io.EOF && len(text) == 0:
		rr.ok = false
		return rr.end()
	case err == io.EOF:
		rr.number++
		return rr.errorf("last line has no line feed: the run is cut short")
	case err != nil:
		return fmt.Errorf("index: %s: %w", rr.run.path, err)
	}
	rr.number++
	rr.line = text[:len(text)-1]
	if err := rr.parse(); err != nil {
		return err
	}
	if rr.ok && rr.prevK.compare(&rr.key) > 0 {
		return rr.errorf("line out of order: not sorted by digest, ext, date, file, offset")
	}
	rr.ok = true
	return nil
}

// parse finds the key's fields of the current line, checking what a
// merge needs of it.
func (rr *rawRun) parse() error {
	var f [6][]byte
	rest := rr.line
	for i := range 5 {
		j := bytes.IndexByte(rest, ' ')
		if j <= 0 {
			return rr.errorf("not a line of 6 fields")
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if len(rest) == 0 || bytes.IndexByte(rest, ' ') >= 0 {
		return rr.errorf("not a line of 6 fields")
	}
	f[5] = rest
	var off int64
	for _, c := range f[1] {
		if c < '0' || c > '9' || off > (1<<62)/10 {
			return rr.errorf("offset %q is no number", f[1])
		}
		off = off*10 + int64(c-'0')
	}
	// The partition: the digest's label, and the first character of its
	// value.
	label, value, ok := bytes.Cut(f[5], []byte(":"))
	key := rr.run.key
	if !ok || len(value) == 0 || len(key) != len(label)+2 || string(label) != key[:len(label)] || value[0] != key[len(key)-1] {
		return rr.errorf("digest %s does not belong in partition %s", f[5], key)
	}
	rr.key = rawKey{digest: f[5], date: f[4], file: f[0], offset: off}
	return nil
}

// end checks the run's size and SHA-256 once it is read whole.
func (rr *rawRun) end() error {
	if rr.want == nil {
		return nil
	}
	if rr.n != rr.want.size {
		return &DamageError{Dir: filepath.Dir(filepath.Dir(filepath.Dir(rr.run.path))), Problems: []string{fmt.Sprintf("%s/%s: %d bytes, %d when committed", rr.gen, rr.run.rel(), rr.n, rr.want.size)}}
	}
	if sum := rr.h.Sum(contentsAlgorithm); sum != rr.want.sum {
		return &DamageError{Dir: filepath.Dir(filepath.Dir(filepath.Dir(rr.run.path))), Problems: []string{fmt.Sprintf("%s/%s: SHA-256 %s, %s when committed", rr.gen, rr.run.rel(), sum, rr.want.sum)}}
	}
	return nil
}

// rawMerger merges runs read as bytes, as merger does.
type rawMerger struct {
	heap []*rawRun
	all  []*rawRun
	last *rawRun
}

func (ix *Index) openRawMerger(runs []*run, sum bool) (*rawMerger, error) {
	m := &rawMerger{}
	for _, r := range runs {
		rr, err := ix.openRawRun(r, sum)
		if err != nil {
			m.close()
			return nil, err
		}
		m.all = append(m.all, rr)
		if rr.ok {
			m.heap = append(m.heap, rr)
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m, nil
}

// next returns the next line (without its line feed; valid until the
// next call), or false at the end.
func (m *rawMerger) next() ([]byte, bool, error) {
	if m.last != nil {
		if err := m.last.next(); err != nil {
			return nil, false, err
		}
		if m.last.ok {
			m.down(0)
		} else {
			n := len(m.heap) - 1
			m.heap[0] = m.heap[n]
			m.heap = m.heap[:n]
			if n > 0 {
				m.down(0)
			}
		}
		m.last = nil
	}
	if len(m.heap) == 0 {
		return nil, false, nil
	}
	m.last = m.heap[0]
	return m.last.line, true, nil
}

// errorf is an error about the line next returned last, naming its run
// and line.
func (m *rawMerger) errorf(format string, args ...any) error {
	if m.last == nil {
		return fmt.Errorf(format, args...)
	}
	return m.last.errorf(format, args...)
}

// key is the key of the line next returned last.
func (m *rawMerger) key() *rawKey { return &m.last.key }

func (m *rawMerger) less(a, b *rawRun) bool {
	if c := a.key.compare(&b.key); c != 0 {
		return c < 0
	}
	return a.run.gen < b.run.gen
}

func (m *rawMerger) down(i int) { siftDown(m.heap, i, m.less) }

func (m *rawMerger) close() {
	for _, rr := range m.all {
		rr.f.Close()
	}
	m.all, m.heap, m.last = nil, nil, nil
}

package collres

import (
	"bytes"
	"fmt"
	"hash"
	"io"
	"os"

	"warcdedup/manifest"
)

// class is one byte-identical payload class of a digest cluster, held by
// the payload of its first line: in memory when small, in an unlinked
// temporary file when large, so a cluster of two 5 GB payloads costs disk,
// not memory.
type class struct {
	line manifest.Line // the first line of the class
	mem  []byte
	file *os.File
	size int64
}

func (c *class) close() {
	if c.file != nil {
		c.file.Close()
	}
}

// classWriter collects a payload that may become a class.
type classWriter struct {
	limit int64
	c     *class
	err   error
}

func newClassWriter(l *manifest.Line, limit int64) *classWriter {
	return &classWriter{limit: limit, c: &class{line: *l}}
}

// grow makes room for a payload of n bytes when it will be held in memory,
// so that collecting it costs one allocation and no copying.
func (w *classWriter) grow(n int64) {
	if n <= w.limit && w.c.file == nil && int64(cap(w.c.mem)) < n {
		w.c.mem = make([]byte, 0, n)
	}
}

func (w *classWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	c := w.c
	if c.file == nil && c.size+int64(len(p)) > w.limit {
		f, err := os.CreateTemp("", "warccollres-class-*")
		if err != nil {
			w.err = err
			return 0, err
		}
		os.Remove(f.Name())
		if _, err := f.Write(c.mem); err != nil {
			f.Close()
			w.err = err
			return 0, err
		}
		c.file, c.mem = f, nil
	}
	if c.file != nil {
		if _, err := c.file.Write(p); err != nil {
			w.err = err
			return 0, err
		}
	} else {
		c.mem = append(c.mem, p...)
	}
	c.size += int64(len(p))
	return len(p), nil
}

// comparer is the io.Writer a payload streams into: it hashes it, compares
// it byte for byte with every class of its cluster, and may also collect it
// as a new class.
type comparer struct {
	hash    hash.Hash
	classes []*class
	match   []bool // classes still equal so far
	off     int64
	collect io.Writer // nil, or the classWriter of a would-be class
	scratch []byte
}

func newComparer(h hash.Hash, classes []*class, collect io.Writer, scratch []byte) *comparer {
	h.Reset()
	c := &comparer{hash: h, classes: classes, match: make([]bool, len(classes)), collect: collect, scratch: scratch}
	for i := range c.match {
		c.match[i] = true
	}
	return c
}

func (c *comparer) Write(p []byte) (int, error) {
	c.hash.Write(p)
	for i, cl := range c.classes {
		if !c.match[i] {
			continue
		}
		if c.off+int64(len(p)) > cl.size {
			c.match[i] = false
			continue
		}
		eq, err := cl.equalAt(c.off, p, &c.scratch)
		if err != nil {
			return 0, fmt.Errorf("comparing with the class of %s offset %d: %w", cl.line.File, cl.line.Offset, err)
		}
		c.match[i] = eq
	}
	if c.collect != nil {
		if _, err := c.collect.Write(p); err != nil {
			return 0, err
		}
	}
	c.off += int64(len(p))
	return len(p), nil
}

// matched returns the class the whole payload equals, or -1.
func (c *comparer) matched() int {
	for i, cl := range c.classes {
		if c.match[i] && cl.size == c.off {
			return i
		}
	}
	return -1
}

// equalAt compares p with the class payload at off.
func (cl *class) equalAt(off int64, p []byte, scratch *[]byte) (bool, error) {
	if cl.file == nil {
		return bytes.Equal(cl.mem[off:off+int64(len(p))], p), nil
	}
	if cap(*scratch) < len(p) {
		*scratch = make([]byte, len(p))
	}
	buf := (*scratch)[:len(p)]
	if _, err := cl.file.ReadAt(buf, off); err != nil {
		return false, err
	}
	return bytes.Equal(buf, p), nil
}

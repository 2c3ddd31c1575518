package inplace

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// verifyChunk is how much of each file verify compares and hashes at a
// time: both chunks stay in the caches between the comparison and the
// hashes.
const verifyChunk = 256 << 10

// section gives verify the bytes of one file: n bytes at off, valid until
// the next call. Two kinds: a memory map of the file (mapSection), where
// the bytes are read from the page cache where they lie, and reads into a
// buffer (readSection), where each byte is first copied out of the page
// cache: verify re-reads both versions whole, some 1.1 GB on the bench
// collection, and that copy was about 0.25 s of CPU (perf: the kernel's
// _copy_to_iter), a twentieth of the job's.
type section interface {
	bytes(off int64, n int) ([]byte, error)
	close()
}

// openSection is how verify opens a section of a file of size bytes.
type openSection func(f *os.File, size int64) section

// readSection reads through ReadAt into a buffer of its own.
type readSection struct {
	r   io.ReaderAt
	buf []byte
}

func openRead(f *os.File, size int64) section {
	return &readSection{r: f, buf: make([]byte, verifyChunk)}
}

func (s *readSection) bytes(off int64, n int) ([]byte, error) {
	b := s.buf[:n]
	_, err := s.r.ReadAt(b, off)
	return b, err
}

func (s *readSection) close() {}

// openMapped maps the file if it can (a mapping of size bytes), else
// reads it (openRead): on a system without mmap, a file system that
// cannot map, an empty file.
func openMapped(f *os.File, size int64) section {
	if m := mapFile(f, size); m != nil {
		return m
	}
	return openRead(f, size)
}

// mapSection is a read-only shared mapping of a file's first size bytes.
// A byte past the file's end (the file truncated since it was mapped)
// faults when it is read; verify turns that fault into an error
// (guardFaults), as a short read would be.
type mapSection struct {
	data []byte
}

func (m *mapSection) bytes(off int64, n int) ([]byte, error) {
	if off < 0 || off+int64(n) > int64(len(m.data)) {
		return nil, fmt.Errorf("%d bytes at %d: %w (the mapping holds %d)", n, off, io.ErrUnexpectedEOF, len(m.data))
	}
	return m.data[off : off+int64(n)], nil
}

// holds reports whether addr lies in the mapping.
func (m *mapSection) holds(addr uintptr) bool {
	if len(m.data) == 0 {
		return false
	}
	base := uintptr(unsafePointer(m.data))
	return addr >= base && addr < base+uintptr(len(m.data))
}

// guardFaults runs fn with faults on memory turned into panics (as
// debug.SetPanicOnFault), and returns a fault within one of the sections'
// mappings as an error: the mapped file became shorter than its mapping
// while fn read it. Any other panic goes on.
func guardFaults(fn func() error, sections ...section) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if fault, ok := r.(interface{ Addr() uintptr }); ok {
			for _, s := range sections {
				if m, ok := s.(*mapSection); ok && m.holds(fault.Addr()) {
					err = fmt.Errorf("the file no longer holds the bytes read (it became shorter while it was re-read): %v", r)
					return
				}
			}
		}
		panic(r)
	}()
	return fn()
}

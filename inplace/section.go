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
// buffer (readSection, n at most verifyChunk), where each byte is first
// copied out of the page cache: verify re-reads both versions whole, some
// 1.1 GB on the bench collection, and that copy (the kernel's
// _copy_to_iter in perf) was about a sixth of verify's time
// (BenchmarkVerify).
type section interface {
	bytes(off int64, n int) ([]byte, error)
	close()
}

// offsetSection is the bytes of a section from base on: a Section's
// stretch of its file (Placement.Sections).
type offsetSection struct {
	section
	base int64
}

func (o offsetSection) bytes(off int64, n int) ([]byte, error) { return o.section.bytes(o.base+off, n) }

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

// openMapped maps the file if it can (mapSection), else reads it
// (openRead): on a system without mmap, or a file system that cannot map.
func openMapped(f *os.File, size int64) section {
	if m := mapFile(f, size); m != nil {
		return m
	}
	return openRead(f, size)
}

// mapWindow is how much of a file a mapSection maps at a time. Mapped
// pages count in the process's resident set while they are mapped:
// mapping each version whole added both versions of every file being
// replaced (up to 270 MB on the bench collection); a window, unmapped as
// soon as the next one is due, adds 4 MB a file being verified (two
// versions), 16 MB with the four files two jobs replace at once, whatever
// the files' sizes. Windows of 1 MB cost more in mapping and unmapping
// than the copies they save; 2 MB, populated at once, save about a sixth
// of verify's time (BenchmarkVerify), 4 MB no more.
const mapWindow = 2 << 20

// mapSection reads a file through a read-only shared mapping of the
// window of it being read. A byte past the file's end (the file cut
// shorter since its size was taken) faults when it is read; verify turns
// that fault into an error (guardFaults), as a short read would be.
type mapSection struct {
	fd   uintptr
	size int64
	keep *os.File // the file, open while mapped
	// The window: data maps the file from at.
	at   int64
	data []byte
}

func (m *mapSection) bytes(off int64, n int) ([]byte, error) {
	if off < 0 || off+int64(n) > m.size {
		return nil, fmt.Errorf("%d bytes at %d: %w (the file had %d)", n, off, io.ErrUnexpectedEOF, m.size)
	}
	if m.data == nil || off < m.at || off+int64(n) > m.at+int64(len(m.data)) {
		if err := m.remap(off, n); err != nil {
			return nil, err
		}
	}
	return m.data[off-m.at : off-m.at+int64(n)], nil
}

// holds reports whether addr lies in the window mapped.
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

//go:build linux

package inplace

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile returns a mapSection of f's first size bytes, or nil if f
// cannot be mapped (then it is read).
func mapFile(f *os.File, size int64) *mapSection {
	// Through SyscallConn, not Fd, which would set the file blocking.
	conn, err := f.SyscallConn()
	if err != nil || size <= 0 {
		return nil
	}
	var fd uintptr
	if err := conn.Control(func(d uintptr) { fd = d }); err != nil {
		return nil
	}
	m := &mapSection{fd: fd, size: size, keep: f}
	// A first window, to know now that the file maps.
	if err := m.remap(0, int(min(size, mapWindow))); err != nil {
		return nil
	}
	return m
}

// remap maps the window that holds n bytes at off, unmapping the one
// before.
func (m *mapSection) remap(off int64, n int) error {
	m.close()
	page := int64(os.Getpagesize())
	at := off - off%page
	length := min(max(int64(mapWindow), off+int64(n)-at), m.size-at)
	if int64(int(length)) != length {
		return syscall.EFBIG
	}
	// Populated: the window's pages, in the page cache already (the
	// new version just written, the source just read), are mapped in one
	// call rather than one fault at a time.
	data, err := syscall.Mmap(int(m.fd), at, int(length), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return err
	}
	m.at, m.data = at, data
	return nil
}

func (m *mapSection) close() {
	if m.data != nil {
		syscall.Munmap(m.data)
		m.data = nil
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

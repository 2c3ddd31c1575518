//go:build unix

package inplace

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps f's first size bytes read-only, or returns nil if it
// cannot (then the file is read).
func mapFile(f *os.File, size int64) *mapSection {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	// Through SyscallConn, not Fd, which would set the file blocking.
	conn, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var data []byte
	var merr error
	if err := conn.Control(func(fd uintptr) {
		data, merr = syscall.Mmap(int(fd), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	}); err != nil || merr != nil {
		return nil
	}
	return &mapSection{data: data}
}

func (m *mapSection) close() {
	if m.data != nil {
		syscall.Munmap(m.data)
		m.data = nil
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

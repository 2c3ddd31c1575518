//go:build !linux

package inplace

import (
	"errors"
	"os"
	"unsafe"
)

// mapFile does not map on this system: the file is read.
func mapFile(f *os.File, size int64) *mapSection { return nil }

func (m *mapSection) remap(off int64, n int) error {
	return errors.New("files are not mapped on this system")
}

func (m *mapSection) close() {}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

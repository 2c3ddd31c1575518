//go:build !unix

package inplace

import (
	"os"
	"unsafe"
)

// mapFile does not map on this system: the file is read.
func mapFile(f *os.File, size int64) *mapSection { return nil }

func (m *mapSection) close() {}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

//go:build !linux

package refs

import "os"

// copyXattrs copies nothing where the toolchain does not know how.
func copyXattrs(dst, src *os.File) error { return nil }

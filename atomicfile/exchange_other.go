//go:build !linux

package atomicfile

import "os"

// exchange needs Linux's renameat2.
func exchange(dir *os.File, a, b string) error { return ErrExchangeUnsupported }

// renameNew needs Linux's renameat2.
func renameNew(dir *os.File, a, b string) error { return errNoReplaceUnsupported }

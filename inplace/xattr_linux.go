package inplace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// copyXattrs copies every extended attribute of src to dst, through
// /proc/self/fd so that it acts on the open files, not on names that could
// have been replaced meanwhile. A file system without extended attributes
// has none to copy. Lenient leaves out an attribute this process may not
// set.
func copyXattrs(dst, src *os.File, lenient bool) error {
	from := fmt.Sprintf("/proc/self/fd/%d", src.Fd())
	to := fmt.Sprintf("/proc/self/fd/%d", dst.Fd())
	size, err := syscall.Listxattr(from, nil)
	if errors.Is(err, syscall.ENOTSUP) || size == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing extended attributes: %w", err)
	}
	names := make([]byte, size)
	if size, err = syscall.Listxattr(from, names); err != nil {
		return fmt.Errorf("listing extended attributes: %w", err)
	}
	for _, name := range bytes.Split(names[:size], []byte{0}) {
		if len(name) == 0 {
			continue
		}
		n, err := syscall.Getxattr(from, string(name), nil)
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		value := make([]byte, n)
		if n, err = syscall.Getxattr(from, string(name), value); err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if err := syscall.Setxattr(to, string(name), value[:n], 0); err != nil {
			if lenient && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOTSUP)) {
				continue
			}
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

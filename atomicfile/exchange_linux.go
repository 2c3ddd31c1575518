package atomicfile

import (
	"os"
	"syscall"
	"unsafe"
)

// renameExchange is renameat2's RENAME_EXCHANGE flag (linux/fs.h).
const renameExchange = 1 << 1

// exchange exchanges the names a and b in dir atomically.
func exchange(dir *os.File, a, b string) error {
	if sysRenameat2 == 0 {
		return ErrExchangeUnsupported
	}
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if cerr := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(sysRenameat2, fd, uintptr(unsafe.Pointer(pa)), fd, uintptr(unsafe.Pointer(pb)), renameExchange, 0)
	}); cerr != nil {
		return cerr
	}
	switch errno {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP:
		// No renameat2 (a kernel before 3.15, a seccomp filter) or no
		// RENAME_EXCHANGE on this file system.
		return ErrExchangeUnsupported
	}
	return &os.LinkError{Op: "renameat2 RENAME_EXCHANGE", Old: a, New: b, Err: errno}
}

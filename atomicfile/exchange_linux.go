package atomicfile

import (
	"os"
	"syscall"
	"unsafe"
)

// renameat2's flags (linux/fs.h).
const (
	renameNoReplace = 1 << 0
	renameExchange  = 1 << 1
)

// exchange exchanges the names a and b in dir atomically.
func exchange(dir *os.File, a, b string) error {
	return renameat2(dir, a, b, renameExchange, "RENAME_EXCHANGE", ErrExchangeUnsupported)
}

// renameNew renames a to b in dir unless b exists (an error that is
// fs.ErrExist then).
func renameNew(dir *os.File, a, b string) error {
	return renameat2(dir, a, b, renameNoReplace, "RENAME_NOREPLACE", errNoReplaceUnsupported)
}

// renameat2 calls renameat2(2) with flags in dir (named flag in an
// error); unsupported where the kernel or the file system has not the
// call or the flag.
func renameat2(dir *os.File, a, b string, flags uintptr, flag string, unsupported error) error {
	if sysRenameat2 == 0 {
		return unsupported
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
		_, _, errno = syscall.Syscall6(sysRenameat2, fd, uintptr(unsafe.Pointer(pa)), fd, uintptr(unsafe.Pointer(pb)), flags, 0)
	}); cerr != nil {
		return cerr
	}
	switch errno {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP:
		// No renameat2 (a kernel before 3.15, a seccomp filter) or not
		// the flag on this file system.
		return unsupported
	}
	return &os.LinkError{Op: "renameat2 " + flag, Old: a, New: b, Err: errno}
}

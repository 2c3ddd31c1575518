//go:build linux || darwin

package stage

import (
	"math"
	"os"
	"syscall"
)

// freeSpace is the file system of dir (its device) and the bytes free
// there for an unprivileged process; not known on a file system that
// says it has no blocks at all (some FUSE mounts of object stores), which
// a check would refuse every job on.
func freeSpace(dir string) (uint64, int64, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 || blockSize(&fs) <= 0 {
		return 0, 0, false
	}
	return uint64(st.Dev), available(&fs), true
}

// available is the bytes free for an unprivileged process; as many as
// an int64 holds where there are more (a FUSE mount of an object store
// saying "unlimited" with every bit set), which a product would wrap to
// no room or less than none, and every job be refused.
func available(fs *syscall.Statfs_t) int64 {
	bs := blockSize(fs)
	if fs.Bavail > uint64(math.MaxInt64/bs) {
		return math.MaxInt64
	}
	return int64(fs.Bavail) * bs
}

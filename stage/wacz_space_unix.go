//go:build linux || darwin

package stage

import (
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
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return 0, 0, false
	}
	return uint64(st.Dev), int64(fs.Bavail) * blockSize(&fs), true
}

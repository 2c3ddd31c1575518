package stage

import "syscall"

// blockSize is the unit of a file system's block counts (Bavail): on
// macOS f_bsize, the fundamental block size (f_iosize is the size it
// prefers for I/O).
func blockSize(fs *syscall.Statfs_t) int64 {
	return int64(fs.Bsize)
}

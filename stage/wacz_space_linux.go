package stage

import "syscall"

// blockSize is the unit of a file system's block counts (Bavail): the
// fragment size (f_frsize), which FUSE and virtiofs mounts report apart
// from, and up to 256 times smaller than, the size they prefer for I/O
// (f_bsize); f_bsize where a file system gives no fragment size.
func blockSize(fs *syscall.Statfs_t) int64 {
	if fs.Frsize > 0 {
		return int64(fs.Frsize)
	}
	return int64(fs.Bsize)
}

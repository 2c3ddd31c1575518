//go:build linux

package stage

import (
	"syscall"
	"testing"
)

// TestBlockSizeAttack: the free space of a file system is its available
// blocks in units of the fragment size (f_frsize), not of the block size
// it prefers for I/O (f_bsize), which FUSE and virtiofs mounts report
// up to 256 times larger (grpcfuse: 1 MiB and 4 KiB): the check took
// 256 times the room there was, and let a job fill the disk.
func TestBlockSizeAttack(t *testing.T) {
	for _, c := range []struct {
		name          string
		bsize, frsize int64
		want          int64
	}{
		{name: "a local file system: both the same", bsize: 4096, frsize: 4096, want: 4096},
		{name: "a FUSE mount preferring 1 MiB transfers", bsize: 1 << 20, frsize: 4096, want: 4096},
		{name: "no fragment size: the block size", bsize: 512, frsize: 0, want: 512},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := syscall.Statfs_t{Bavail: 100}
			fs.Bsize, fs.Frsize = c.bsize, c.frsize
			if got := blockSize(&fs); got != c.want {
				t.Errorf("blockSize = %d, want %d: %d blocks free taken for %d bytes", got, c.want, fs.Bavail, int64(fs.Bavail)*got)
			}
		})
	}
}

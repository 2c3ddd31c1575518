//go:build linux

package stage

import (
	"math"
	"os"
	"path/filepath"
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

// TestAvailableAttack: a file system whose free blocks, times their
// size, are more bytes than an int64 holds (a FUSE mount of an object
// store answering "unlimited" with every bit set) has all the room a
// job needs; the product overflowed, to no room or less than none, and
// every WACZ job on it was refused.
func TestAvailableAttack(t *testing.T) {
	for _, c := range []struct {
		name   string
		bavail uint64
		frsize int64
		want   int64
	}{
		{name: "a local file system", bavail: 1000, frsize: 4096, want: 4096000},
		{name: "unlimited: every bit set", bavail: math.MaxUint64, frsize: 4096, want: math.MaxInt64},
		{name: "2^52 blocks of 4 KiB", bavail: 1 << 52, frsize: 4096, want: math.MaxInt64},
		{name: "no block free", bavail: 0, frsize: 4096, want: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := syscall.Statfs_t{Bavail: c.bavail, Blocks: c.bavail + 1}
			fs.Bsize, fs.Frsize = c.frsize, c.frsize
			if got := available(&fs); got != c.want {
				t.Errorf("available = %d, want %d", got, c.want)
			}
		})
	}
}

// TestCheckSpaceUnlimitedAttack: on a file system with as many bytes
// free as an int64 holds (available's answer for "unlimited"), a
// stopped attempt's copy counted as free on top wrapped the sum to less
// than none, and the rerun was refused.
func TestCheckSpaceUnlimitedAttack(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "a.wacz")
	if err := os.WriteFile(pkg, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "a.wacz#archive/1.warc.gz"
	members := map[string]PackageMember{name: {Path: pkg, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 50, Size: 400}}
	if err := os.WriteFile(filepath.Join(dir, stageName(members[name])), make([]byte, 400), 0o644); err != nil {
		t.Fatal(err)
	}
	pr := &PackageRewrite{Members: members, Jobs: 1,
		fileSystem: func(string) (uint64, int64, bool) { return 1, math.MaxInt64, true }}
	if err := pr.checkSpace([]string{name}, nil); err != nil {
		t.Errorf("checkSpace with unlimited room and a stopped attempt's copy: %v", err)
	}
}

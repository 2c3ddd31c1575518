package collock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNetworkFSLocksLocally proves that the file systems whose flock is,
// by default, the client host's alone take the lock file, those named in
// the package comment, AFS through the kernel's own client (kAFS) too,
// whose magic number is another than OpenAFS's.
func TestNetworkFSLocksLocally(t *testing.T) {
	cases := []struct {
		name  string
		magic int64
		want  bool
	}{
		{"NFS", 0x6969, true},
		{"CIFS", 0xff534d42, true},
		{"FUSE", 0x65735546, true},
		{"OpenAFS", 0x5346414f, true},
		{"kAFS", 0x6b414653, true},
		{"ext4", 0xef53, false},
		{"tmpfs", 0x01021994, false},
		{"XFS", 0x58465342, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := networkFS(c.magic); got != c.want {
				t.Errorf("networkFS(%#x) = %v, want %v", c.magic, got, c.want)
			}
		})
	}
}

// TestLockFileNotALockFile proves that a LockFile name that gives another
// file (a hard link to one of the directory's archives, a symbolic link)
// is refused, the file it gives left as it was: taking it for a lock
// truncated the file to the holder's line.
func TestLockFileNotALockFile(t *testing.T) {
	cases := []struct {
		name string
		make func(lockName, data string) error
	}{
		{"a hard link to an archive", func(lockName, data string) error { return os.Link(data, lockName) }},
		{"a symbolic link to an archive", func(lockName, data string) error { return os.Symlink(filepath.Base(data), lockName) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			id, err := idOf(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "a.warc")
			content := []byte("WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n")
			if err := os.WriteFile(data, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.make(filepath.Join(dir, LockFile), data); err != nil {
				t.Fatal(err)
			}
			l, err := (&Set{}).lockFile(dir, id)
			if err == nil {
				l.release()
				t.Errorf("locked through %s", c.name)
			}
			if got, _ := os.ReadFile(data); string(got) != string(content) {
				t.Errorf("a.warc now holds %q, want it as it was", got)
			}
		})
	}
}

// TestLockFileNoLock proves that a directory whose file system offers no
// lock (ENOLCK: NFS without its lock daemon, where flock is emulated with
// POSIX locks and a directory's fails with EBADF) refuses the job saying
// so, and leaves no LockFile the refused job made (it stayed in the
// collection); one a killed job left before stays as it was.
func TestLockFileNoLock(t *testing.T) {
	cases := []struct {
		name string
		left string // LockFile's content before; "" for none
	}{
		{"no lock file before", ""},
		{"a killed job's lock file", "process 1 on elsewhere: warcdedup run /coll\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, LockFile)
			if c.left != "" {
				if err := os.WriteFile(name, []byte(c.left), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The directory's flock fails as emulated flock does on a
			// descriptor open read-only; the lock file's finds no lock.
			s := &Set{flock: func(fd, how int) error {
				if fi, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && fi.IsDir() {
					return syscall.EBADF
				}
				return syscall.ENOLCK
			}}
			err := s.Add(dir)
			if err == nil || !strings.Contains(err.Error(), dir+": its file system offers no lock") {
				t.Errorf("got %v, want a refusal saying the file system offers no lock", err)
			}
			got, err := os.ReadFile(name)
			switch {
			case c.left == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("%s left by the refused job (%v)", LockFile, err)
			case c.left != "" && string(got) != c.left:
				t.Errorf("%s now holds %q (%v), want it as the killed job left it", LockFile, got, err)
			}
			if len(s.Dirs()) != 0 {
				t.Errorf("the set holds %v after the refusal", s.Dirs())
			}
		})
	}
}

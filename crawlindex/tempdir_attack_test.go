package crawlindex

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestTempDirLockSharedAcrossHosts proves the lock a TempDir is held by
// is one a network file system shares between its hosts: on NFS, where
// a cluster's index directory is shared, flock(2) is made a lock of the
// server's only for a regular file, and an exclusive one only for a file
// open for writing; a directory's lock is the host's alone, and a commit
// on another host (its cleanup) removed the directory of an import
// running here. Not NFS here: what is checked is what the lock is taken
// on, and that another opener of it (as a cleanup is) finds it taken.
func TestTempDirLockSharedAcrossHosts(t *testing.T) {
	td, err := NewTempDir(t.TempDir(), "import")
	if err != nil {
		t.Fatal(err)
	}
	defer td.Remove()
	fi, err := td.lock.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("the lock is taken on %s, a %v: on NFS another host does not see it", td.lock.Name(), fi.Mode().Type())
	}
	rc, err := td.lock.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	rc.Control(func(fd uintptr) { flags, ferr = fcntlGetfl(fd) })
	if ferr != nil {
		t.Fatal(ferr)
	}
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		t.Errorf("the lock file %s is open for reading only: on NFS an exclusive flock of it fails (EBADF)", td.lock.Name())
	}
	other, err := os.OpenFile(filepath.Join(td.Path, filepath.Base(td.lock.Name())), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Errorf("another opener's lock: %v, want EWOULDBLOCK: the TempDir is not locked through its lock file", err)
	}
}

func fcntlGetfl(fd uintptr) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// TestTempDirCleanupWithoutLockFile: a TempDir without its lock file (a
// Remove under way or killed, or one made by the version that locked the
// directory itself, still running) is removed by a commit's cleanup only
// if nobody holds the directory's own lock.
func TestTempDirCleanupWithoutLockFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		locked bool
		want   bool // still there after the cleanup
	}{
		{"directory locked, no lock file", true, true},
		{"nothing locked, no lock file", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, err := os.MkdirTemp(dir, tempWorkPrefix+"import-")
			if err != nil {
				t.Fatal(err)
			}
			if c.locked {
				d, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
			}
			cleanup(dir, 0)
			_, err = os.Stat(path)
			if got := err == nil; got != c.want {
				t.Errorf("there after the cleanup: %v, want %v (%v)", got, c.want, err)
			}
		})
	}
}

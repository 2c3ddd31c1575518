package crawlindex

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"warcdedup/atomicfile"
)

// TempDir is a temporary directory in an index's directory, for the
// sorted copies an import, a removal or a deep verify makes (as large as
// the originals they sort), locked (flock) while it is in use: a commit's
// cleanup removes one that a killed command left, never one another
// process is using.
//
// The lock is on a regular file in it (tempLockFile), open for writing,
// as the index's own lock is, not on the directory: on NFS, where the
// index of a cluster's crawls is shared by its hosts, flock(2) is made a
// lock of the server's (a byte-range lock of the whole file) for a
// regular file only, and only open for writing for an exclusive one; a
// directory's is a lock of the host that took it alone, which another
// host's commit does not see, and would remove the directory of an
// import running there.
type TempDir struct {
	Path string
	lock *os.File
}

// tempWorkPrefix starts the name of a TempDir once it is locked; it is
// made under tempNewPrefix, which no cleanup removes, and renamed once
// locked, so that no cleanup takes it between its making and its lock.
const (
	tempWorkPrefix = atomicfile.TempPrefix + "work-"
	tempNewPrefix  = atomicfile.TempPrefix + "new-"
	tempLockFile   = ".lock"
)

// NewTempDir makes a locked temporary directory in dir, named for kind
// ("import", "verify").
func NewTempDir(dir, kind string) (*TempDir, error) {
	made, err := os.MkdirTemp(dir, tempNewPrefix+kind+"-")
	if err != nil {
		return nil, err
	}
	f, err := lockTempDir(made, os.O_CREATE)
	if err != nil {
		os.RemoveAll(made)
		return nil, err
	}
	path := filepath.Join(dir, tempWorkPrefix+strings.TrimPrefix(filepath.Base(made), tempNewPrefix))
	if err := os.Rename(made, path); err != nil {
		f.Close()
		os.RemoveAll(made)
		return nil, err
	}
	return &TempDir{Path: path, lock: f}, nil
}

// Remove removes the directory and what it holds, and gives the lock up.
func (t *TempDir) Remove() {
	os.RemoveAll(t.Path)
	t.lock.Close()
}

// removeUnlockedTempDirs removes the TempDirs in dir that no process
// holds: those a killed command left.
func removeUnlockedTempDirs(dir string, entries []os.DirEntry) {
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempWorkPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := lockTempDir(path, 0)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Renamed here only once locked: its lock file is gone with
			// a Remove under way, or one a kill stopped; or it is one of
			// a version that locked the directory itself, which is
			// looked at as that version did.
			if d, err := os.Open(path); err == nil {
				if syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
					os.RemoveAll(path)
				}
				d.Close()
			}
		case err == nil:
			os.RemoveAll(path)
			f.Close()
		}
	}
}

// lockTempDir takes the lock of the TempDir at path (flag: os.O_CREATE
// for one being made), without waiting.
func lockTempDir(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(path, tempLockFile), os.O_RDWR|flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

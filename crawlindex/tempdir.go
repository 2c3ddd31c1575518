package crawlindex

import (
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
)

// NewTempDir makes a locked temporary directory in dir, named for kind
// ("import", "verify").
func NewTempDir(dir, kind string) (*TempDir, error) {
	made, err := os.MkdirTemp(dir, tempNewPrefix+kind+"-")
	if err != nil {
		return nil, err
	}
	f, err := os.Open(made)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.Remove(made)
		return nil, err
	}
	path := filepath.Join(dir, tempWorkPrefix+strings.TrimPrefix(filepath.Base(made), tempNewPrefix))
	if err := os.Rename(made, path); err != nil {
		f.Close()
		os.Remove(made)
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
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(path)
		}
		f.Close()
	}
}

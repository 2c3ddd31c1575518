// Package atomicfile writes a file so that its name only ever refers to
// nothing, the old content, or the complete new content: the bytes go to a
// temporary file in the same directory, which is synced and renamed over the
// name, and the directory is synced, so a crash, a kill or a full disk at any
// instant leaves no partial file under the name.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is a file being written under a temporary name.
type File struct {
	*os.File
	name string // the final name
	done bool
}

// TempPrefix starts the name of every temporary file, so that nobody (and no
// glob for *.warc.gz) takes one for a finished file.
const TempPrefix = ".tmp-"

// Create starts writing the file name. The temporary file is
// ".tmp-<base>-<random>" in name's directory, so the rename cannot cross
// file systems.
func Create(name string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+base+"-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, name: name}, nil
}

// ErrNotSynced wraps the error of a Commit that renamed the file but could
// not sync its directory (some network and FUSE file systems refuse to):
// the name holds the complete new content, but the rename may not survive
// a crash of the machine.
var ErrNotSynced = errors.New("renamed, but the directory could not be synced")

// Commit syncs the file, renames it over the final name and syncs the
// directory. After an error the temporary file is removed and the final
// name is untouched, except for an error wrapping ErrNotSynced, which comes
// after the rename.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: Commit after Commit or Abort")
	}
	f.done = true
	tmp := f.File.Name()
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	if err := SyncDir(filepath.Dir(f.name)); err != nil {
		return fmt.Errorf("%s: %w: %v", f.name, ErrNotSynced, err)
	}
	return nil
}

// Abort removes the temporary file; the final name is untouched. It does
// nothing after Commit, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// Name is the final name.
func (f *File) Name() string { return f.name }

// SyncDir syncs a directory, making a rename in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// RemoveLeftovers deletes the temporary files that Create made for name and
// that an interrupted run never committed nor aborted (a killed process):
// nothing refers to them. Only names Create can have made for name are
// removed: its random part is digits, so the temporary file of another file
// whose name starts with name's ("a.warc-2.warc" beside "a.warc"), which
// another writer may be writing, is left alone.
func RemoveLeftovers(name string) {
	prefix := TempPrefix + filepath.Base(name) + "-"
	entries, err := os.ReadDir(filepath.Dir(name))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && e.Type().IsRegular() && isDigits(rest) {
			os.Remove(filepath.Join(filepath.Dir(name), e.Name()))
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

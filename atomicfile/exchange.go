package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrExchangeUnsupported is Exchange where the kernel or the file system
// cannot exchange two names (renameat2 RENAME_EXCHANGE: Linux 3.15 and
// later, on most local file systems; not on NFS, nor off Linux). The File
// is left as it was: Commit can follow.
var ErrExchangeUnsupported = errors.New("the file system cannot exchange two names (renameat2 RENAME_EXCHANGE)")

// Swapped is a File exchanged with its final name (Exchange): the name
// holds the new content, the temporary name what the name held until
// then, which the caller looks at (Old) before it either removes it
// (Finish) or puts it back (Revert). A crash meanwhile leaves the new
// content under the name and what it replaced under the temporary name,
// which RemoveLeftovers removes, as after a rename.
type Swapped struct {
	f         *File
	dir       *os.File    // the directory of both names
	tmp, name string      // their base names in dir
	new       os.FileInfo // the new content, as it was before the exchange
}

// Exchange syncs the file and exchanges it with the final name in one
// step (renameat2 RENAME_EXCHANGE), where Commit would rename it over the
// name: what the name held is not gone but under the temporary name, so
// that the caller can check it is what it means to replace. With
// ErrExchangeUnsupported nothing happened; after any other error the
// temporary file is removed and the final name is untouched, as after a
// failed Commit.
func (f *File) Exchange() (*Swapped, error) {
	if f.done {
		return nil, errors.New("atomicfile: Exchange after Commit or Abort")
	}
	if err := f.File.Sync(); err != nil {
		return nil, f.fail(err)
	}
	newInfo, err := f.File.Stat()
	if err != nil {
		return nil, f.fail(err)
	}
	dir, err := f.openDir()
	if err != nil {
		return nil, f.fail(err)
	}
	s := &Swapped{f: f, dir: dir, tmp: filepath.Base(f.tmp), name: filepath.Base(f.name), new: newInfo}
	switch err := exchange(dir, s.tmp, s.name); {
	case errors.Is(err, ErrExchangeUnsupported):
		dir.Close()
		return nil, err
	case err != nil:
		dir.Close()
		return nil, f.fail(err)
	}
	f.done = true
	f.File.Close()
	return s, nil
}

// fail ends f after a failed Exchange: the temporary file is removed.
func (f *File) fail(err error) error {
	f.done = true
	f.File.Close()
	f.remove()
	return fmt.Errorf("writing %s: %w", f.name, err)
}

// openDir opens the directory of the final name (and of the temporary
// one), through the root if there is one.
func (f *File) openDir() (*os.File, error) {
	if f.root != nil {
		return f.root.Open(filepath.Dir(f.name))
	}
	return os.Open(filepath.Dir(f.name))
}

// Old is what the temporary name holds: the file that was under the
// final name when it was exchanged (not followed if a symbolic link).
func (s *Swapped) Old() (os.FileInfo, error) { return s.f.lstatTemp() }

// OldName is the temporary name, where the file that was under the final
// name now is: for a message, should neither Finish nor Revert succeed.
func (s *Swapped) OldName() string { return s.f.tmp }

// Finish removes what the exchange put under the temporary name (the
// file replaced) and syncs the directory: the new content stays under
// the final name, as after Commit (whose ErrNotSynced it returns alike).
func (s *Swapped) Finish() error {
	defer s.dir.Close()
	if err := s.f.removeTemp(); err != nil {
		return fmt.Errorf("removing the version %s replaced, under %s: %w", s.f.name, s.f.tmp, err)
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("%s: %w: %v", s.f.name, ErrNotSynced, err)
	}
	return nil
}

// Revert exchanges the two names again, so that the final name holds what
// it held before Exchange, and removes the new content from the temporary
// name, once it is seen to be there still (something else is left where
// it is, and named in the error).
func (s *Swapped) Revert() error {
	defer s.dir.Close()
	if err := exchange(s.dir, s.tmp, s.name); err != nil {
		return fmt.Errorf("putting back what %s held, now under %s: %w", s.f.name, s.f.tmp, err)
	}
	now, err := s.f.lstatTemp()
	if err != nil {
		return fmt.Errorf("%s after putting back what %s held: %w", s.f.tmp, s.f.name, err)
	}
	if !os.SameFile(now, s.new) {
		return fmt.Errorf("%s holds another file than the new version of %s once put back: left there", s.f.tmp, s.f.name)
	}
	if err := s.f.removeTemp(); err != nil {
		return err
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("%s: %w: %v", s.f.name, ErrNotSynced, err)
	}
	return nil
}

// lstatTemp is os.Lstat of the temporary name.
func (f *File) lstatTemp() (os.FileInfo, error) {
	if f.root != nil {
		return f.root.Lstat(f.tmp)
	}
	return os.Lstat(f.tmp)
}

// removeTemp removes the temporary name.
func (f *File) removeTemp() error {
	if f.root != nil {
		return f.root.Remove(f.tmp)
	}
	return os.Remove(f.tmp)
}

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
// which RemoveLeftovers removes, as after a rename (a rewrite log's
// recovery keeps, with Keep, one a writer appended to meanwhile).
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
// the final name, as after Commit (whose ErrNotSynced it returns alike,
// also when the version replaced cannot be removed: the file is replaced).
func (s *Swapped) Finish() error {
	defer s.dir.Close()
	if err := s.f.removeTemp(); err != nil {
		// Replaced all the same: the name holds the new content, as after
		// a Commit whose directory sync failed, and the caller must take
		// it so (ErrNotSynced), not as a file left as it was. The version
		// replaced stays under the temporary name, a leftover as any.
		s.dir.Sync()
		return fmt.Errorf("%s: %w: the version it replaced could not be removed from %s: %v", s.f.name, ErrNotSynced, s.f.tmp, err)
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("%s: %w: %v", s.f.name, ErrNotSynced, err)
	}
	return nil
}

// Revert exchanges the two names again, so that the final name holds what
// it held before Exchange, and removes the new content from the temporary
// name, once it is seen to be there still (something else is left where
// it is, and named in the error) and as it was: a process that opened the
// final name while the new content held it (an open that waited for a
// lease on what the name held before, was interrupted by a signal and
// started again, finds the name anew) may be writing to it. If its size
// or modification time changed, or inUse (if not nil), given it open for
// reading, says it is open for writing, it is kept under a name of its
// own and named in a *KeptError, with whatever was written to it. It is
// given that name before it is looked at, so that a kill during the look
// leaves it there (untouched, maybe, and named by no error) rather than
// under the temporary name only, which the next run removes. inUse is
// also where a caller that knows the new content (its sum) compares it:
// size and modification time miss a write of the same size within the
// file system's timestamp tick.
func (s *Swapped) Revert(inUse func(*os.File) error) error {
	defer s.dir.Close()
	if err := exchange(s.dir, s.tmp, s.name); err != nil {
		return fmt.Errorf("putting back what %s held, now under %s: %w", s.f.name, s.f.tmp, err)
	}
	now, err := s.f.lstatTemp()
	if err != nil {
		return fmt.Errorf("%s after putting back what %s held: %w", s.f.tmp, s.f.name, err)
	}
	if !os.SameFile(now, s.new) {
		// Renamed over the name while the new version held it (rsync, a
		// repair tool): kept beside the file, as the next run removes the
		// temporary name.
		what := fmt.Errorf("another file than its new version was put under the name meanwhile (renamed over it)")
		kept, err := s.keepName()
		if err != nil {
			return fmt.Errorf("%s holds another file than the new version of %s once put back: left there, as it could not be given a name of its own: %w", s.f.tmp, s.f.name, err)
		}
		if err := s.f.removeTemp(); err != nil {
			return fmt.Errorf("%s: %v: kept as %s, and still under %s: %w", s.f.name, what, kept, s.f.tmp, err)
		}
		s.dir.Sync()
		return &KeptError{Name: s.f.name, Path: kept, Why: what}
	}
	// Named beside the file before it is looked at: a kill during the
	// look (a /proc scan takes milliseconds) would otherwise leave it only
	// under the temporary name, which the next run removes, with what a
	// writer holding it open wrote and writes.
	// (Where hard links cannot be made, it is looked at first, as the
	// only name it can have then is the temporary one.)
	kept, linkErr := s.keepName()
	if why := s.touched(now, inUse); why != nil {
		if linkErr != nil {
			return fmt.Errorf("%s: its new version took the name and gave it back, and may have been written to meanwhile (%v): left under %s, as it could not be given a name of its own: %w", s.f.name, why, s.f.tmp, linkErr)
		}
		if err := s.f.removeTemp(); err != nil {
			return fmt.Errorf("%s kept as %s, and still under %s: %w", s.f.name, kept, s.f.tmp, err)
		}
		s.dir.Sync()
		return &KeptError{Name: s.f.name, Path: kept, Why: why}
	}
	// The kept name first: a kill between the two removals leaves only
	// the temporary name, for the next run to remove.
	if linkErr == nil {
		if err := s.f.removeName(kept); err != nil {
			return err
		}
	}
	if err := s.f.removeTemp(); err != nil {
		return err
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("%s: %w: %v", s.f.name, ErrNotSynced, err)
	}
	return nil
}

// touched says why the new content, now under the temporary name, must
// not be removed: it changed since the exchange, or inUse finds it open
// for writing; nil if neither.
func (s *Swapped) touched(now os.FileInfo, inUse func(*os.File) error) error {
	if now.Size() != s.new.Size() || !now.ModTime().Equal(s.new.ModTime()) {
		return fmt.Errorf("it has %d bytes, %d were written", now.Size(), s.new.Size())
	}
	if inUse == nil {
		return nil
	}
	f, err := s.f.openTemp()
	if err != nil {
		return fmt.Errorf("it cannot be looked at: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, s.new) {
		return fmt.Errorf("it cannot be looked at: %v", err)
	}
	return inUse(f)
}

// KeptError is what Revert took back from the final name and kept under
// a name of its own, Path, rather than remove it, for the operator to
// look at; Why says what it is: the new content, which another process
// may have written to while it held the name, or a file another process
// renamed over the name meanwhile. The final name holds what it held
// before Exchange.
type KeptError struct {
	Name, Path string
	Why        error
}

func (e *KeptError) Error() string {
	return fmt.Sprintf("%s: its new version took the name and gave it back (%v): what the name held meanwhile is kept as %s, with anything written to it, beside the file as it was", e.Name, e.Why, e.Path)
}

func (e *KeptError) Unwrap() error { return e.Why }

// KeptSuffix ends the name of a new version kept by Revert
// ("<name>.kept-<digits>"): not a temporary file's, so that no cleanup of
// leftovers removes it, nor a WARC's, so that no run takes it for one.
const KeptSuffix = ".kept-"

// keepName links the new content, under the temporary name, under a
// name of its own beside the final name ("<name>.kept-<digits>"), and
// returns it.
func (s *Swapped) keepName() (string, error) {
	return linkKept(s.f.name, s.f.linkTemp)
}

// lstatTemp is os.Lstat of the temporary name.
func (f *File) lstatTemp() (os.FileInfo, error) {
	if f.root != nil {
		return f.root.Lstat(f.tmp)
	}
	return os.Lstat(f.tmp)
}

// openTemp opens the temporary name for reading.
func (f *File) openTemp() (*os.File, error) {
	if f.root != nil {
		return f.root.Open(f.tmp)
	}
	return os.Open(f.tmp)
}

// linkTemp links what the temporary name holds under name as well.
func (f *File) linkTemp(name string) error {
	if f.root != nil {
		return f.root.Link(f.tmp, name)
	}
	return os.Link(f.tmp, name)
}

// removeName removes name (in the final name's directory, through the root
// if there is one).
func (f *File) removeName(name string) error {
	if f.root != nil {
		return f.root.Remove(name)
	}
	return os.Remove(name)
}

// removeTemp removes the temporary name.
func (f *File) removeTemp() error {
	if f.root != nil {
		return f.root.Remove(f.tmp)
	}
	return os.Remove(f.tmp)
}

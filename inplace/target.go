package inplace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"warcdedup/atomicfile"
)

// Target is a file opened to be replaced by a new version written beside
// it: the file as it was when opened, the name it is found by, and, when
// guarded, a guard against other processes writing it (see
// ErrOpenForWriting). Before the new version is renamed over it, the
// replacement checks that the name still leads to the file as it was
// (Unchanged), gives the new version the file's owner, mode and extended
// attributes (KeepAttributes), and looks for writers last (CheckWriters).
type Target struct {
	File *os.File
	Info os.FileInfo // as opened
	// Path is the file's path, for messages; "" for File.Name().
	Path string
	// stat is the file's name as it stands now, not following a last
	// symbolic link.
	stat    func() (os.FileInfo, error)
	writers *writerGuard
}

// NewTarget returns the Target of f, open for reading, whose name stat
// looks up again (os.Lstat of its path, or a root's Stat); guard starts
// guarding it against writers, until Release.
func NewTarget(f *os.File, stat func() (os.FileInfo, error), guard bool) (*Target, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t := &Target{File: f, Info: info, stat: stat}
	if guard {
		if t.writers, err = guardWriters(f); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Unchanged checks that the name still leads to the file opened, with
// the size and modification time it had: bytes appended meanwhile (a
// crawler still writing it) would otherwise be lost by the replacement.
func (t *Target) Unchanged() error {
	now, err := t.stat()
	if err != nil {
		return err
	}
	if !os.SameFile(t.Info, now) || now.Size() != t.Info.Size() || !now.ModTime().Equal(t.Info.ModTime()) {
		return fmt.Errorf("%w (%d bytes, now %d): run again", ErrChangedMeanwhile, t.Info.Size(), now.Size())
	}
	return nil
}

// Displaced checks the file that the new version's exchange with the name
// took from it (old, with the error of looking it up), before it is
// removed: it must be the file opened, with the size and modification time
// it had, and no writer seen (CheckWriters): anything else is what another
// process put or wrote there after the last look, which the replacement
// would lose.
func (t *Target) Displaced(old os.FileInfo, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("the file its new version took the name from: %w", err)
	case !os.SameFile(t.Info, old):
		return fmt.Errorf("%w: run again", ErrReplacedMeanwhile)
	case old.Size() != t.Info.Size() || !old.ModTime().Equal(t.Info.ModTime()):
		return fmt.Errorf("%w (%d bytes, now %d): run again", ErrChangedMeanwhile, t.Info.Size(), old.Size())
	}
	return t.CheckWriters()
}

// DisplacedError is a replacement undone: what the new version's
// exchange took from the name was not the file as opened, with no writer
// (Why, see Displaced), so the name was given back to it. Kept, if not
// "", is where what held the name meanwhile was kept rather than removed,
// as another process may have written to it (KeptWhy).
type DisplacedError struct {
	Why     error
	Kept    string
	KeptWhy error
}

func (e *DisplacedError) Error() string {
	if e.Kept == "" {
		return e.Why.Error()
	}
	return fmt.Sprintf("%v; the name was given back to it, and what held the name meanwhile, which another process may have written (%v), is kept, with anything written to it, as %s: look at it before removing it", e.Why, e.KeptWhy, e.Kept)
}

func (e *DisplacedError) Unwrap() error { return e.Why }

// Put puts tmp, the new version, checked, under the file's name: it
// exchanges the two (renameat2 RENAME_EXCHANGE) rather than renaming over
// the file, and what the exchange took from the name must then be the
// file opened, as it was, with no writer seen (Displaced), or the
// exchange is undone and a *DisplacedError returned, the file untouched.
// Between the last look and a rename a writer could open the file, or
// another process rename a file over it, and be lost; between the
// exchange and the look after it, neither can: each finds the file under
// the temporary name, where it stays. Only then is the old version
// removed. A new version given the name back is kept, not removed, if
// another process may have written to it (atomicfile.Swapped.Revert): an
// open that waited for the lease on the file, was interrupted by a signal
// and started again found it under the name. look says whether it is
// still as written, nil for only whether another process holds it open
// for writing.
//
// Where the file system cannot exchange names, noExchange (if not nil)
// is told, and the new version is renamed over the file. If giving the
// name back fails, the error says which file the name holds and where
// the other is (the caller must stop).
func (t *Target) Put(tmp *atomicfile.File, look func(*os.File) error, noExchange func(error)) error {
	sw, err := tmp.Exchange()
	if errors.Is(err, atomicfile.ErrExchangeUnsupported) {
		if noExchange != nil {
			noExchange(err)
		}
		return tmp.Commit()
	}
	if err != nil {
		return err
	}
	why := t.Displaced(sw.Old())
	if why == nil {
		return sw.Finish()
	}
	if look == nil {
		look = openForWritingNow
	}
	return t.reverted(why, sw.Revert(look), sw.OldName())
}

// reverted is what Put returns once it gave the name back (the
// exchange's Revert, with err) for why: a *DisplacedError, the file
// untouched, or a *stuckError if the name may not hold it. A Revert
// whose only failure is the directory's sync (atomicfile.ErrNotSynced)
// did give the name back: the file is untouched, and the error must not
// wrap ErrNotSynced, which callers take for a replacement made.
func (t *Target) reverted(why, err error, old string) error {
	var kept *atomicfile.KeptError
	switch {
	case errors.As(err, &kept):
		return &DisplacedError{Why: why, Kept: filepath.Join(filepath.Dir(t.path()), filepath.Base(kept.Path)), KeptWhy: kept.Why}
	case errors.Is(err, atomicfile.ErrNotSynced):
		return &DisplacedError{Why: fmt.Errorf("%w (the name given back to it, its directory not synced: %v)", why, err)}
	case err != nil:
		return &stuckError{File: t.path(), Why: why, Err: err, Old: old}
	}
	return &DisplacedError{Why: why}
}

func (t *Target) path() string {
	if t.Path != "" {
		return t.Path
	}
	return t.File.Name()
}

// KeepAttributes gives dst, the new version, what the file has besides
// its bytes: owner and group (a replacement made as root must not hand an
// archive's files to root), permission bits with setuid, setgid and
// sticky, and extended attributes (ACLs and SELinux labels among them),
// through the open files. The modification time is not kept: the content
// changed, and tools that copy by size and time (rsync) must see it.
func (t *Target) KeepAttributes(dst *os.File) error {
	if err := keepAttributes(dst, t.File, t.Info, false); err != nil {
		return fmt.Errorf("cannot give the new version the file's owner, mode or attributes: %w", err)
	}
	return nil
}

// CheckWriters reports whether another process has the file open for
// writing, or opened it for writing since the guard started (nil for a
// Target not guarded): the last look before the rename.
func (t *Target) CheckWriters() error { return t.writers.check() }

// Release stops guarding the file (before it is closed).
func (t *Target) Release() { t.writers.release() }

// keepAttributes gives dst src's owner and group, mode and extended
// attributes (info: src as opened). Lenient leaves out an owner, and an
// extended attribute, that this process may not give, and the setuid,
// setgid and sticky bits.
func keepAttributes(dst, src *os.File, info os.FileInfo, lenient bool) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		now, err := dst.Stat()
		if err != nil {
			return err
		}
		if cur, ok := now.Sys().(*syscall.Stat_t); !ok || cur.Uid != st.Uid || cur.Gid != st.Gid {
			if err := dst.Chown(int(st.Uid), int(st.Gid)); err != nil && !(lenient && errors.Is(err, fs.ErrPermission)) {
				return fmt.Errorf("owner %d, group %d: %w", st.Uid, st.Gid, err)
			}
		}
	}
	// The mode after the owner: a change of owner clears setuid and setgid.
	mode := info.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	if lenient {
		mode = info.Mode().Perm()
	}
	if err := dst.Chmod(mode); err != nil {
		return fmt.Errorf("mode %v: %w", mode, err)
	}
	return copyXattrs(dst, src, lenient)
}

// ShareAttributes gives dst, a new file that takes the place of src in a
// collection (a WARC converted from an ARC, beside it), src's permission
// bits and extended attributes, and its owner and group where this
// process may: unlike a replacement, a conversion may be made by a user
// who can write the directory but does not own the file.
func ShareAttributes(dst, src *os.File) error {
	info, err := src.Stat()
	if err != nil {
		return err
	}
	return keepAttributes(dst, src, info, true)
}

// Link puts the new file written and synced at tmp in place under name,
// which must not exist: a hard link, which fails (fs.ErrExist) rather
// than replace a file that took the name meanwhile, as a rename would;
// then the temporary name is removed and the directory synced.
func Link(tmp, name string) error {
	if err := os.Link(tmp, name); err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(name))
}

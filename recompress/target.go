package recompress

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The reasons a file is refused before it is read.
var (
	ErrHardLinks  = errors.New("the file has more than one hard link: replacing it would split them (recompress a copy, or use -o DIR)")
	ErrSymlinkOut = errors.New("a symbolic link to a file in another directory: name the file itself")
	ErrNotRegular = errors.New("not a regular file")
)

// target is the file to read and, in place, to replace: the named file, or
// the file a symbolic link names in the same directory.
type target struct {
	named string // as given
	path  string // the file itself
	f     *os.File
	info  fs.FileInfo
}

// openTarget opens the file name names. A symbolic link is followed only to
// a file in the directory it was named in, so that replacing the file in
// place never writes anywhere else; the file is opened without following
// a link, so that it cannot be swapped for one in between.
func openTarget(name string, inPlace bool) (*target, error) {
	t := &target{named: name, path: name}
	li, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(name)
		if err != nil {
			return nil, err
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(name))
		if err != nil {
			return nil, err
		}
		if filepath.Dir(resolved) != dir {
			return nil, fmt.Errorf("%w (it points to %s)", ErrSymlinkOut, resolved)
		}
		t.path = filepath.Join(filepath.Dir(name), filepath.Base(resolved))
	}
	f, err := os.OpenFile(t.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, ErrNotRegular
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && inPlace && st.Nlink > 1 {
		f.Close()
		return nil, fmt.Errorf("%w: %d links", ErrHardLinks, st.Nlink)
	}
	t.f, t.info = f, fi
	return t, nil
}

// unchanged checks that t.path is still the file that was read: the same
// file, size and modification time. A file still being written (a crawler
// appending to it) would otherwise lose what was appended.
func (t *target) unchanged() error {
	now, err := os.Lstat(t.path)
	if err != nil {
		return err
	}
	if !os.SameFile(t.info, now) || now.Size() != t.info.Size() || !now.ModTime().Equal(t.info.ModTime()) {
		return fmt.Errorf("the file changed while it was recompressed (%d bytes, now %d): run again", t.info.Size(), now.Size())
	}
	return nil
}

// keepOwnership gives f the owner, group and mode of t's file: the
// replacement must be the same file to everyone who could use it. Mode
// goes last, since a change of owner clears set-user-ID and set-group-ID.
func (t *target) keepOwnership(f *os.File) error {
	if st, ok := t.info.Sys().(*syscall.Stat_t); ok {
		if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("cannot give the new version the file's owner and group (%d:%d), so it is not replaced: %w", st.Uid, st.Gid, err)
		}
	}
	return f.Chmod(t.info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
}

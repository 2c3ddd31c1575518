package recompress

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"warcdedup/inplace"
)

// The reasons a file is refused before it is read.
var (
	ErrHardLinks  = errors.New("the file has more than one hard link: replacing it would split them (recompress a copy, or use -o DIR)")
	ErrSymlinkOut = errors.New("a symbolic link to a file in another directory: name the file itself")
	ErrNotRegular = errors.New("not a regular file")
)

// target is the file to read and, in place, to replace (inplace.Target):
// the named file, or the file a symbolic link names in the same
// directory.
type target struct {
	named string // as given
	path  string // the file itself
	*inplace.Target
}

// openTarget opens the file name names. A symbolic link is followed only to
// a file in the directory it was named in, so that replacing the file in
// place never writes anywhere else; the file is opened without following
// a link, so that it cannot be swapped for one in between. guard guards it
// against other processes writing it (in place, when it is to be
// replaced).
func openTarget(name string, inPlace, guard bool) (*target, error) {
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
	if t.Target, err = inplace.NewTarget(f, func() (fs.FileInfo, error) { return os.Lstat(t.path) }, guard); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// close stops guarding the file and closes it.
func (t *target) close() {
	t.Release()
	t.File.Close()
}

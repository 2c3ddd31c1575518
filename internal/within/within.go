// Package within tells whether a path lies inside a directory as the file
// system has them, not as they are spelt: a keep directory, a second copy
// or an output directory named through a symbolic link, a bind mount or
// ".." is found inside the collection it would damage.
package within

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Dir reports whether name is dir or lies beneath it. Directories are
// compared by identity (device and inode: os.SameFile), so that any name
// of dir counts, and dir reached through a link from inside name's path
// too. name need not exist: a path yet to be made is inside dir when its
// nearest existing ancestor is. dir must exist.
func Dir(name, dir string) (bool, error) {
	d, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	chain, err := ancestry(name)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(chain, func(fi os.FileInfo) bool { return os.SameFile(fi, d) }), nil
}

// ancestry is name's nearest existing path (name itself, or the first of
// its parents that exists), its symbolic links resolved, then each
// directory above it up to the root, as stat gives them.
func ancestry(name string) ([]os.FileInfo, error) {
	p, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			p = real
			break
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return nil, err
		}
		p = parent
	}
	var chain []os.FileInfo
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		chain = append(chain, fi)
		parent := filepath.Dir(p)
		if parent == p {
			return chain, nil
		}
		p = parent
	}
}

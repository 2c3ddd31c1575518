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
	"strings"
)

// Dir reports whether name is dir or lies beneath it. Directories are
// compared by identity (device and inode: os.SameFile), so that any name
// of dir counts, and dir reached through a link from inside name's path
// too. name need not exist: a path yet to be made is inside dir when its
// nearest existing ancestor is. A ".." after a symbolic link in name is
// taken both as the kernel takes it (the link's target's parent: what
// os.MkdirAll(name) makes) and as filepath.Clean and Join take it (the
// spelling cleaned of it: what a path joined to name opens): name is
// inside when either is. A dir that does not exist yet (a work
// directory a job will make) has no identity: both are then compared as
// paths, each with its symbolic links resolved as far as it exists
// (resolveExisting).
func Dir(name, dir string) (bool, error) {
	d, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return byPath(name, dir)
	}
	if err != nil {
		return false, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return false, err
	}
	spelt := name
	if !filepath.IsAbs(spelt) {
		wd, err := os.Getwd()
		if err != nil {
			return false, err
		}
		spelt = wd + string(filepath.Separator) + spelt
	}
	for _, p := range []string{abs, spelt} {
		chain, err := ancestry(p)
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(chain, func(fi os.FileInfo) bool { return os.SameFile(fi, d) }) {
			return true, nil
		}
	}
	return false, nil
}

// ancestry is the nearest existing path of p, an absolute path as it is
// spelt (p itself, or the first that exists of the paths left when its
// last elements are cut off, as written: never cleaned of "..", which
// EvalSymlinks resolves after the links before it), its symbolic links
// resolved, then each directory above it up to the root, as stat gives
// them.
func ancestry(p string) ([]os.FileInfo, error) {
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			p = real
			break
		}
		parent := cutLast(p)
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

// cutLast is the absolute path p without its last element, as spelt
// (filepath.Dir would clean "a/link/.." to "a"); the root stays the root.
func cutLast(p string) string {
	p = strings.TrimRight(p, string(filepath.Separator))
	i := strings.LastIndexByte(p, filepath.Separator)
	if i <= 0 {
		return string(filepath.Separator)
	}
	return p[:i]
}

// byPath reports whether name is dir or beneath it as paths, both
// absolute and resolved as far as they exist.
func byPath(name, dir string) (bool, error) {
	n, err := resolveExisting(name)
	if err != nil {
		return false, err
	}
	d, err := resolveExisting(dir)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(d, n)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}

// resolveExisting is name absolute, its symbolic links resolved as far as
// it exists, the rest as spelt (cleaned).
func resolveExisting(name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	for p, rest := abs, ""; ; {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

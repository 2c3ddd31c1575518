// Package fspath spells paths as the file system takes them.
//
// filepath.Abs and filepath.Clean drop "dir/.." by spelling alone. After a
// symbolic link the kernel goes elsewhere: "to-sub/.." is the parent of
// the link's target, the directory ls(1) lists and open(2) reads in, not
// the directory holding the link. A job named on "to-sub/.." must read and
// rewrite the files the user sees there, never those of another directory
// whose names happen to match.
package fspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Abs returns an absolute path of name as the kernel resolves it. A name
// with no ".." element is what filepath.Abs makes of it: its symbolic
// links are kept as spelt, since a collection named through a link is
// known by that name (its work directory, its job's state). In a name
// with "..", the part up to the last ".." is resolved link by link
// (filepath.EvalSymlinks takes each ".." after the links before it) and
// the rest, which holds no "..", is joined to it; but where that part
// cleaned by spelling is the same directory (no link between a ".." and
// the directory it goes back to), the name is spelt as filepath.Abs
// spells it, links above kept: a job run on "ln/coll" (or from a working
// directory reached through a link) knows its collection by that
// spelling, and "ln/coll/sub/../a.warc" named to undo or show must be
// found in it, not spelt "real/coll/a.warc". A name whose part up to
// the last ".." does not exist is spelt as filepath.Abs spells it: no
// file is reached through it, and a directory made along it
// (os.MkdirAll) is made there.
func Abs(name string) (string, error) {
	head, rest, ok := cutAfterLastDotDot(name)
	if !ok {
		return filepath.Abs(name)
	}
	if !filepath.IsAbs(head) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		// Not filepath.Join, which would clean the ".." away.
		head = wd + string(filepath.Separator) + head
	}
	real, err := filepath.EvalSymlinks(head)
	if errors.Is(err, fs.ErrNotExist) {
		return filepath.Abs(name)
	}
	if err != nil {
		return "", err
	}
	if sameDir(filepath.Clean(head), real) {
		return filepath.Abs(name)
	}
	return filepath.Join(real, rest), nil
}

// sameDir reports whether the paths a and b name the same file.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// cutAfterLastDotDot splits name after its last ".." element; ok is false
// when it has none.
func cutAfterLastDotDot(name string) (head, rest string, ok bool) {
	sep := string(filepath.Separator)
	elems := strings.Split(name, sep)
	last := -1
	for i, el := range elems {
		if el == ".." {
			last = i
		}
	}
	if last < 0 {
		return "", "", false
	}
	return strings.Join(elems[:last+1], sep), strings.Join(elems[last+1:], sep), true
}

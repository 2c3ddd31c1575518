package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/collock"
)

// LockJob locks what a conversion of collection on its own (arc2warc
// --in-place) may write in (package collock), as warcdedup run locks its
// collection: the collection's tree and, if keep is set, the keep
// directory's (LockKeepDir). Another job on the collection, or keeping
// ARC files in the same directory, refuses it before it converts anything.
func LockJob(collection, keep string) (*collock.Set, error) {
	locks, err := collock.LockJob([]string{collection}, nil)
	if err != nil {
		return nil, err
	}
	if keep != "" {
		if err := LockKeepDir(locks, keep, collection); err != nil {
			locks.Release()
			return nil, err
		}
	}
	return locks, nil
}

// CheckKeepDir refuses a keep directory that is collection or inside it
// (symbolic links, bind mounts and ".." followed). A job converting
// several collections with one keep directory checks it against each
// before it converts any: the ARC files of the first, kept inside a later
// one, would be listed, converted and removed with it.
func CheckKeepDir(keep, collection string) error {
	return checkKeepDir(keep, collection)
}

// LockKeepDir adds the keep directory and every directory beneath it to
// locks, before the conversion keeps an ARC there: two jobs keeping ARC
// files of the same names (two collections, or a job and a rerun with
// another work directory) would each find the other's copy, or remove
// the other's copy being written as a killed run's leftover. The keep
// directory is made first if it is not there (synced in its parent, as
// the conversion makes it): a directory's lock needs the directory.
// The directories a conversion makes in it later are locked as it makes
// them (Options.Locks). A keep directory in the collection is refused
// before it is made (as Converter.Run refuses it).
func LockKeepDir(locks *collock.Set, keep, collection string) error {
	abs, err := filepath.Abs(keep) // as Converter.Run spells it
	if err != nil {
		return fmt.Errorf("migrate: keep directory %s: %w", keep, err)
	}
	keep = abs
	if err := checkKeepDir(keep, collection); err != nil {
		return err
	}
	if err := (&Converter{}).mkdirAll(keep); err != nil {
		return fmt.Errorf("migrate: keep directory %s: %w", keep, err)
	}
	tree, err := collock.Tree(keep)
	if err != nil {
		return fmt.Errorf("migrate: keep directory %s: %w", keep, err)
	}
	return locks.Add(tree...)
}

// keepDir makes dir, a directory of the keep directory, one level at a
// time, each locked (Options.Locks) before anything is made in it: an
// ARC goes only into a directory the job holds, also one another job
// made (and holds) after this one locked the keep directory's tree.
func (c *Converter) keepDir(dir string) error {
	if c.Locks == nil {
		return os.MkdirAll(dir, 0o755)
	}
	rel, err := filepath.Rel(c.KeepARC, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not in the keep directory %s", dir, c.KeepARC)
	}
	d := c.KeepARC
	if err := c.Locks.Add(d); err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	for _, el := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, el)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := c.Locks.Add(d); err != nil {
			return err
		}
	}
	return nil
}

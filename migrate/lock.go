package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"warcdedup/collock"
	"warcdedup/internal/fspath"
	"warcdedup/warcsum"
)

// LockJob locks what a conversion of collection on its own (arc2warc
// --in-place) may write in (package collock), as warcdedup run locks its
// collection: the collection's tree and, if keep is set, the keep
// directory itself (LockKeepDir; the directories beneath it as the
// conversion uses them). Another job on the collection, or keeping ARC
// files in the same keep directory, refuses it before it converts
// anything.
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

// CheckKeepNotWork refuses a keep directory inside workDir, a work
// directory whose files are removed (checkKeepNotWork), before any
// collection of a job is converted: a later collection's work directory
// holding the keep directory would be refused only once the ARC files of
// the first were kept there. A work directory not made yet is compared
// by path (within.Dir).
func CheckKeepNotWork(keep, workDir string) error {
	return checkKeepNotWork(keep, workDir)
}

// LockKeepDir adds the keep directory itself to locks, before the
// conversion keeps an ARC there: two jobs keeping ARC files of the same
// names (two collections, or a job and a rerun with another work
// directory) would each find the other's copy, or remove the other's
// copy being written as a killed run's leftover; the second is refused
// before it converts anything. The keep directory is made first if it
// is not there (synced in its parent, as the conversion makes it): a
// directory's lock needs the directory. The directories beneath it are
// not locked here: a keep directory shared across years of collections
// holds thousands, and a lock holds a descriptor each. The conversion
// locks those it keeps ARC files in, and their parents, one level at a
// time as it first reaches them (Options.Locks, keepDir): one another
// job holds then (a collection beneath the keep directory) leaves the
// ARC in the collection, reported, for the rerun. A keep directory in
// the collection is refused before it is made (as Converter.Run refuses
// it).
func LockKeepDir(locks *collock.Set, keep, collection string) error {
	abs, err := fspath.Abs(keep) // as Converter.Run spells it
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
	return locks.Add(keep)
}

// checkKeepRoom refuses, before any ARC is converted, a job whose locks
// of the keep directories it will use (keepDirs) would leave it too few
// descriptors (collock.CheckRoom): each is locked only as the conversion
// first reaches it, and one that cannot be then leaves its ARC files in
// the collection, safe but not converted.
func (c *Converter) checkKeepRoom(arcs []warcsum.Input) error {
	if c.Locks == nil || c.KeepARC == "" {
		return nil
	}
	if n := len(keepDirs(arcs)); n > 0 {
		return collock.CheckRoom(c.KeepARC, n)
	}
	return nil
}

// keepDirs are the directories beneath the keep directory the ARC files
// arcs are kept in, and their parents, each once, by their names below
// it (the keep directory itself is locked up front).
func keepDirs(arcs []warcsum.Input) map[string]bool {
	dirs := map[string]bool{}
	for _, in := range arcs {
		for d := path.Dir(in.Name); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return dirs
}

// keepDir makes dir, a directory of the keep directory, one level at a
// time, each locked (Options.Locks) before anything is made or kept in
// it, whether this job makes it or finds it there: an ARC goes only into
// a directory the job holds. A directory another job holds (a BusyError),
// or whose lock fails (too few descriptors left), stops it: the ARC is
// not kept, so not removed (retire), and stays in the collection with
// its WARC, reported, for the rerun.
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

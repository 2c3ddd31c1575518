// Package atomicfile writes a file so that its name only ever refers to
// nothing, the old content, or the complete new content: the bytes go to a
// temporary file in the same directory, which is synced and renamed over the
// name, and the directory is synced, so a crash, a kill or a full disk at any
// instant leaves no partial file under the name.
package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// File is a file being written under a temporary name.
type File struct {
	*os.File
	root *os.Root // nil: name and tmp are ordinary paths
	name string   // the final name
	tmp  string   // the temporary name
	done bool
}

// TempPrefix starts the name of every temporary file, so that nobody (and no
// glob for *.warc.gz) takes one for a finished file.
const TempPrefix = ".tmp-"

// TempOf returns the base name whose new version a file named base
// (".tmp-<name>-<digits>", as Create names it) held; ok is false for any
// other name.
func TempOf(base string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(base, TempPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !ok || i <= 0 || !isDigits(rest[i+1:]) || i+1 == len(rest) {
		return "", false
	}
	return rest[:i], true
}

// Create starts writing the file name. The temporary file is
// ".tmp-<base>-<digits>" in name's directory, so the rename cannot cross
// file systems.
func Create(name string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+base+"-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, name: name, tmp: f.Name()}, nil
}

// CreateIn is Create confined to root: name is a slash-separated path
// beneath it, and neither the temporary file nor the rename can be led
// out of root by a symbolic link, even one swapped in meanwhile.
func CreateIn(root *os.Root, name string, perm os.FileMode) (*File, error) {
	dir, base := path.Split(name)
	for try := 0; ; try++ {
		tmp := path.Join(dir, TempPrefix+base+"-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := root.OpenFile(filepath.FromSlash(tmp), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := f.Chmod(perm); err != nil {
			f.Close()
			root.Remove(filepath.FromSlash(tmp))
			return nil, err
		}
		return &File{File: f, root: root, name: filepath.FromSlash(name), tmp: filepath.FromSlash(tmp)}, nil
	}
}

// ErrNotSynced wraps the error of a Commit that renamed the file but could
// not sync its directory (some network and FUSE file systems refuse to):
// the name holds the complete new content, but the rename may not survive
// a crash of the machine.
var ErrNotSynced = errors.New("renamed, but the directory could not be synced")

// Commit syncs the file, renames it over the final name and syncs the
// directory. After an error the temporary file is removed and the final
// name is untouched, except for an error wrapping ErrNotSynced, which comes
// after the rename.
func (f *File) Commit() error {
	if f.done {
		return errCommitted
	}
	err := f.syncAndClose()
	if err == nil {
		err = f.rename()
	}
	if err != nil {
		f.remove()
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	if err := f.syncDir(); err != nil {
		return fmt.Errorf("%s: %w: %v", f.name, ErrNotSynced, err)
	}
	return nil
}

// errCommitted: a File is committed or aborted once.
var errCommitted = errors.New("atomicfile: Commit after Commit or Abort")

// syncAndClose ends the writing of a file being committed: its content
// synced to disk, the file closed; the first error of the two.
func (f *File) syncAndClose() error {
	f.done = true
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// CommitUnsynced closes the file and renames it over the final name,
// without syncing either: for files whose content is checked on use (a
// cache entry, under the SHA-256 its stamp keeps), where a crash that
// leaves the name holding part of the bytes costs a reread, not a wrong
// result, and two syncs a file would cost more than they save.
func (f *File) CommitUnsynced() error {
	if f.done {
		return errCommitted
	}
	f.done = true
	err := f.File.Close()
	if err == nil {
		err = f.rename()
	}
	if err != nil {
		f.remove()
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	return nil
}

// CommitRenamed is Commit for a file whose name holding its complete
// content is all the caller needs: an error wrapping ErrNotSynced (the
// rename done, the directory not synced, as on file systems that refuse
// to) is no error. It is what outputs and work files, which a rerun makes
// again, use; a rewrite that must log what it replaced calls Commit.
func (f *File) CommitRenamed() error {
	if err := f.Commit(); err != nil && !errors.Is(err, ErrNotSynced) {
		return err
	}
	return nil
}

// CommitNew is Commit for a name that must not exist: the file is linked
// under it (fs.ErrExist, and the temporary file removed, if something is
// there, which a rename would replace), the temporary name removed and
// the directory synced; ErrNotSynced as for Commit. On a file system
// without hard links (FAT, some network and FUSE ones) it is renamed
// there unless something is (renameat2 RENAME_NOREPLACE); where neither
// can be done, it is not committed and the error says why.
func (f *File) CommitNew() error { return f.commitNew(f.linkTemp) }

// errNoReplaceUnsupported: renameat2 RENAME_NOREPLACE cannot be used
// (off Linux, before Linux 3.15, or not on this file system).
var errNoReplaceUnsupported = errors.New("the file system cannot rename without replacing (renameat2 RENAME_NOREPLACE)")

// commitNew is CommitNew, linking with link (tests: a file system
// without hard links).
func (f *File) commitNew(link func(name string) error) error {
	if f.done {
		return errCommitted
	}
	err := f.syncAndClose()
	renamed := false
	if err == nil {
		err = link(f.name)
		if noHardLinks(err) {
			renamed, err = f.renameNew(err)
		}
	}
	if err != nil {
		f.remove()
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	if !renamed {
		if err := f.removeTemp(); err != nil {
			return fmt.Errorf("%s: %w: the temporary name %s stays: %v", f.name, ErrNotSynced, f.tmp, err)
		}
	}
	if err := f.syncDir(); err != nil {
		return fmt.Errorf("%s: %w: %v", f.name, ErrNotSynced, err)
	}
	return nil
}

// noHardLinks says whether a link's error is the file system's refusal
// of hard links.
func noHardLinks(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// renameNew renames the temporary name to the final name unless one is
// there (fs.ErrExist), the link having failed with linkErr; it reports
// whether it did.
func (f *File) renameNew(linkErr error) (bool, error) {
	dir, err := f.openDir()
	if err != nil {
		return false, err
	}
	defer dir.Close()
	switch err := renameNew(dir, filepath.Base(f.tmp), filepath.Base(f.name)); {
	case errors.Is(err, errNoReplaceUnsupported):
		return false, fmt.Errorf("%w, and %w", linkErr, err)
	case err != nil:
		return false, err
	}
	return true, nil
}

func (f *File) rename() error {
	if f.root != nil {
		return f.root.Rename(f.tmp, f.name)
	}
	return os.Rename(f.tmp, f.name)
}

func (f *File) remove() {
	if f.root != nil {
		f.root.Remove(f.tmp)
		return
	}
	os.Remove(f.tmp)
}

func (f *File) syncDir() error {
	if f.root == nil {
		return SyncDir(filepath.Dir(f.name))
	}
	d, err := f.root.Open(filepath.Dir(f.name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Abort removes the temporary file; the final name is untouched. It does
// nothing after Commit, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	f.remove()
}

// Name is the final name.
func (f *File) Name() string { return f.name }

// SyncDir syncs a directory, making a rename in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// RemoveLeftovers deletes the temporary files that Create made for name and
// that an interrupted run never committed nor aborted (a killed process):
// nothing refers to them. Only names Create can have made for name are
// removed: its random part is digits, so the temporary file of another file
// whose name starts with name's ("a.warc-2.warc" beside "a.warc"), which
// another writer may be writing, is left alone.
func RemoveLeftovers(name string) {
	for _, p := range Leftovers(name) {
		os.Remove(p)
	}
}

// RemoveLeftoversOfAll is RemoveLeftovers for each of names, reading each
// directory they are in once (a collection of many files in one
// directory: one read, where RemoveLeftovers for each read it once a
// file).
func RemoveLeftoversOfAll(names []string) {
	bases := map[string]map[string]bool{} // directory -> the names in it
	for _, n := range names {
		dir := filepath.Dir(n)
		if bases[dir] == nil {
			bases[dir] = map[string]bool{}
		}
		bases[dir][filepath.Base(n)] = true
	}
	for dir, in := range bases {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if name, ok := TempOf(e.Name()); ok && in[name] && e.Type().IsRegular() {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// Leftovers lists the temporary files of name that RemoveLeftovers
// removes (their paths).
func Leftovers(name string) []string {
	prefix := TempPrefix + filepath.Base(name) + "-"
	entries, err := os.ReadDir(filepath.Dir(name))
	if err != nil {
		return nil
	}
	var paths []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && e.Type().IsRegular() && isDigits(rest) {
			paths = append(paths, filepath.Join(filepath.Dir(name), e.Name()))
		}
	}
	return paths
}

// Keep gives the file at path, a leftover of name that may hold what
// another process wrote, a name of its own beside name
// ("<name>.kept-<digits>", see KeptSuffix), which no cleanup removes nor
// any run takes for an archive, removes path and returns the new name.
func Keep(path, name string) (string, error) {
	kept, err := linkKept(name, func(kept string) error { return os.Link(path, kept) })
	if err != nil {
		return "", err
	}
	if err := os.Remove(path); err != nil {
		return kept, err
	}
	return kept, SyncDir(filepath.Dir(name))
}

// linkKept links a file, with link, under a name of its own beside name
// ("<name>.kept-<digits>", KeptSuffix), and returns that name.
func linkKept(name string, link func(kept string) error) (string, error) {
	for try := 0; ; try++ {
		kept := name + KeptSuffix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := link(kept)
		if errors.Is(err, os.ErrExist) && try < 100 {
			continue
		}
		return kept, err
	}
}

// RemoveLeftoversIn is RemoveLeftovers confined to root, for a slash
// separated name beneath it.
func RemoveLeftoversIn(root *os.Root, name string) {
	dir, base := path.Split(name)
	prefix := TempPrefix + base + "-"
	d, err := root.Open(filepath.FromSlash(path.Clean("./" + dir)))
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok && isDigits(rest) {
			root.Remove(filepath.FromSlash(path.Join(dir, n)))
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

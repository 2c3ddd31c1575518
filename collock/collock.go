// Package collock is the lock a job that rewrites a collection's files in
// place (warcdedup run, undo) holds on every directory holding files it
// may rewrite, so that one job at a time works on them. The work
// directory's own lock (package workdir) keeps two jobs out of one work
// directory; two jobs on the same files with different work directories
// would otherwise both rename new versions over them.
//
// The lock is flock(2) on the directory itself (opened read-only,
// LOCK_EX|LOCK_NB): nothing is left in the collection, and a killed
// job's lock goes with its process. A second job finds it taken and is
// refused before it touches anything (BusyError, naming the process
// holding it where /proc/locks says).
//
// Its limit is the network file system. On NFS (and SMB, Ceph, Lustre,
// GPFS, AFS, 9P, FUSE) a directory's flock is the host's alone (the Linux
// NFS client keeps it locally: another host's job would not see it), and
// where the client emulates flock with a POSIX lock, an exclusive lock on
// a descriptor open read-only fails with EBADF. There, and wherever a
// directory's flock fails that way, the lock is taken on a hidden file
// in the directory, LockFile, open for writing (a POSIX lock on the
// server, seen by every host), and the file is removed when the job
// ends; a killed job leaves it, and the next job takes it over (only a
// live process holds the lock). A file system that offers no lock at all
// (ENOLCK: NFS without its lock daemon) refuses the job: two jobs could
// not be kept apart there; the lock file the refused job made is removed
// again. Two jobs on one NFS collection, one on the server's own file
// system and one through a client, take different locks: run them from
// one side.
//
// Each directory locked is held open while the job works: a collection
// of many directories needs as many descriptors (Go raises the soft
// limit to the hard one): where the locks would leave the job fewer than
// it needs for its work (spareDescriptors), it is refused before it
// starts, naming ulimit -n.
//
// Directories are locked in sorted order, each once whatever the path
// naming it (by device and inode), all or none: two jobs on overlapping
// sets are refused rather than deadlocked (LOCK_NB anyway).
package collock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"warcdedup/internal/fspath"
	"warcdedup/workdir"
)

// LockFile is the lock of a directory whose file system does not lock
// directories for every host (see the package comment).
const LockFile = ".warcdedup.lock"

// BusyError is a directory another job holds the lock of.
type BusyError struct {
	Dir    string
	Holder string // what holds it, where known ("process 1234: warcdedup run /coll"); "" if not
}

func (e *BusyError) Error() string {
	held := "its lock is held"
	if e.Holder != "" {
		held += " by " + e.Holder
	}
	return fmt.Sprintf("%s: another warcdedup job is working on this directory's files (%s); wait for it or stop it", e.Dir, held)
}

// Set is the directories a job holds locked. Its methods may be called
// from several goroutines (a conversion's workers add the keep
// directories they make).
type Set struct {
	mu   sync.Mutex
	held []*dirLock
	ids  map[fileID]bool // of held: a tree of many directories is checked in constant time each
	// flock is flock(2); nil for syscall.Flock (a test puts a file
	// system's failure in its place).
	flock func(fd, how int) error
}

// dirLock is one directory's lock: the directory open and locked, or
// its lock file.
type dirLock struct {
	dir  string
	id   fileID
	f    *os.File
	file string // the lock file's path; "" for the directory's own flock
}

// fileID is a directory's identity whatever the path naming it.
type fileID struct{ dev, ino uint64 }

// Lock locks dirs (each once, in sorted order), all or none: the first
// one taken (a BusyError) or that cannot be locked stops it, and the
// ones locked before are let go.
func Lock(dirs []string) (*Set, error) {
	s := &Set{}
	if err := s.Add(dirs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Add locks the directories of dirs the set does not hold yet, in sorted
// order, all or none (the set keeps what it held). For the directories a
// job finds it will rewrite once it is under way (packages outside the
// collection whose requires entries it refreshes): called before it
// rewrites any of them.
func (s *Set) Add(dirs ...string) error {
	sorted := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := fspath.Abs(d)
		if err != nil {
			return err
		}
		sorted = append(sorted, abs)
	}
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	s.mu.Lock()
	defer s.mu.Unlock()
	type toLock struct {
		dir string
		id  fileID
	}
	var todo []toLock
	seen := map[fileID]bool{}
	for _, dir := range sorted {
		id, err := idOf(dir)
		if err != nil {
			return fmt.Errorf("%s: locking the directory: %w", dir, err)
		}
		if s.ids[id] || seen[id] {
			continue // one directory named twice (a symbolic link): flock would refuse the second
		}
		seen[id] = true
		todo = append(todo, toLock{dir, id})
	}
	if len(todo) > 0 {
		if err := checkDescriptors(todo[0].dir, len(todo)); err != nil {
			return err
		}
	}
	var added []*dirLock
	for _, t := range todo {
		l, err := s.lockDir(t.dir, t.id)
		if err != nil {
			releaseAll(added)
			return err
		}
		added = append(added, l)
	}
	if s.ids == nil {
		s.ids = map[fileID]bool{}
	}
	for _, l := range added {
		s.ids[l.id] = true
	}
	s.held = append(s.held, added...)
	return nil
}

// spareDescriptors are the descriptors a job needs beside its locks (its
// files, sorts, pipes, workers): a set of locks that would leave fewer
// refuses the job before it starts rather than have it fail midway with
// "too many open files".
const spareDescriptors = 256

// CheckRoom refuses n more locks (the first of dir) where they would
// leave the job fewer than the descriptors it needs beside them: for a
// job that locks directories as it first uses them (a conversion's keep
// directories), checked before it starts with the most it may lock, as
// Add checks the locks it takes at once.
func CheckRoom(dir string, n int) error {
	return checkDescriptors(dir, n)
}

// checkDescriptors refuses n more locks (the first of dir) where they
// would leave the job fewer than spareDescriptors of its limit.
func checkDescriptors(dir string, n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<40 {
		return nil
	}
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	if left := int64(lim.Cur) - int64(len(open)) - int64(n); left < spareDescriptors {
		return fmt.Errorf("%s: locking the directory: %d directories to lock, each held open while the job works, would leave %d of the %d descriptors it may open (ulimit -n), fewer than the %d it needs beside them: raise the limit", dir, n, max(left, 0), lim.Cur, spareDescriptors)
	}
	return nil
}

// Dirs are the directories the set holds, as they were named.
func (s *Set) Dirs() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dirs := make([]string, len(s.held))
	for i, l := range s.held {
		dirs[i] = l.dir
	}
	return dirs
}

// Release lets every lock go (their lock files removed). A nil set holds
// nothing.
func (s *Set) Release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	releaseAll(s.held)
	s.held, s.ids = nil, nil
}

func releaseAll(locks []*dirLock) {
	for _, l := range locks {
		l.release()
	}
}

// release removes the lock file, if any, while holding its lock (a job
// waiting on it finds it gone and takes a new one: lockFile), then
// closes it.
func (l *dirLock) release() {
	if l.file != "" {
		os.Remove(l.file)
	}
	l.f.Close()
}

func idOf(dir string) (fileID, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return fileID{}, err
	}
	if !fi.IsDir() {
		return fileID{}, fmt.Errorf("not a directory")
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// lockDir takes the lock of dir: its own flock, or its lock file where
// the directory's flock is no lock for every host.
func (s *Set) lockDir(dir string, id fileID) (*dirLock, error) {
	d, err := os.Open(dir)
	if errors.Is(err, syscall.EMFILE) {
		return nil, fmt.Errorf("%s: locking the directory: %w: each directory of the collection is held open while the job works; raise the limit (ulimit -n)", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: locking the directory: %w", dir, err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Fstatfs(int(d.Fd()), &fs); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: locking the directory: %w", dir, err)
	}
	if networkFS(fs.Type) {
		d.Close()
		return s.lockFile(dir, id)
	}
	err = s.flockOf()(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return &dirLock{dir: dir, id: id, f: d}, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		d.Close()
		return nil, &BusyError{Dir: dir, Holder: flockHolder(id)}
	case errors.Is(err, syscall.EBADF), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EINVAL):
		// Flock emulated with POSIX locks, which an exclusive lock
		// needs a descriptor open for writing for; or none for
		// directories.
		d.Close()
		return s.lockFile(dir, id)
	}
	d.Close()
	return nil, lockError(dir, err)
}

// flockOf is the set's flock(2).
func (s *Set) flockOf() func(fd, how int) error {
	if s.flock != nil {
		return s.flock
	}
	return syscall.Flock
}

// lockFile takes the lock of dir's LockFile, made if need be. A file a
// job removed while this one opened it is no lock any more: the lock is
// kept only on the file that the name still gives. A file this call made
// and could not lock (ENOLCK: the file system offers no lock) is removed
// again: the refused job leaves nothing in the collection.
func (s *Set) lockFile(dir string, id fileID) (*dirLock, error) {
	name := filepath.Join(dir, LockFile)
	for range 10 {
		f, made, err := openLockFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by its holder between our two opens
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: locking the directory: %s is a symbolic link, not a lock file of warcdedup's: remove it if no job uses it", dir, LockFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: locking the directory (its file system locks directories for this host only, so the lock is %s): %w", dir, LockFile, err)
		}
		if err := s.flockOf()(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder := fileHolder(f)
			switch {
			case errors.Is(err, syscall.EWOULDBLOCK):
				f.Close()
				return nil, &BusyError{Dir: dir, Holder: holder}
			case errors.Is(err, syscall.ESTALE):
				f.Close()
				continue // removed by its holder on another host meanwhile
			}
			if made {
				unmake(f, name)
			}
			f.Close()
			return nil, lockError(dir, err)
		}
		if same(f, name) {
			if err := ownFile(f); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: locking the directory: %s %v, not a lock file of warcdedup's: remove it if no job uses it", dir, LockFile, err)
			}
			writeHolder(f)
			return &dirLock{dir: dir, id: id, f: f, file: name}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%s: locking the directory: its lock file %s keeps being removed and made again", dir, LockFile)
}

// openLockFile opens the lock file name for writing, made if it is not
// there (made says so). Never through a symbolic link: the file would be
// truncated.
func openLockFile(name string) (f *os.File, made bool, err error) {
	f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, err
	}
	f, err = os.OpenFile(name, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	return f, false, err
}

// unmake removes the lock file f this job made and could not lock, if
// the name still gives it and no holder has written itself into it (a
// job on another host, where locks work, that took it meanwhile).
func unmake(f *os.File, name string) {
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 && same(f, name) {
		os.Remove(name)
	}
}

func lockError(dir string, err error) error {
	if errors.Is(err, syscall.ENOLCK) {
		return fmt.Errorf("%s: its file system offers no lock (%v): two jobs on its files could not be kept apart, so none starts (NFS: mount with locking, the lock daemon running)", dir, err)
	}
	return fmt.Errorf("%s: locking the directory: %w", dir, err)
}

// same reports whether name is still the file f has open.
func same(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(name)
	return err == nil && os.SameFile(a, b)
}

// ownFile refuses a lock file that is another file too (a hard link to
// one of the directory's archives): writeHolder would truncate it.
func ownFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("is no regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return fmt.Errorf("has %d links", st.Nlink)
	}
	return nil
}

// writeHolder writes who holds a lock file into it, for the message of a
// job refused (another host's process is not in /proc/locks).
func writeHolder(f *os.File) {
	host, _ := os.Hostname()
	line := fmt.Sprintf("process %d on %s: %s\n", os.Getpid(), host, commandLine(os.Getpid()))
	f.Truncate(0)
	f.WriteAt([]byte(line), 0)
}

// fileHolder is what a lock file says holds it.
func fileHolder(f *os.File) string {
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.TrimSpace(line)
}

// flockHolder finds the process holding the flock of the directory id in
// /proc/locks: "process PID: COMMAND LINE", or "" if it is not there.
func flockHolder(id fileID) string {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	// The kernel's dev_t: major and minor as /proc/locks prints them.
	dev := id.dev
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, id.ino)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			pid, err := strconv.Atoi(f[4])
			if err != nil || pid <= 0 {
				return ""
			}
			if cmd := commandLine(pid); cmd != "" {
				return fmt.Sprintf("process %d: %s", pid, cmd)
			}
			return fmt.Sprintf("process %d", pid)
		}
	}
	return ""
}

// commandLine is process pid's command line, its arguments joined by
// spaces ("" if unknown).
func commandLine(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
}

// networkFS reports whether the file system of magic number t is one
// whose directory flock is no lock for every host (see the package
// comment).
func networkFS(t int64) bool {
	switch uint32(t) {
	case 0x6969, // NFS
		0x517b, 0xff534d42, 0xfe534d42, // SMB, CIFS, SMB2
		0x00c36400,             // Ceph
		0x0bd00bd0,             // Lustre
		0x47504653,             // GPFS
		0x5346414f, 0x6b414653, // AFS: OpenAFS, kAFS
		0x01021997, // 9P
		0x65735546: // FUSE
		return true
	}
	return false
}

// Tree is root (symbolic links resolved, as a job walks it) and every
// directory beneath it, but work directories (NAME.warcdedup holding a
// run log or a cache, as warcsum.Collect skips them): the directories a
// job on the collection root may rewrite files in. A directory that goes
// while the tree is walked is left out.
func Tree(root string) ([]string, error) {
	walked, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	var dirs []string
	err = filepath.WalkDir(walked, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != walked && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != walked && workdir.Recognize(path) {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	return dirs, err
}

// Dirs are the directories of files (each file's own, once).
func Dirs(files []string) []string {
	dirs := make([]string, 0, len(files))
	for _, f := range files {
		dirs = append(dirs, filepath.Dir(f))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// LockJob locks what a job on the collections roots rewrites: each root's
// Tree, and the directories of files named one by one beside them (its
// CDX indexes, packages outside the collections it refreshes).
func LockJob(roots, files []string) (*Set, error) {
	dirs := Dirs(files)
	for _, root := range roots {
		tree, err := Tree(root)
		if err != nil {
			return nil, fmt.Errorf("%s: locking the collection: %w", root, err)
		}
		dirs = append(dirs, tree...)
	}
	return Lock(dirs)
}

// Holder is the process holding dir's own flock, as /proc/locks says:
// "process PID: COMMAND LINE", or "" if none (or it is not known).
func Holder(dir string) string {
	id, err := idOf(dir)
	if err != nil {
		return ""
	}
	return flockHolder(id)
}

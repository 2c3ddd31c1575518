package inplace

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// writerGuard makes sure that no other process writes a file from the
// moment it is opened to be replaced until its new version is renamed
// over it (see ErrOpenForWriting).
//
// It holds a read lease on the file (fcntl F_SETLEASE F_RDLCK, Linux's
// leases): the kernel grants it only while no process has the file open
// for writing, and breaks it when one opens the file for writing or
// truncates it while it is held; that open waits until the lease is given
// up. A read lease rather than a write lease, because a write lease is
// refused while any other descriptor reads the file, this process's own
// included (originals are read from files being rewritten), and broken by
// every reader (an indexer, a replay tool), none of which loses anything
// when the file is replaced. The guard looks at the lease every
// leasePoll; broken, it gives it up at once (the writer waits no longer
// than that, not the kernel's lease-break-time of 45 s) and the file is
// refused: check fails from then on.
//
// Where the kernel grants no lease (a file system without leases, such
// as NFS without a delegation, FUSE, 9p; a file that is not this user's
// without CAP_LEASE), the guard looks in /proc for a process holding the
// file open for writing, when the file is opened and again just before
// the rename: it sees the processes of this host this user may look at
// (all of them as root), and a writer that opens and closes the file
// between the two looks only by what it changed (the rewrite refuses a
// file whose size or modification time changed).
//
// The replacement looks once more after its new version has taken the
// name (exchanged with the file, see Version.Replace), and gives the name
// back if it finds a writer: a writer that opens the file before the
// exchange is seen (the lease is broken by then, or it holds the file
// open), and one that opens it after finds the new version. Neither look
// sees a writer on another host of a network file system (except as NFSv4
// delegations tell the lease), nor an open(2) that found the file's name
// before the exchange and reaches the kernel's lease check only after the
// look that follows it, microseconds; where names cannot be exchanged
// (the file is renamed over), the window is from the last look to the
// rename.
type writerGuard struct {
	f *os.File
	// broken is set when the lease was broken: a process opened the file
	// for writing while it was held.
	broken atomic.Bool
	// leased: the lease was granted (else a writer had the file open).
	leased bool
	// scan: no lease, look in /proc instead.
	scan bool
	info os.FileInfo
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// leasePoll is how often the guard looks whether its lease was broken.
const leasePoll = 10 * time.Millisecond

// guardWriters starts guarding the file f against writers. A writer found at once is no error here: check reports it,
// when the file is about to change (a file with nothing to rewrite is
// left as it is either way).
func guardWriters(f *os.File) (*writerGuard, error) {
	g := &writerGuard{f: f}
	err := setLease(f, syscall.F_RDLCK)
	switch {
	case err == nil:
		g.leased = true
		g.stop, g.done = make(chan struct{}), make(chan struct{})
		go g.watch()
		return g, nil
	case err == syscall.EAGAIN && !sharedFileSystem(f):
		// A local file system refuses a read lease only to a file open
		// for writing.
		g.broken.Store(true)
		return g, nil
	}
	// No lease to be had here: look for writers.
	g.scan = true
	if g.info, err = f.Stat(); err != nil {
		return nil, err
	}
	return g, nil
}

// watch gives the lease up as soon as it is broken.
func (g *writerGuard) watch() {
	defer close(g.done)
	t := time.NewTicker(leasePoll)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			if g.leaseBroken() {
				g.broken.Store(true)
				setLease(g.f, syscall.F_UNLCK)
				return
			}
		}
	}
}

// leaseBroken reports whether the lease is no longer a read lease: a
// break is pending (the kernel then reports the type it is being broken
// to) or it was taken away.
func (g *writerGuard) leaseBroken() bool {
	typ, err := getLease(g.f)
	return err != nil || typ != syscall.F_RDLCK
}

// check reports whether another process has the file open for writing,
// or opened it for writing since the guard started.
func (g *writerGuard) check() error {
	if g == nil {
		return nil
	}
	if g.scan {
		if who, ok := openForWriting(g.info); ok {
			return openForWritingError(who)
		}
		return nil
	}
	if g.broken.Load() || g.leaseBroken() {
		g.broken.Store(true)
		detail := []string{}
		if who := g.writer(); who != "" {
			detail = append(detail, who)
		}
		if g.leased {
			detail = append(detail, "opened while the new version was being made")
		}
		return openForWritingError(strings.Join(detail, "; "))
	}
	return nil
}

// writer names a process that has the file open for writing now, if one
// is seen.
func (g *writerGuard) writer() string {
	fi, err := g.f.Stat()
	if err != nil {
		return ""
	}
	who, _ := openForWriting(fi)
	return who
}

// openForWritingNow reports whether another process has f open for
// writing (ErrOpenForWriting), as a guard started on it finds at once.
func openForWritingNow(f *os.File) error {
	g, err := guardWriters(f)
	if err != nil {
		return err
	}
	defer g.release()
	return g.check()
}

// release gives the lease up (before the file is closed).
func (g *writerGuard) release() {
	if g == nil || g.stop == nil {
		return
	}
	g.once.Do(func() {
		close(g.stop)
		<-g.done
		setLease(g.f, syscall.F_UNLCK)
	})
}

func setLease(f *os.File, typ int) error {
	return fcntl(f, syscall.F_SETLEASE, typ, nil)
}

func getLease(f *os.File) (int, error) {
	var typ int
	err := fcntl(f, syscall.F_GETLEASE, 0, &typ)
	return typ, err
}

// fcntl runs fcntl(2) on f's descriptor, kept valid meanwhile.
func fcntl(f *os.File, cmd, arg int, result *int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if cerr := rc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, uintptr(cmd), uintptr(arg))
		errno = e
		if result != nil {
			*result = int(r)
		}
	}); cerr != nil {
		return cerr
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// sharedFileSystem reports whether f is on a file system where a lease
// may be refused for another reason than a local writer (NFSv4 refuses
// one without a delegation) and other hosts may write.
func sharedFileSystem(f *os.File) bool {
	var st syscall.Statfs_t
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var serr error
	rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) })
	if serr != nil {
		return true
	}
	switch uint32(st.Type) {
	case 0x6969, // NFS
		0x517b, 0xff534d42, 0xfe534d42, // SMB, CIFS, SMB2
		0x65735546,             // FUSE
		0x01021997,             // 9p
		0x00c36400,             // Ceph
		0x0bd00bd0,             // Lustre
		0x5346414f,             // AFS
		0x01161970, 0x7461636f: // GFS2, OCFS2
		return true
	}
	return false
}

// openForWriting looks in /proc for a process that has the file fi open
// for writing, and names it ("pid 123, wget"); with fi nil it finds none.
// Processes whose descriptors this user may not read are not seen.
func openForWriting(fi os.FileInfo) (string, bool) {
	if fi == nil {
		return "", false
	}
	want, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return "", false
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(fdDir, fd.Name()), &st) != nil || st.Dev != want.Dev || st.Ino != want.Ino {
				continue
			}
			if writing(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name())) {
				who := "pid " + p.Name()
				if comm, err := os.ReadFile(filepath.Join("/proc", p.Name(), "comm")); err == nil {
					who += ", " + strings.TrimSpace(string(comm))
				}
				return who, true
			}
		}
	}
	return "", false
}

// writing reports whether the descriptor whose /proc fdinfo file is name
// was opened for writing.
func writing(name string) bool {
	data, err := os.ReadFile(name)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("flags:")); ok {
			flags, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY
		}
	}
	return false
}

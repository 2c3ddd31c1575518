package refs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// osRoot and fileMode name the types of the create hooks' parameters.
type (
	osRoot   = os.Root
	fileMode = os.FileMode
)

// placement says where the files are and where their new versions go:
// what the rewrite and the restore share.
type placement struct {
	locator   *source.Locator
	inPlace   bool
	outputDir string
	dryRun    bool
	hardLinks bool
	// create makes the temporary file of a new version; tests replace it
	// to simulate failing disks.
	create func(root *osRoot, name string, perm fileMode) (*atomicfile.File, error)
	// files is what the run's workers share about where they write.
	files *runFiles
}

// runFiles is what a run's workers share about the files they write, by
// where each new version goes: the real path of the file replaced, or the
// path of the new file under the output directory. A manifest can name
// one file twice (another spelling of field 1, a symbolic link beside its
// target, overlapping roots).
type runFiles struct {
	mu sync.Mutex
	// writing counts the workers writing a new version there: the
	// temporary file one is writing must not be removed by the other as
	// the leftover of an interrupted run.
	writing map[string]int
	// written holds field 1 of the task that put (or is putting) a new
	// version there. Another name of the file is refused: its lines would
	// be read from a version they do not describe, and the log, written in
	// manifest order, would list the two rewrites in the wrong order.
	// One entry per file rewritten in the run, as the log's index holds.
	written map[string]string
}

func newRunFiles() *runFiles {
	return &runFiles{writing: map[string]int{}, written: map[string]string{}}
}

// enter notes a worker writing path; it reports whether it is the only one.
func (rf *runFiles) enter(path string) bool {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.writing[path]++
	return rf.writing[path] == 1
}

func (rf *runFiles) leave(path string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.writing[path]--; rf.writing[path] <= 0 {
		delete(rf.writing, path)
	}
}

// writtenBy returns the name a new version at path was put under in this
// run, if any.
func (rf *runFiles) writtenBy(path string) (string, bool) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	name, ok := rf.written[path]
	return name, ok
}

// write notes that name puts a new version at path; undo, if not nil,
// forgets it again.
func (rf *runFiles) write(path, name string) (undo func()) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if other, ok := rf.written[path]; ok {
		if other == name {
			return func() {}
		}
		return nil
	}
	rf.written[path] = name
	return func() {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		delete(rf.written, path)
	}
}

// ErrNamedTwice: the manifest names the file under two names (field 1),
// and it was rewritten under the other one in this run.
var ErrNamedTwice = errors.New("the file was rewritten earlier in this run under another name")

// version is a file and the new version of it written beside it: the
// stretches copied from the file and those written anew (segments), in a
// temporary file made when the first new stretch is due, checked and then
// renamed over the file.
type version struct {
	pl   *placement
	file string // the file's name as the manifest or log spells it (field 1)
	name string // unescaped: the file's name in the collection
	src  *os.File
	info os.FileInfo
	size int64
	gz   bool
	// The file and its new version: names beneath roots, which confine
	// every open, create and rename.
	srcRoot, dstRoot *os.Root
	srcName, dstName string // slash-separated
	path             string // the file's real path, for messages and the journal
	writingAt        string // where its new version goes, while noted in pl.files
	// writers, in place, finds another process writing the file from its
	// opening to the rename (lease_linux.go).
	writers *writerGuard

	tmp      *atomicfile.File
	written  int64 // bytes of the new version so far
	segments []segment
	pos      int64 // in the source, what is copied or replaced so far
	// expect, if set, is the version of the file the offsets it is
	// walked with are of (see expectVersion).
	expect *rewritelog.Fixity
}

// ErrNotLogged is a file that is not the version the rewrite log's last
// replacement of it left: it changed since (another tool, or a run the log
// does not record), and the offsets the log gives are not its.
var ErrNotLogged = errors.New("the file is not the version the rewrite log's last replacement of it left")

// expectVersion notes that the file must be the version fx left (its new
// size and SHA-256): the size is checked now, the SHA-256 from the reads
// of the check before the file is replaced.
func (v *version) expectVersion(fx rewritelog.Fixity) error {
	v.expect = &fx
	if v.size != fx.NewSize {
		return fmt.Errorf("%w (%d bytes, SHA-256 %s): it has %d bytes", ErrNotLogged, fx.NewSize, fx.NewSHA256, v.size)
	}
	return nil
}

// segment is a stretch of the new file: a copy of the source from srcOff,
// or a record written anew for the one that stood at srcOff with oldLen
// bytes (a revisit for the duplicate of line, or a restored record).
type segment struct {
	newOff, length int64
	srcOff         int64
	written        bool
	oldLen         int64
	line           manifest.Line // of a revisit
	payloadDigest  string        // of a restored record: its WARC-Payload-Digest
}

func (v *version) refuse(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return err
	}
	return &RefusedError{File: v.file, Offset: -1, Err: err}
}

// open finds the file beneath its root, refuses what cannot be replaced
// safely, and opens it.
func (v *version) open(pl *placement, file string) error {
	v.pl, v.file = pl, file
	name, err := manifest.UnescapeFile(file)
	if err != nil {
		return err
	}
	v.name = name
	local, err := v.resolve()
	if err != nil {
		return err
	}
	v.path = local.Path()
	if v.srcRoot, err = local.OpenRoot(); err != nil {
		return err
	}
	v.srcName = local.Rel
	if v.src, err = v.srcRoot.Open(filepath.FromSlash(local.Rel)); err != nil {
		return err
	}
	if v.info, err = v.src.Stat(); err != nil {
		return err
	}
	if !v.info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", v.path)
	}
	if st, ok := v.info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && pl.inPlace && !pl.hardLinks {
		return fmt.Errorf("%s has %d hard links: replacing one name would save nothing, as the other names keep the old bytes (allow it with --hard-links)", v.path, st.Nlink)
	}
	if pl.inPlace && !pl.dryRun {
		if v.writers, err = guardWriters(v.src); err != nil {
			return err
		}
	}
	v.size = v.info.Size()
	if v.gz, err = isGzip(v.src); err != nil {
		return err
	}
	if pl.inPlace {
		v.dstRoot, v.dstName = v.srcRoot, v.srcName
	} else {
		if err := source.CheckName(name); err != nil {
			return err
		}
		v.dstName = name
		if pl.dryRun {
			return nil // nothing is written, so the directory need not exist
		}
		if err := os.MkdirAll(pl.outputDir, 0o755); err != nil {
			return err
		}
		if v.dstRoot, err = os.OpenRoot(pl.outputDir); err != nil {
			return err
		}
	}
	// Leftovers of interrupted runs are removed (but not the temporary
	// file of another worker writing the same file under another name); a
	// file with nothing to do (a second run) is never copied, so needs no
	// space.
	if !pl.dryRun {
		at := v.path
		if !pl.inPlace {
			at = filepath.Join(pl.outputDir, filepath.FromSlash(v.dstName))
		}
		// Checked once the file is open: a new version put there under
		// another name is noted before it is renamed into place.
		if other, ok := pl.files.writtenBy(at); ok && other != file {
			return fmt.Errorf("%w, %s", ErrNamedTwice, other)
		}
		v.writingAt = at
		if pl.files.enter(at) {
			atomicfile.RemoveLeftoversIn(v.dstRoot, v.dstName)
		}
	}
	return nil
}

// resolve finds the file: its locations entry (the user's own path, taken
// as written and its links followed), or beneath a root.
func (v *version) resolve() (source.Local, error) {
	if p, ok := v.pl.locator.Locations[v.name]; ok {
		if strings.Contains(p, "://") {
			return source.Local{}, fmt.Errorf("only local files are rewritten, not %s", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return source.Local{}, err
		}
		return source.Local{Root: filepath.Dir(real), Rel: filepath.Base(real)}, nil
	}
	return v.pl.locator.Resolve(v.file)
}

func (v *version) close() {
	if v.tmp != nil {
		v.tmp.Abort()
	}
	if v.writingAt != "" {
		v.pl.files.leave(v.writingAt)
		v.writingAt = ""
	}
	v.writers.release()
	if v.src != nil {
		v.src.Close()
	}
	if v.dstRoot != nil && v.dstRoot != v.srcRoot {
		v.dstRoot.Close()
	}
	if v.srcRoot != nil {
		v.srcRoot.Close()
	}
}

// copyTo copies the source bytes from pos to end unchanged, once there is
// a temporary file; until then it only notes them.
func (v *version) copyTo(end int64) error {
	if end <= v.pos {
		return nil
	}
	s := segment{newOff: v.written, length: end - v.pos, srcOff: v.pos}
	v.segments = append(v.segments, s)
	v.written += s.length
	v.pos = end
	if v.tmp == nil {
		return nil
	}
	return v.copySegment(s)
}

// copySegment copies the source bytes of s. From file to file io.Copy lets
// the kernel copy (copy_file_range), as cp does.
func (v *version) copySegment(s segment) error {
	if _, err := v.src.Seek(s.srcOff, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(v.tmp.File, io.LimitReader(v.src, s.length))
	if err == nil && n != s.length {
		err = fmt.Errorf("copying %d bytes at %d: %w after %d", s.length, s.srcOff, io.ErrUnexpectedEOF, n)
	}
	return v.writeError(err)
}

// replacing notes that the record at at, oldLen bytes long, is replaced by
// length new bytes, and returns the segment.
func (v *version) replacing(at, oldLen, length int64, l *manifest.Line) segment {
	s := segment{newOff: v.written, length: length, srcOff: at, written: true, oldLen: oldLen}
	if l != nil {
		s.line = *l
	}
	v.written += length
	v.pos = at + oldLen
	v.segments = append(v.segments, s)
	return s
}

// writeError classes a failure to write the new version. A full disk stops
// the run (every later file would fail the same way, and the operator must
// make room): a *WriteError, exit status 2. Any other failure (a read-only
// file system, a failing device) refuses this file, and the run goes on.
// Either way the file is left untouched.
func (v *version) writeError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &WriteError{File: v.file, Err: err}
	}
	var we *WriteError
	if errors.As(err, &we) {
		return err
	}
	return &RefusedError{File: v.file, Offset: -1, Err: fmt.Errorf("writing its new version: %w", err)}
}

// WriteError is a new version that could not be written because the disk
// is full: the file is left untouched and the run stops.
type WriteError struct {
	File string
	Err  error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("%s: left untouched, and the run stopped: writing its new version: %v", e.File, e.Err)
}
func (e *WriteError) Unwrap() error { return e.Err }

// createTemp makes the new version's temporary file and copies into it
// what was noted so far: the copied stretches before the first new one.
func (v *version) createTemp() error {
	if err := v.writers.check(); err != nil {
		return v.refuse(err) // before the copy: it would be thrown away
	}
	if dir := path.Dir(v.dstName); dir != "." {
		if err := v.dstRoot.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return v.writeError(err)
		}
	}
	create := v.pl.create
	if create == nil {
		create = atomicfile.CreateIn
	}
	tmp, err := create(v.dstRoot, v.dstName, v.info.Mode().Perm())
	if err != nil {
		return v.writeError(err)
	}
	v.tmp = tmp
	for _, s := range v.segments {
		if s.written {
			continue // written later; none before the first
		}
		if err := v.copySegment(s); err != nil {
			return err
		}
	}
	return nil
}

// replace puts the checked new version in place: with the old file's
// owner, group, mode and extended attributes, its entries journaled, and
// renamed over the old file while lock is held (no original in it is being
// read). check re-reads each written segment of the new version. It
// returns the file's fixity.
func (v *version) replace(log *rewritelog.Log, lock interface {
	Lock()
	Unlock()
}, entries []rewritelog.Entry, check func(s segment, newFile *os.File) error) (*replaced, error) {
	if err := v.tmp.Sync(); err != nil {
		return nil, v.writeError(err)
	}
	// Another name of the file replaced it meanwhile: that is why it
	// changed (see runFiles).
	if other, ok := v.pl.files.writtenBy(v.writingAt); ok && other != v.file {
		return nil, v.refuse(fmt.Errorf("%w, %s", ErrNamedTwice, other))
	}
	oldSum, newSum, err := v.verify(check)
	if err != nil {
		return nil, v.refuse(fmt.Errorf("the new version failed its check and was removed: %w", err))
	}
	if v.expect != nil && oldSum != v.expect.NewSHA256 {
		return nil, v.refuse(fmt.Errorf("%w (SHA-256 %s): its SHA-256 is %s", ErrNotLogged, v.expect.NewSHA256, oldSum))
	}
	// The file must still be the one that was read: bytes appended
	// meanwhile (a crawler still writing it) would otherwise be lost.
	if err := v.unchanged(); err != nil {
		return nil, v.refuse(err)
	}
	if err := keepAttributes(v.tmp.File, v.src, v.info); err != nil {
		return nil, v.refuse(fmt.Errorf("cannot give the new version the file's owner, mode or attributes: %w", err))
	}
	result := &replaced{Intent: &rewritelog.Intent{Fixity: rewritelog.Fixity{File: v.name, OldSize: v.size, OldSHA256: oldSum, NewSize: v.written, NewSHA256: newSum}, Path: v.path, Entries: entries}}
	// The two versions as they are now, for rewritelog.Replacement: the old one as
	// it was read, the new one as checked, before its rename.
	oldInfo, oldErr := v.src.Stat()
	tmpInfo, tmpErr := v.tmp.File.Stat()
	lock.Lock()
	defer lock.Unlock()
	if v.pl.inPlace {
		if err := log.Journal(result.Intent); err != nil {
			return nil, fmt.Errorf("writing the log's journal: %w", err)
		}
	}
	undo := v.pl.files.write(v.writingAt, v.file)
	if undo == nil {
		// Another name of the file got there first, after this one opened
		// it (unchanged saw the old file): not replaced, not logged.
		if v.pl.inPlace {
			log.Unjournal(result.Intent)
		}
		other, _ := v.pl.files.writtenBy(v.writingAt)
		return nil, v.refuse(fmt.Errorf("%w, %s", ErrNamedTwice, other))
	}
	// The last look for a writer, as close to the rename as it can be.
	if err := v.writers.check(); err != nil {
		undo()
		if v.pl.inPlace {
			log.Unjournal(result.Intent)
		}
		return nil, v.refuse(err)
	}
	err = v.tmp.Commit()
	v.tmp = nil
	switch {
	case err == nil, errors.Is(err, atomicfile.ErrNotSynced):
		// Replaced, complete (with ErrNotSynced, only the directory entry
		// may not be on disk yet: not a refusal, the log must list its new
		// offsets).
		if oldErr == nil && tmpErr == nil {
			result.old, result.new = oldInfo, v.renamed(tmpInfo)
		}
		return result, err
	default:
		undo()
		if v.pl.inPlace {
			log.Unjournal(result.Intent)
		}
		return nil, v.writeError(err)
	}
}

// renamed returns the new version's FileInfo as it stands at its name
// after the rename, if it is still the file checked (tmp: as it was
// before the rename), nil otherwise. The rename changed its change time,
// nothing else.
func (v *version) renamed(tmp os.FileInfo) os.FileInfo {
	fi, err := v.dstRoot.Stat(filepath.FromSlash(v.dstName))
	if err != nil || !os.SameFile(fi, tmp) || fi.Size() != tmp.Size() || !fi.ModTime().Equal(tmp.ModTime()) {
		return nil
	}
	return fi
}

// unchanged checks that the file is still the one that was opened: same
// file, size and modification time.
func (v *version) unchanged() error {
	now, err := v.srcRoot.Stat(filepath.FromSlash(v.srcName))
	if err != nil {
		return err
	}
	if !os.SameFile(v.info, now) || now.Size() != v.info.Size() || !now.ModTime().Equal(v.info.ModTime()) {
		return fmt.Errorf("the file changed while it was being rewritten (%d bytes, now %d): run again", v.info.Size(), now.Size())
	}
	return nil
}

// verify re-reads the new version from disk: every copied segment must
// equal the source byte for byte, and check passes every written one. It
// returns the SHA-256 of the old file and of the new one, for the fixity
// list, from the same reads.
func (v *version) verify(check func(s segment, newFile *os.File) error) (oldSum, newSum string, err error) {
	a := make([]byte, 256<<10)
	b := make([]byte, 256<<10)
	oldHash, newHash := sha256.New(), sha256.New()
	newFile := v.tmp.File
	var end, srcEnd int64
	for _, s := range v.segments {
		if s.newOff != end {
			return "", "", fmt.Errorf("segment at %d does not follow the one before", s.newOff)
		}
		// Every byte of the source is copied or written over, once, in
		// order: what the rewrite log says of the file (and what a cache
		// entry derived from it takes on trust) is then the whole truth.
		if s.srcOff != srcEnd {
			return "", "", fmt.Errorf("segment at %d takes the source from %d, not from %d", s.newOff, s.srcOff, srcEnd)
		}
		end = s.newOff + s.length
		if s.written {
			srcEnd += s.oldLen
		} else {
			srcEnd += s.length
		}
		if !s.written {
			for off := int64(0); off < s.length; {
				n := int(min(int64(len(a)), s.length-off))
				if _, err := newFile.ReadAt(a[:n], s.newOff+off); err != nil {
					return "", "", fmt.Errorf("re-reading offset %d: %w", s.newOff+off, err)
				}
				if _, err := v.src.ReadAt(b[:n], s.srcOff+off); err != nil {
					return "", "", fmt.Errorf("re-reading the source at %d: %w", s.srcOff+off, err)
				}
				if !bytes.Equal(a[:n], b[:n]) {
					return "", "", fmt.Errorf("bytes at %d differ from the source at %d", s.newOff+off, s.srcOff+off)
				}
				oldHash.Write(b[:n])
				newHash.Write(a[:n])
				off += int64(n)
			}
			continue
		}
		if err := hashSection(oldHash, v.src, s.srcOff, s.oldLen, b); err != nil {
			return "", "", fmt.Errorf("re-reading the source at %d: %w", s.srcOff, err)
		}
		if err := hashSection(newHash, newFile, s.newOff, s.length, a); err != nil {
			return "", "", fmt.Errorf("re-reading offset %d: %w", s.newOff, err)
		}
		if err := check(s, newFile); err != nil {
			return "", "", err
		}
	}
	fi, err := newFile.Stat()
	if err != nil {
		return "", "", err
	}
	if fi.Size() != end {
		return "", "", fmt.Errorf("the new version has %d bytes, %d were written", fi.Size(), end)
	}
	if srcEnd != v.size {
		return "", "", fmt.Errorf("the segments cover %d bytes of the source's %d", srcEnd, v.size)
	}
	return hex.EncodeToString(oldHash.Sum(nil)), hex.EncodeToString(newHash.Sum(nil)), nil
}

// hashSection feeds n bytes of r at off to h.
func hashSection(h hash.Hash, r io.ReaderAt, off, n int64, buf []byte) error {
	_, err := io.CopyBuffer(h, io.NewSectionReader(r, off, n), buf)
	return err
}

func isGzip(f *os.File) (bool, error) {
	var head [3]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return false, err
	}
	return n == 3 && head[0] == 0x1f && head[1] == 0x8b && head[2] == 8, nil
}

// replaced is a file replaced by its new version: its entries as the log
// takes them, and the two versions as the replacement left them (see
// rewritelog.Replacement); nil if they could not be known.
type replaced struct {
	*rewritelog.Intent
	old, new os.FileInfo
}

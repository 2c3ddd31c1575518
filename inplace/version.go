// Package inplace replaces files in place, as safely as a file can be:
// a new version is written beside the file, checked against it byte for
// byte, given the file's owner, mode and extended attributes, and
// exchanged with it (renameat2 RENAME_EXCHANGE), the old version removed
// only once what the exchange took from the name is seen to be the
// version that was read, with nothing else writing it; its rewrite log
// entries are journaled before the exchange and logged after it, in order
// (package rewritelog). The rewrite (package refs) and undo (package
// restore) make their new versions with a Version; warcrecompress and the
// ARC converter use its Target and attribute copying.
//
// A file that cannot be replaced safely is left untouched and refused (a
// *RefusedError); a full disk stops the run (a *WriteError).
package inplace

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/gzmulti"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// Version is a file and the new version of it written beside it: the
// stretches copied from the file and the records written anew
// (segments), in a temporary file made when the first record written
// anew is due, checked and then renamed over the file (Replace).
type Version struct {
	// File is the file's name as the manifest or log spells it (field
	// 1), Name its name in the collection (unescaped), Path its real path.
	File, Name, Path string
	// Src is the file, open for reading, Size its size and Gzip whether
	// it is gzip (a .warc.gz: its records are members). Content reads
	// its Size bytes, from 0: Src itself, or for a Section the stretch of
	// Src (the package) that it is.
	Src     *os.File
	Size    int64
	Gzip    bool
	Content io.ReaderAt

	// section is the Section the file is (Placement.Sections), nil for a
	// file of its own; base is where it starts in Src.
	section *Section
	base    int64

	pl     *Placement
	target *Target
	// The file and its new version: names beneath roots, which confine
	// every open, create and rename.
	srcRoot, dstRoot *os.Root
	srcName, dstName string // slash-separated
	writingAt        string // where its new version goes, while noted in pl.Files

	tmp      *atomicfile.File
	written  int64 // bytes of the new version so far
	segments []segment
	pos      int64 // in the source, what is copied or replaced so far
	// expect, if set, is the version of the file the offsets it is
	// walked with are of (see ExpectVersion).
	expect *rewritelog.Fixity
	// sha256 is the new version's SHA-256 if the placement asks for it
	// (Placement.SHA256), taken by verify.
	sha256 string
	// crc32 is its CRC-32 if the placement asks for it (Placement.WantSums),
	// taken by verify with sha256; hasCRC32 says so.
	crc32    uint32
	hasCRC32 bool
}

// segment is a stretch of the new file: a copy of the source from srcOff,
// or a record written anew for the one that stood at srcOff with oldLen
// bytes.
type segment struct {
	newOff, length int64
	srcOff         int64
	written        bool
	oldLen         int64
}

// Open finds the file that field 1 file names, refuses (a *RefusedError)
// what cannot be replaced safely, and opens it.
func Open(pl *Placement, file string) (*Version, error) {
	v := &Version{pl: pl, File: file}
	if err := v.open(); err != nil {
		v.Close()
		return nil, v.Refuse(err)
	}
	return v, nil
}

func (v *Version) open() error {
	pl := v.pl
	name, err := manifest.UnescapeFile(v.File)
	if err != nil {
		return err
	}
	v.Name = name
	if pl.Sections != nil {
		if s, ok := pl.Sections(name); ok {
			return v.openSection(s)
		}
	}
	local, err := v.resolve()
	if err != nil {
		return err
	}
	v.Path = local.Path()
	if v.srcRoot, err = local.OpenRoot(); err != nil {
		return err
	}
	v.srcName = local.Rel
	if v.Src, err = v.srcRoot.Open(filepath.FromSlash(local.Rel)); err != nil {
		return err
	}
	info, err := v.Src.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", v.Path)
	}
	if err := pl.checkLinks(v.Path, info); err != nil {
		return err
	}
	stat := func() (os.FileInfo, error) { return v.srcRoot.Stat(filepath.FromSlash(v.srcName)) }
	if v.target, err = NewTarget(v.Src, stat, pl.InPlace && !pl.DryRun); err != nil {
		return err
	}
	v.target.Path = v.Path
	v.Size = v.target.Info.Size()
	v.Content = v.Src
	if v.Gzip, err = gzmulti.IsGzip(v.Src); err != nil {
		return err
	}
	if pl.InPlace {
		v.dstRoot, v.dstName = v.srcRoot, v.srcName
	} else {
		if err := source.CheckName(name); err != nil {
			return err
		}
		v.dstName = name
		if pl.DryRun {
			return nil // nothing is written, so the directory need not exist
		}
		if err := os.MkdirAll(pl.OutputDir, 0o755); err != nil {
			return err
		}
		if v.dstRoot, err = os.OpenRoot(pl.OutputDir); err != nil {
			return err
		}
	}
	if !pl.DryRun {
		at := v.Path
		if !pl.InPlace {
			at = filepath.Join(pl.OutputDir, filepath.FromSlash(v.dstName))
		}
		return v.enter(at)
	}
	return nil
}

// enter notes that the new version goes to at, and removes the
// leftovers of interrupted runs there (but not the temporary file of
// another worker writing the same file under another name); a file with
// nothing to do (a second run) is never copied, so needs no space.
func (v *Version) enter(at string) error {
	// Checked once the file is open: a new version put there under
	// another name is noted before it is renamed into place.
	if other, ok := v.pl.Files.writtenBy(at); ok && other != v.File {
		return fmt.Errorf("%w, %s", ErrNamedTwice, other)
	}
	v.writingAt = at
	if v.pl.Files.enter(at) {
		atomicfile.RemoveLeftoversIn(v.dstRoot, v.dstName)
	}
	return nil
}

// openSection opens the file that is the Section s of another (see
// Placement.Sections): Src is that other file, guarded against writers
// (Target) from now to the put of the new version, which goes to
// s.NewPath; Path is s.NewPath, where the new version is logged.
func (v *Version) openSection(s Section) error {
	pl := v.pl
	if !pl.InPlace {
		return fmt.Errorf("%s is a stretch of %s: only rewritten in place", v.Name, s.Path)
	}
	real, err := filepath.EvalSymlinks(s.Path)
	if err != nil {
		return err
	}
	v.section, v.Path = &s, s.NewPath
	if v.srcRoot, err = os.OpenRoot(filepath.Dir(real)); err != nil {
		return err
	}
	v.srcName = filepath.Base(real)
	if v.Src, err = v.srcRoot.Open(v.srcName); err != nil {
		return err
	}
	info, err := v.Src.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", s.Path)
	}
	// The stretch's file is replaced whole once its stretches are put
	// (a WACZ package written anew): one with other names is refused as
	// a file of its own is.
	if err := pl.checkLinks(s.Path, info); err != nil {
		return err
	}
	stat := func() (os.FileInfo, error) { return v.srcRoot.Stat(v.srcName) }
	if v.target, err = NewTarget(v.Src, stat, !pl.DryRun); err != nil {
		return err
	}
	v.target.Path = s.Path
	if s.Offset < 0 || s.Size < 0 || s.Offset > v.target.Info.Size()-s.Size {
		return fmt.Errorf("%s: %d bytes at %d: %w (%s has %d bytes)", v.Name, s.Size, s.Offset, io.ErrUnexpectedEOF, s.Path, v.target.Info.Size())
	}
	v.base, v.Size = s.Offset, s.Size
	v.Content = io.NewSectionReader(v.Src, s.Offset, s.Size)
	if v.Gzip, err = gzmulti.IsGzip(v.Content); err != nil {
		return err
	}
	if v.dstRoot, err = os.OpenRoot(filepath.Dir(s.NewPath)); err != nil {
		return err
	}
	v.dstName = filepath.Base(s.NewPath)
	if pl.DryRun {
		return nil
	}
	return v.enter(s.NewPath)
}

// resolve finds the file: its locations entry (the user's own path, taken
// as written and its links followed), or beneath a root.
func (v *Version) resolve() (source.Local, error) {
	if p, ok := v.pl.Locator.Locations[v.Name]; ok {
		if strings.Contains(p, "://") {
			return source.Local{}, fmt.Errorf("only local files are rewritten, not %s", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return source.Local{}, err
		}
		return source.Local{Root: filepath.Dir(real), Rel: filepath.Base(real)}, nil
	}
	return v.pl.Locator.Resolve(v.File)
}

// Close removes a new version not put in place and closes the file.
func (v *Version) Close() {
	if v.tmp != nil {
		v.tmp.Abort()
	}
	if v.writingAt != "" {
		v.pl.Files.leave(v.writingAt)
		v.writingAt = ""
	}
	if v.target != nil {
		v.target.Release()
	}
	if v.Src != nil {
		v.Src.Close()
	}
	if v.dstRoot != nil && v.dstRoot != v.srcRoot {
		v.dstRoot.Close()
	}
	if v.srcRoot != nil {
		v.srcRoot.Close()
	}
}

// Refuse returns err as the refusal of the whole file (a *RefusedError),
// unless it is one already.
func (v *Version) Refuse(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return err
	}
	return &RefusedError{File: v.File, Offset: -1, Err: err}
}

// ErrNotLogged is a file that is not the version the rewrite log's last
// replacement of it left: it changed since (another tool, or a run the log
// does not record), and the offsets the log gives are not its.
var ErrNotLogged = errors.New("the file is not the version the rewrite log's last replacement of it left")

// ExpectVersion notes that the file must be the version fx left (its new
// size and sum): the size is checked now (a refusal), the sum from the
// reads of the check before the file is replaced, taken with the sum's
// algorithm (SHA-256 for a log of an earlier version), which the "# file"
// line of this replacement then gives its old sum in too.
func (v *Version) ExpectVersion(fx rewritelog.Fixity) error {
	v.expect = &fx
	if v.Size != fx.NewSize {
		return v.Refuse(fmt.Errorf("%w (%d bytes, %s): it has %d bytes", ErrNotLogged, fx.NewSize, fx.NewSum, v.Size))
	}
	return nil
}

// Pos is where in the file the new version has got to: what is copied or
// replaced so far.
func (v *Version) Pos() int64 { return v.pos }

// Written is the size of the new version so far: the new offset of what
// comes next.
func (v *Version) Written() int64 { return v.written }

// CopyTo copies the file's bytes from Pos to end unchanged, once there is
// a temporary file; until then it only notes them.
func (v *Version) CopyTo(end int64) error {
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
func (v *Version) copySegment(s segment) error {
	if _, err := v.Src.Seek(v.base+s.srcOff, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(v.tmp.File, io.LimitReader(v.Src, s.length))
	if err == nil && n != s.length {
		err = fmt.Errorf("copying %d bytes at %d: %w after %d", s.length, s.srcOff, io.ErrUnexpectedEOF, n)
	}
	return v.WriteFailed(err)
}

// WriteRecord replaces the record at at, oldLen bytes long, by b: the
// bytes before it are copied, b written (in a dry run only noted).
func (v *Version) WriteRecord(at, oldLen int64, b []byte) error {
	if err := v.CopyTo(at); err != nil {
		return err
	}
	v.replaced(at, oldLen, int64(len(b)))
	if v.pl.DryRun {
		return nil
	}
	if v.tmp == nil {
		if err := v.createTemp(); err != nil {
			return err
		}
	}
	_, err := v.tmp.Write(b)
	return v.WriteFailed(err)
}

// StartRecord begins a record written anew in place of the one at at: the
// bytes before it are copied, and it returns where the record is to be
// written (its failures classed by WriteFailed) and its new offset. Once
// it is written, EndRecord notes it.
func (v *Version) StartRecord(at int64) (io.Writer, int64, error) {
	if err := v.CopyTo(at); err != nil {
		return nil, 0, err
	}
	if v.tmp == nil {
		if err := v.createTemp(); err != nil {
			return nil, 0, err
		}
	}
	return v.tmp.File, v.written, nil
}

// EndRecord notes that the record at at, oldLen bytes long, was replaced
// by the n bytes written since StartRecord.
func (v *Version) EndRecord(at, oldLen, n int64) { v.replaced(at, oldLen, n) }

// replaced notes that the record at at, oldLen bytes long, is replaced by
// length new bytes.
func (v *Version) replaced(at, oldLen, length int64) {
	v.segments = append(v.segments, segment{newOff: v.written, length: length, srcOff: at, written: true, oldLen: oldLen})
	v.written += length
	v.pos = at + oldLen
}

// WriteFailed classes a failure to write the new version. A full disk
// stops the run (every later file would fail the same way, and the
// operator must make room): a *WriteError, exit status 2. Any other
// failure (a read-only file system, a failing device) refuses this file,
// and the run goes on. Either way the file is left untouched.
func (v *Version) WriteFailed(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &WriteError{File: v.File, Err: err}
	}
	var we *WriteError
	if errors.As(err, &we) {
		return err
	}
	return &RefusedError{File: v.File, Offset: -1, Err: fmt.Errorf("writing its new version: %w", err)}
}

// createTemp makes the new version's temporary file and copies into it
// what was noted so far: the copied stretches before the first new one.
func (v *Version) createTemp() error {
	if err := v.target.CheckWriters(); err != nil {
		return v.Refuse(err) // before the copy: it would be thrown away
	}
	if dir := path.Dir(v.dstName); dir != "." {
		if err := v.dstRoot.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return v.WriteFailed(err)
		}
	}
	create := v.pl.Create
	if create == nil {
		create = atomicfile.CreateIn
	}
	tmp, err := create(v.dstRoot, v.dstName, v.target.Info.Mode().Perm())
	if err != nil {
		return v.WriteFailed(err)
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

// Check reads back from the new version newFile the k-th record written
// anew (k from 0, in the order they were written), length bytes at
// offset at, and says what is wrong with it.
type Check func(k int, at, length int64, newFile *os.File) error

// Replaced is a file replaced by its new version: its entries as the log
// takes them, and the two versions as the replacement left them (see
// rewritelog.Replacement); Old and New nil if they could not be known.
type Replaced struct {
	*rewritelog.Intent
	Old, New os.FileInfo
	// SHA256 is the new version's SHA-256 (hex) if the placement asks for
	// it (Placement.SHA256, Placement.WantSums), else "".
	SHA256 string
	// CRC32 is the new version's CRC-32 if the placement asks for it
	// (Placement.WantSums), HasCRC32 saying so: taken by the check's read of
	// the bytes it proved, with the SHA-256.
	CRC32    uint32
	HasCRC32 bool
}

// Replace puts the checked new version in place: with the old file's
// owner, group, mode and extended attributes, its entries journaled in
// log (in place), and exchanged with the old file (see put) while lock is
// held (no original in it is being read). check reads back each record written
// anew. It returns the replacement, whose entries the caller appends to
// the log in the order of its files; with atomicfile.ErrNotSynced, the
// file was replaced, and only the rename may not be on disk yet.
func (v *Version) Replace(log *rewritelog.Log, lock sync.Locker, entries []rewritelog.Entry, check Check) (*Replaced, error) {
	if err := v.tmp.Sync(); err != nil {
		return nil, v.WriteFailed(err)
	}
	// Another name of the file replaced it meanwhile: that is why it
	// changed (see Files).
	if other, ok := v.pl.Files.writtenBy(v.writingAt); ok && other != v.File {
		return nil, v.Refuse(fmt.Errorf("%w, %s", ErrNamedTwice, other))
	}
	oldSum, newSum, err := v.verify(check)
	if err != nil {
		return nil, v.Refuse(fmt.Errorf("the new version failed its check and was removed: %w", err))
	}
	if v.expect != nil && oldSum != v.expect.NewSum {
		return nil, v.Refuse(fmt.Errorf("%w (%s): it has %s", ErrNotLogged, v.expect.NewSum, oldSum))
	}
	if err := v.target.Unchanged(); err != nil {
		return nil, v.Refuse(err)
	}
	// A Section's new version is a file of its own beside the file it
	// is a stretch of, created with that file's permission bits: the
	// owner and attributes are the process's, as those of a staged copy
	// of it were (the file itself, a package, keeps its own).
	if v.section == nil {
		if err := v.target.KeepAttributes(v.tmp.File); err != nil {
			return nil, v.Refuse(err)
		}
	}
	result := &Replaced{Intent: &rewritelog.Intent{Fixity: rewritelog.Fixity{File: v.Name, OldSize: v.Size, OldSum: oldSum, NewSize: v.written, NewSum: newSum}, Path: v.Path, Entries: entries}, SHA256: v.sha256, CRC32: v.crc32, HasCRC32: v.hasCRC32}
	// The two versions as they are now, for rewritelog.Replacement: the
	// old one as it was read, the new one as checked, before its rename.
	oldInfo, oldErr := v.Src.Stat()
	if oldErr == nil && v.section != nil {
		oldInfo = SectionInfo(oldInfo, v.Size)
	}
	tmpInfo, tmpErr := v.tmp.File.Stat()
	lock.Lock()
	defer lock.Unlock()
	if v.pl.InPlace {
		if err := log.Journal(result.Intent); err != nil {
			return nil, fmt.Errorf("writing the log's journal: %w", err)
		}
	}
	undo := v.pl.Files.write(v.writingAt, v.File)
	if undo == nil {
		// Another name of the file got there first, after this one opened
		// it (Unchanged saw the old file): not replaced, not logged.
		if v.pl.InPlace {
			log.Unjournal(result.Intent)
		}
		other, _ := v.pl.Files.writtenBy(v.writingAt)
		return nil, v.Refuse(fmt.Errorf("%w, %s", ErrNamedTwice, other))
	}
	// The last look for a writer before the new version takes the name
	// (put looks again once it has).
	if err := v.target.CheckWriters(); err != nil {
		undo()
		if v.pl.InPlace {
			log.Unjournal(result.Intent)
		}
		return nil, v.Refuse(err)
	}
	err = v.put(result.Intent.Fixity.NewSize, result.Intent.Fixity.NewSum)
	v.tmp = nil
	var stuck *stuckError
	switch {
	case err == nil, errors.Is(err, atomicfile.ErrNotSynced):
		// Replaced, complete (with ErrNotSynced, only the directory entry
		// may not be on disk yet: not a refusal, the log must list its new
		// offsets).
		if oldErr == nil && tmpErr == nil {
			result.Old, result.New = oldInfo, v.renamed(tmpInfo)
		}
		return result, err
	case errors.As(err, &stuck):
		// Which version the name holds is not known: the journal keeps
		// the intent, which the log's next opener completes if the file
		// is the new version, and the run stops.
		return nil, err
	default:
		undo()
		if v.pl.InPlace {
			log.Unjournal(result.Intent)
		}
		if IsRefusal(err) {
			return nil, err
		}
		return nil, v.WriteFailed(err)
	}
}

// put puts the new version, newSize bytes with the sum newSum, under the
// file's name (Target.Put), in place; elsewhere it renames it there. If
// the name is given back, the new version is kept unless it is still
// the one written, with no writer (unwrittenSince). Where the file system
// cannot exchange names, the run warns once that the instants between the
// last look and the rename are not covered.
func (v *Version) put(newSize int64, newSum string) error {
	if v.section != nil {
		return v.putSection()
	}
	if !v.pl.InPlace {
		// A file there is not this rewrite's to replace: another crawl's
		// file of the same name, or the collection's own file when the
		// output directory is its root (--in-place checks what replacing
		// that takes).
		// An earlier run's output, the same bytes, is the result already
		// (a rerun finishes).
		if fi, err := v.dstRoot.Lstat(filepath.FromSlash(v.dstName)); !errors.Is(err, fs.ErrNotExist) {
			same := err == nil && v.sameAs(fi)
			v.tmp.Abort()
			switch {
			case same:
				return nil
			case err == nil:
				err = errors.New("another file of that name is in the output directory: a new version is never put over a file there (move it away, or rewrite the collection's file with --in-place)")
			}
			return v.Refuse(err)
		}
		return v.tmp.Commit()
	}
	err := v.target.Put(v.tmp, unwrittenSince(newSize, newSum), func(err error) {
		v.pl.Files.noExchange.Do(func() {
			if v.pl.Warn != nil {
				v.pl.Warn(fmt.Errorf("%s: %w: each file is renamed over instead, and a writer that opens it, or a file another process renames over it, in the instant between the last check and the rename is lost", v.Path, err))
			}
		})
	})
	var displaced *DisplacedError
	var stuck *stuckError
	switch {
	case errors.As(err, &displaced):
		return v.Refuse(displaced)
	case errors.As(err, &stuck):
		stuck.File = v.File
	}
	return err
}

// putSection puts the new version of a Section at its NewPath, which
// must not exist (atomicfile.File.CommitNew), and looks at the file it
// is a stretch of once more: still the file opened, as it was, with no
// writer seen since, or the new version is taken away again (a refusal).
func (v *Version) putSection() error {
	err := v.tmp.CommitNew()
	switch {
	case errors.Is(err, fs.ErrExist):
		return v.Refuse(fmt.Errorf("%s: %w: a new version is never put over a file there (a file another process put there while the stretch of %s was rewritten)", v.Path, err, v.section.Path))
	case err != nil && !errors.Is(err, atomicfile.ErrNotSynced):
		return err
	}
	why := v.target.Unchanged()
	if why == nil {
		why = v.target.CheckWriters()
	}
	if why == nil {
		return err
	}
	if rerr := v.dstRoot.Remove(v.dstName); rerr != nil {
		return &stuckError{File: v.File, Why: why, Err: rerr, Old: v.section.Path}
	}
	return v.Refuse(&DisplacedError{Why: why})
}

// sameAs reports whether the file fi of the output directory holds the
// new version's bytes.
func (v *Version) sameAs(fi os.FileInfo) bool {
	if !fi.Mode().IsRegular() || fi.Size() != v.written {
		return false
	}
	f, err := v.dstRoot.Open(filepath.FromSlash(v.dstName))
	if err != nil {
		return false
	}
	defer f.Close()
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := int64(0); off < v.written; {
		n := int(min(int64(len(a)), v.written-off))
		if _, err := v.tmp.ReadAt(a[:n], off); err != nil {
			return false
		}
		if _, err := f.ReadAt(b[:n], off); err != nil || !bytes.Equal(a[:n], b[:n]) {
			return false
		}
		off += int64(n)
	}
	return true
}

// DryRun is the replacement a dry run would make: its entries, with "-"
// for the sums of both versions (nothing was read whole, nothing
// written).
func (v *Version) DryRun(entries []rewritelog.Entry) *Replaced {
	return &Replaced{Intent: &rewritelog.Intent{Fixity: rewritelog.Fixity{File: v.Name, OldSize: v.Size, OldSum: "-", NewSize: v.written, NewSum: "-"},
		Path: v.Path, Entries: entries}}
}

// renamed returns the new version's FileInfo as it stands at its name
// after the rename, if it is still the file checked (tmp: as it was
// before the rename), nil otherwise. The rename changed its change time,
// nothing else.
func (v *Version) renamed(tmp os.FileInfo) os.FileInfo {
	fi, err := v.dstRoot.Stat(filepath.FromSlash(v.dstName))
	if err != nil || !os.SameFile(fi, tmp) || fi.Size() != tmp.Size() || !fi.ModTime().Equal(tmp.ModTime()) {
		return nil
	}
	return fi
}

// verify re-reads the new version from disk: every copied segment must
// equal the source byte for byte, and check passes every written one. It
// returns the sums of the old file and of the new one, for the log's
// fixity line, from the same reads: the new one's in the log's fixity
// algorithm, the old one's in that of the sum it is expected to have
// (ExpectVersion), if any, so that it can be compared.
func (v *Version) verify(check Check) (oldSum, newSum string, err error) {
	return v.verifyWith(check, openMapped)
}

// verifyWith is verify, reading both versions through open's sections.
func (v *Version) verifyWith(check Check, open openSection) (oldSum, newSum string, err error) {
	oldAlg := fixity.Default
	if v.expect != nil {
		if alg, ok := fixity.AlgorithmOf(v.expect.NewSum); ok {
			oldAlg = alg
		}
	}
	sums := v.pl != nil && v.pl.WantSums != nil && v.pl.WantSums(v.Name)
	newAlg := v.newAlgorithm(sums)
	newHash := fixity.New(newAlg)
	known := v.knownSum()
	var oldHash hash.Hash
	if known == "" {
		oldHash = oldAlg.New()
	}
	var newSums io.Writer = newHash
	var newCRC hash.Hash32
	if sums {
		newCRC = crc32.NewIEEE()
		newSums = io.MultiWriter(newHash, newCRC)
	}
	newFile := v.tmp.File
	newInfo, err := newFile.Stat()
	if err != nil {
		return "", "", err
	}
	// A source shorter than when it was read would show zeros past its
	// end in the last page of a mapping: refused here, as a read would.
	if srcInfo, err := v.Src.Stat(); err != nil {
		return "", "", err
	} else if srcInfo.Size() < v.base+v.Size {
		return "", "", fmt.Errorf("re-reading the source: %w (%d bytes, %d when read)", io.ErrUnexpectedEOF, srcInfo.Size(), v.base+v.Size)
	}
	newer, src := open(newFile, newInfo.Size()), open(v.Src, v.base+v.Size)
	defer newer.close()
	defer src.close()
	var older section = src
	if v.base != 0 {
		older = offsetSection{section: src, base: v.base}
	}
	var end, srcEnd int64
	err = guardFaults(func() error {
		var err error
		end, srcEnd, err = v.compareSegments(check, newer, older, oldHash, newSums)
		return err
	}, newer, src)
	if err != nil {
		return "", "", err
	}
	fi, err := newFile.Stat()
	if err != nil {
		return "", "", err
	}
	if fi.Size() != end {
		return "", "", fmt.Errorf("the new version has %d bytes, %d were written", fi.Size(), end)
	}
	if srcEnd != v.Size {
		return "", "", fmt.Errorf("the segments cover %d bytes of the source's %d", srcEnd, v.Size)
	}
	v.sha256 = newHash.Sum(fixity.SHA256)
	if newCRC != nil {
		v.crc32, v.hasCRC32 = newCRC.Sum32(), true
	}
	if oldHash == nil {
		return known, newHash.Sum(newAlg), nil
	}
	return oldAlg.Format(oldHash.Sum(nil)), newHash.Sum(newAlg), nil
}

// knownSum is the old version's sum for the log's fixity line when it is
// known without hashing it (Section.SHA256: a WACZ member's as its
// package's datapackage.json gives it), "" when it must be hashed: only
// for a Section with no version expected (ExpectVersion, whose sum
// verify compares), guarded against writers, whose file as opened is a
// version Vouched accepts. Replace refuses the new version unless the
// file is still that version when it is put (Unchanged, CheckWriters,
// and putSection's look after the link): the bytes read were those the
// sum was checked against.
func (v *Version) knownSum() string {
	s := v.section
	if s == nil || s.SHA256 == "" || s.Vouched == nil || v.expect != nil || v.target == nil || v.target.writers == nil {
		return ""
	}
	sum := strings.ToLower(s.SHA256)
	if alg, ok := fixity.AlgorithmOf(sum); !ok || alg != fixity.SHA256 || len(sum) != 64 {
		return ""
	}
	if s.Vouched(v.target.Info) != nil {
		return ""
	}
	return sum
}

// newAlgorithm is the one algorithm the new version is hashed with, for
// the log's fixity line: SHA-256 when its SHA-256 is taken anyway
// (Placement.SHA256; wantSums, a WACZ member's new version, which its
// package names by it), else fixity.Default. One hash of the bytes where
// there were two: a BLAKE3 taken beside the SHA-256 cost the run about
// 0.2 CPU s on the 1 GB WACZ bench collection (0.6 GB of new members).
// Every reader of the log takes a sum's algorithm from its form
// (fixity.Like), as it does for logs of earlier versions, which hold
// SHA-256 alone: both are cryptographic hashes, so a version changed on
// purpose to match the logged sum is out of reach either way; a later
// check of the file against the log (undo, recovery, a second rewrite's
// ExpectVersion) takes a SHA-256 of it rather than a BLAKE3.
func (v *Version) newAlgorithm(wantSums bool) fixity.Algorithm {
	if v.pl != nil && (v.pl.SHA256 || wantSums) {
		return fixity.SHA256
	}
	return fixity.Default
}

// compareSegments reads the segments back, the new version through newer
// and the source through older: each copied one compared byte for byte
// and both hashed, each written one hashed and checked (the source's
// bytes not hashed, nor those replaced read, with a nil oldHash: its sum
// is known, knownSum). It returns where the segments end in the new
// version and in the source.
func (v *Version) compareSegments(check Check, newer, older section, oldHash, newHash io.Writer) (end, srcEnd int64, err error) {
	newFile := v.tmp.File
	k := 0 // records written anew so far
	for _, s := range v.segments {
		if s.newOff != end {
			return end, srcEnd, fmt.Errorf("segment at %d does not follow the one before", s.newOff)
		}
		// Every byte of the source is copied or written over, once, in
		// order: what the rewrite log says of the file (and what a cache
		// entry derived from it takes on trust) is then the whole truth.
		if s.srcOff != srcEnd {
			return end, srcEnd, fmt.Errorf("segment at %d takes the source from %d, not from %d", s.newOff, s.srcOff, srcEnd)
		}
		end = s.newOff + s.length
		if s.written {
			srcEnd += s.oldLen
		} else {
			srcEnd += s.length
		}
		if !s.written {
			for off := int64(0); off < s.length; {
				n := int(min(verifyChunk, s.length-off))
				a, err := newer.bytes(s.newOff+off, n)
				if err != nil {
					return end, srcEnd, fmt.Errorf("re-reading offset %d: %w", s.newOff+off, err)
				}
				b, err := older.bytes(s.srcOff+off, n)
				if err != nil {
					return end, srcEnd, fmt.Errorf("re-reading the source at %d: %w", s.srcOff+off, err)
				}
				if !bytes.Equal(a, b) {
					return end, srcEnd, fmt.Errorf("bytes at %d differ from the source at %d", s.newOff+off, s.srcOff+off)
				}
				if oldHash != nil {
					oldHash.Write(b)
				}
				newHash.Write(a)
				off += int64(n)
			}
			continue
		}
		if oldHash != nil {
			if err := hashSection(oldHash, older, s.srcOff, s.oldLen); err != nil {
				return end, srcEnd, fmt.Errorf("re-reading the source at %d: %w", s.srcOff, err)
			}
		}
		if err := hashSection(newHash, newer, s.newOff, s.length); err != nil {
			return end, srcEnd, fmt.Errorf("re-reading offset %d: %w", s.newOff, err)
		}
		if err := check(k, s.newOff, s.length, newFile); err != nil {
			return end, srcEnd, err
		}
		k++
	}
	return end, srcEnd, nil
}

// hashSection feeds n bytes of r at off to h.
func hashSection(h io.Writer, r section, off, n int64) error {
	for done := int64(0); done < n; {
		m := int(min(verifyChunk, n-done))
		b, err := r.bytes(off+done, m)
		if err != nil {
			return err
		}
		h.Write(b)
		done += int64(m)
	}
	return nil
}

// unwrittenSince is put's look at its new version, size bytes with the
// sum sum as checked, once given the name back (Swapped.Revert's inUse):
// it may be removed only if nobody has it open for writing and it holds
// the bytes checked. Revert's own look at its size and modification
// time misses a write of the same size, within the file system's
// timestamp tick, by a process gone by then.
func unwrittenSince(size int64, sum string) func(*os.File) error {
	return Unwritten(func(f *os.File) error {
		h, err := fixity.HashReader(f, fixity.Like(sum)...)
		if err != nil {
			return fmt.Errorf("it cannot be read: %w", err)
		}
		if !h.Is(size, sum) {
			return fmt.Errorf("its bytes are not those written (%d bytes, %s): it has %d bytes, %s", size, sum, h.Size(), h.Like(sum))
		}
		return nil
	})
}

// Unwritten is a look for Target.Put at a new version given the name
// back: it may be removed only if nobody has it open for writing, before
// and after same, which says whether f (read from its start) holds the
// bytes written (see unwrittenSince).
func Unwritten(same func(f *os.File) error) func(*os.File) error {
	return func(f *os.File) error {
		if err := openForWritingNow(f); err != nil {
			return err
		}
		if err := same(f); err != nil {
			return err
		}
		// Again: a writer that opened it while it was read.
		return openForWritingNow(f)
	}
}

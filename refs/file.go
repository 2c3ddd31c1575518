package refs

import (
	"bytes"
	"context"
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
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/source"
)

// osRoot and fileMode name the types of Rewriter.create's parameters.
type (
	osRoot   = os.Root
	fileMode = os.FileMode
)

// fileRewrite is the rewrite of one file: it walks the file with its
// duplicate lines in order, copies every byte it keeps and writes each
// revisit into a new version beside the file (made when the first revisit
// is due), then checks the new version and puts it in place.
type fileRewrite struct {
	w    *worker
	t    *task
	src  *os.File
	info os.FileInfo
	size int64
	gz   bool
	// The file and its new version: names beneath roots, which confine
	// every open, create and rename.
	srcRoot, dstRoot *os.Root
	srcName, dstName string // slash-separated
	path             string // the file's real path, for messages and the journal
	writingAt        string // where its new version goes, while noted in w.files

	tmp      *atomicfile.File
	written  int64 // bytes of the new version so far
	segments []segment
	pos      int64 // in the source, what is copied or replaced so far
	shrink   int64 // bytes earlier runs saved before pos
}

// segment is a stretch of the new file: a copy of the source from srcOff,
// or a revisit written for the record of line that stood at srcOff with
// oldLen bytes.
type segment struct {
	newOff, length int64
	srcOff         int64
	revisit        bool
	oldLen         int64
	line           manifest.Line
}

func (f *fileRewrite) refuse(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return err
	}
	return &RefusedError{File: f.t.file, Offset: -1, Err: err}
}

// rewrite does one file: walks it with its lines, writes the new version
// under a temporary name, checks it, and renames it over the target. Any
// failed check leaves the file untouched and returns a *RefusedError; a
// file that cannot be written stops the run.
func (w *worker) rewrite(ctx context.Context, t *task) (err error) {
	t.stats.Files = 1
	f := &fileRewrite{w: w, t: t}
	defer func() {
		f.close()
		switch {
		case err == errCut:
			t.stats = Stats{}
		case err != nil:
			t.stats = Stats{Files: 1, Refused: 1}
			t.entries = nil
		}
	}()
	if err := f.open(); err != nil {
		return f.refuse(err)
	}
	if err := f.walk(ctx); err != nil {
		if err == errARC {
			t.stats = Stats{Files: 1, ARC: 1}
			if w.r.Warn != nil {
				w.r.Warn(fmt.Errorf("%s: skipped: %w", t.file, err))
			}
			return nil
		}
		return err
	}
	return f.finish()
}

// open finds the file beneath its root, refuses what cannot be rewritten
// safely, and opens it.
func (f *fileRewrite) open() error {
	r := f.w.r
	local, err := f.resolve()
	if err != nil {
		return err
	}
	f.path = local.Path()
	if f.srcRoot, err = local.OpenRoot(); err != nil {
		return err
	}
	f.srcName = local.Rel
	if f.src, err = f.srcRoot.Open(filepath.FromSlash(local.Rel)); err != nil {
		return err
	}
	if f.info, err = f.src.Stat(); err != nil {
		return err
	}
	if !f.info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", f.path)
	}
	if st, ok := f.info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && r.InPlace && !r.HardLinks {
		return fmt.Errorf("%s has %d hard links: replacing one name would save nothing, as the other names keep the old bytes (allow it with --hard-links)", f.path, st.Nlink)
	}
	f.size = f.info.Size()
	if f.gz, err = isGzip(f.src); err != nil {
		return err
	}
	if r.InPlace {
		f.dstRoot, f.dstName = f.srcRoot, f.srcName
	} else {
		name, err := manifest.UnescapeFile(f.t.file)
		if err != nil {
			return err
		}
		if err := source.CheckName(name); err != nil {
			return err
		}
		f.dstName = name
		if r.DryRun {
			return nil // nothing is written, so the directory need not exist
		}
		if err := os.MkdirAll(r.OutputDir, 0o755); err != nil {
			return err
		}
		if f.dstRoot, err = os.OpenRoot(r.OutputDir); err != nil {
			return err
		}
	}
	// Leftovers of interrupted runs are removed (but not the temporary
	// file of another worker writing the same file under another name); a
	// file with nothing to do (a second run) is never copied, so needs no
	// space.
	if !r.DryRun {
		at := f.path
		if !r.InPlace {
			at = filepath.Join(r.OutputDir, filepath.FromSlash(f.dstName))
		}
		// Checked once the file is open: a new version put there under
		// another name is noted before it is renamed into place.
		if other, ok := f.w.files.writtenBy(at); ok && other != f.t.file {
			return fmt.Errorf("%w, %s", ErrNamedTwice, other)
		}
		f.writingAt = at
		if f.w.files.enter(at) {
			removeLeftovers(f.dstRoot, f.dstName)
		}
	}
	return nil
}

// ErrNamedTwice: the manifest names the file under two names (field 1),
// and it was rewritten under the other one in this run.
var ErrNamedTwice = errors.New("the file was rewritten earlier in this run under another name")

// resolve finds the file: its --locations entry (the user's own path,
// taken as written and its links followed), or beneath a root.
func (f *fileRewrite) resolve() (source.Local, error) {
	r := f.w.r
	name, err := manifest.UnescapeFile(f.t.file)
	if err != nil {
		return source.Local{}, err
	}
	if p, ok := r.Locations[name]; ok {
		if strings.Contains(p, "://") {
			return source.Local{}, fmt.Errorf("warcrefs rewrites local files only, not %s", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return source.Local{}, err
		}
		return source.Local{Root: filepath.Dir(real), Rel: filepath.Base(real)}, nil
	}
	return r.locator().Resolve(f.t.file)
}

func (f *fileRewrite) close() {
	if f.tmp != nil {
		f.tmp.Abort()
	}
	if f.writingAt != "" {
		f.w.files.leave(f.writingAt)
	}
	if f.src != nil {
		f.src.Close()
	}
	if f.dstRoot != nil && f.dstRoot != f.srcRoot {
		f.dstRoot.Close()
	}
	if f.srcRoot != nil {
		f.srcRoot.Close()
	}
}

// walk goes through the file's lines in order with the records examined
// ahead of it, copying what stays and writing each revisit.
func (f *fileRewrite) walk(ctx context.Context) error {
	t, st := f.t, &f.t.stats
	ahead := f.w.examineAhead(ctx, t, f.src, f.size, f.gz)
	defer ahead.stop()
	for e := range ahead.results {
		<-e.done
		l := e.line
		if ctx.Err() != nil {
			return ctx.Err()
		}
		at := l.Offset - f.shrink
		if at < f.pos {
			return &RefusedError{File: t.file, Offset: l.Offset, Err: ErrOverlap}
		}
		if at >= f.size {
			return &RefusedError{File: t.file, Offset: l.Offset, Err: fmt.Errorf("%w: the file has only %d bytes (the file is shorter than the manifest says)", ErrNotARecord, f.size)}
		}
		found, stored, err := e.found, e.stored, e.err
		if e.at != at && !e.protected {
			// Examined at the offset the shift known then gave; an earlier
			// run's revisit found since moved it.
			found, stored, err = f.w.ownExaminer().prepare(ctx, f.src, f.size, f.gz, &l, at)
		}
		if err != nil {
			return err
		}
		switch {
		case found.protected:
			// It stays a response; its bytes are copied with what follows.
			st.Protected++
			continue
		case found.already:
			st.AlreadyRevisit++
			f.shrink += l.Length - found.length
			ahead.shrink.Store(f.shrink)
			if err := f.copyTo(at + found.length); err != nil {
				return err
			}
			continue
		}
		if err := f.copyTo(at); err != nil {
			return err
		}
		if int64(len(stored)) >= found.length {
			st.NotSmaller++
			if err := f.copyTo(at + found.length); err != nil {
				return err
			}
			continue
		}
		if err := f.writeRevisit(at, found, stored, &l); err != nil {
			return err
		}
	}
	if t.cut {
		return errCut
	}
	return f.copyTo(f.size)
}

// copyTo copies the source bytes from pos to end unchanged, once there is
// a temporary file; until then it only notes them.
func (f *fileRewrite) copyTo(end int64) error {
	if end <= f.pos {
		return nil
	}
	s := segment{newOff: f.written, length: end - f.pos, srcOff: f.pos}
	f.segments = append(f.segments, s)
	f.written += s.length
	f.pos = end
	if f.tmp == nil {
		return nil
	}
	return f.copySegment(s)
}

// copySegment copies the source bytes of s. From file to file io.Copy lets
// the kernel copy (copy_file_range), as cp does.
func (f *fileRewrite) copySegment(s segment) error {
	if _, err := f.src.Seek(s.srcOff, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(f.tmp.File, io.LimitReader(f.src, s.length))
	if err == nil && n != s.length {
		err = fmt.Errorf("copying %d bytes at %d: %w after %d", s.length, s.srcOff, io.ErrUnexpectedEOF, n)
	}
	return f.writeError(err)
}

// writeError classes a failure to write the new version. A full disk stops
// the run (every later file would fail the same way, and the operator must
// make room): a *WriteError, exit status 2. Any other failure (a read-only
// file system, a failing device) refuses this file, and the run goes on.
// Either way the file is left untouched.
func (f *fileRewrite) writeError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &WriteError{File: f.t.file, Err: err}
	}
	return &RefusedError{File: f.t.file, Offset: -1, Err: fmt.Errorf("writing its new version: %w", err)}
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

// writeRevisit writes the revisit that replaces the record of l at at,
// making the temporary file and copying what comes before it first if this
// is the first.
func (f *fileRewrite) writeRevisit(at int64, found *found, stored []byte, l *manifest.Line) error {
	r, t := f.w.r, f.t
	t.entries = append(t.entries, LogEntry{File: t.file, OldOffset: at, OldLength: found.length,
		NewOffset: f.written, NewLength: int64(len(stored)), Kind: KindRevisit,
		PayloadDigest: found.digest, RefURI: found.refURI, RefDate: manifest.EscapeField(l.RefDate)})
	s := segment{newOff: f.written, length: int64(len(stored)), srcOff: at, revisit: true, oldLen: found.length, line: *l}
	f.written += s.length
	f.pos = at + found.length
	f.segments = append(f.segments, s)
	t.stats.Revisits++
	r.Progress.Revisits.Add(1)
	if r.DryRun {
		return nil
	}
	if f.tmp == nil {
		if err := f.createTemp(); err != nil {
			return err
		}
	}
	_, err := f.tmp.Write(stored)
	return f.writeError(err)
}

// createTemp makes the new version's temporary file and copies into it
// what was noted so far.
func (f *fileRewrite) createTemp() error {
	r := f.w.r
	if dir := path.Dir(f.dstName); dir != "." {
		if err := f.dstRoot.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return f.writeError(err)
		}
	}
	create := r.create
	if create == nil {
		create = atomicfile.CreateIn
	}
	tmp, err := create(f.dstRoot, f.dstName, f.info.Mode().Perm())
	if err != nil {
		return f.writeError(err)
	}
	f.tmp = tmp
	for _, s := range f.segments {
		if s.revisit {
			continue // written later; none before the first
		}
		if err := f.copySegment(s); err != nil {
			return err
		}
	}
	return nil
}

// finish puts the new version in place: checked, with the old file's
// owner, group, mode and extended attributes, its entries journaled, and
// renamed over the old file while no original in it is being read.
func (f *fileRewrite) finish() error {
	r, t := f.w.r, f.t
	r.Progress.Bytes.Add(f.size)
	if t.stats.Revisits == 0 {
		// Nothing to write: every line was done before or not worth it.
		t.stats.Untouched = 1
		return nil
	}
	t.stats.Rewritten = 1
	t.stats.BytesBefore, t.stats.BytesAfter = f.size, f.written
	if r.DryRun {
		t.result = &FileResult{File: t.file, Path: f.path, OldSize: f.size, OldSHA256: "-", NewSize: f.written, NewSHA256: "-"}
		return nil
	}
	if err := f.tmp.Sync(); err != nil {
		return f.writeError(err)
	}
	oldSum, newSum, err := f.verify()
	if err != nil {
		return f.refuse(fmt.Errorf("the new version failed its check and was removed: %w", err))
	}
	// The file must still be the one that was read: bytes appended
	// meanwhile (a crawler still writing it) would otherwise be lost.
	if err := f.unchanged(); err != nil {
		return f.refuse(err)
	}
	if err := keepAttributes(f.tmp.File, f.src, f.info); err != nil {
		return f.refuse(fmt.Errorf("cannot give the new version the file's owner, mode or attributes: %w", err))
	}
	result := &FileResult{File: t.file, Path: f.path, OldSize: f.size, OldSHA256: oldSum, NewSize: f.written, NewSHA256: newSum}
	lock := r.Originals.lock(t.file)
	lock.Lock()
	defer lock.Unlock()
	if r.InPlace {
		if err := f.w.log.pending(result, t.entries); err != nil {
			return fmt.Errorf("writing the log's journal: %w", err)
		}
	}
	undo := f.w.files.write(f.writingAt, t.file)
	if undo == nil {
		// Another name of the file got there first, after this one opened
		// it (unchanged saw the old file): not replaced, not logged.
		if r.InPlace {
			f.w.log.unpend(result)
		}
		other, _ := f.w.files.writtenBy(f.writingAt)
		return f.refuse(fmt.Errorf("%w, %s", ErrNamedTwice, other))
	}
	err = f.tmp.Commit()
	f.tmp = nil
	switch {
	case err == nil:
	case errors.Is(err, atomicfile.ErrNotSynced):
		// Replaced, complete; only the directory entry may not be on disk
		// yet. Not a refusal: the log must list its new offsets.
		if r.Warn != nil {
			r.Warn(err)
		}
	default:
		undo()
		if r.InPlace {
			f.w.log.unpend(result)
		}
		return f.writeError(err)
	}
	t.result = result
	return nil
}

// unchanged checks that the file is still the one that was opened: same
// file, size and modification time.
func (f *fileRewrite) unchanged() error {
	now, err := f.srcRoot.Stat(filepath.FromSlash(f.srcName))
	if err != nil {
		return err
	}
	if !os.SameFile(f.info, now) || now.Size() != f.info.Size() || !now.ModTime().Equal(f.info.ModTime()) {
		return fmt.Errorf("the file changed while it was being rewritten (%d bytes, now %d): run again", f.info.Size(), now.Size())
	}
	return nil
}

// verify re-reads the new version from disk: every copied segment must
// equal the source byte for byte, and every revisit must read back as one
// whole revisit record of its length. It returns the SHA-256 of the old
// file and of the new one, for the fixity list, from the same reads.
func (f *fileRewrite) verify() (oldSum, newSum string, err error) {
	a := make([]byte, 256<<10)
	b := make([]byte, 256<<10)
	oldHash, newHash := sha256.New(), sha256.New()
	x := f.w.ownExaminer()
	newFile := f.tmp.File
	var end int64
	for _, s := range f.segments {
		if s.newOff != end {
			return "", "", fmt.Errorf("segment at %d does not follow the one before", s.newOff)
		}
		end = s.newOff + s.length
		if !s.revisit {
			for off := int64(0); off < s.length; {
				n := int(min(int64(len(a)), s.length-off))
				if _, err := newFile.ReadAt(a[:n], s.newOff+off); err != nil {
					return "", "", fmt.Errorf("re-reading offset %d: %w", s.newOff+off, err)
				}
				if _, err := f.src.ReadAt(b[:n], s.srcOff+off); err != nil {
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
		if err := hashSection(oldHash, f.src, s.srcOff, s.oldLen, b); err != nil {
			return "", "", fmt.Errorf("re-reading the source at %d: %w", s.srcOff, err)
		}
		if err := hashSection(newHash, newFile, s.newOff, s.length, a); err != nil {
			return "", "", fmt.Errorf("re-reading offset %d: %w", s.newOff, err)
		}
		rr, err := x.reader(io.NewSectionReader(newFile, s.newOff, s.length), "new version")
		if err != nil {
			return "", "", err
		}
		rec, err := rr.Next()
		if err == nil {
			err = rr.Finish()
		}
		if err != nil {
			return "", "", fmt.Errorf("revisit at %d: %w", s.newOff, err)
		}
		if rec.Type != "revisit" || rec.Length != s.length || refersURI(rec) != s.line.RefURI {
			return "", "", fmt.Errorf("revisit at %d reads back as a %q record of %d bytes", s.newOff, rec.Type, rec.Length)
		}
		if _, err := rr.Next(); err != io.EOF {
			return "", "", fmt.Errorf("revisit at %d: more than one record in %d bytes", s.newOff, s.length)
		}
	}
	fi, err := newFile.Stat()
	if err != nil {
		return "", "", err
	}
	if fi.Size() != end {
		return "", "", fmt.Errorf("the new version has %d bytes, %d were written", fi.Size(), end)
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

// removeLeftovers deletes temporary files an interrupted run left beside
// name; they were never renamed, so nothing refers to them. Only names
// atomicfile can have made for it are removed: its random part is digits,
// so the temporary file of another file whose name starts with name's
// ("a.warc-2.warc" beside "a.warc"), which a concurrent worker may be
// writing, is left alone.
func removeLeftovers(root *os.Root, name string) {
	dir, base := path.Split(name)
	prefix := atomicfile.TempPrefix + base + "-"
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

// Package recompress rewrites WARC and ARC files as one gzip member per
// record, the form deduplication needs to address, fetch and replace a
// record on its own. It reads files whose members are not record boundaries
// (a whole file compressed as one member, members of several records,
// records cut across members) and writes the same records, byte for byte
// once inflated: only the compression changes. The new version is checked
// record for record against the old before it replaces it, atomically; a
// file with any damage is left untouched.
package recompress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/gzip"

	"warcdedup/atomicfile"
	"warcdedup/gzmulti"
	"warcdedup/record"
)

// Options of a run.
type Options struct {
	// OutputDir, if set, receives the new versions (NAME, or NAME.gz for
	// a plain file) and the files are left as they are. Otherwise files
	// are replaced in place.
	OutputDir string
	// Force overwrites existing files in OutputDir.
	Force bool
	// DryRun reads and checks the files, and writes nothing.
	DryRun bool
	// Level is the gzip level; 0 means gzip.DefaultCompression.
	Level int
}

// Outcome is what became of a file.
type Outcome int

// The outcomes.
const (
	Recompressed Outcome = iota // written as one member per record (with DryRun: would be)
	PerRecord                   // in place: one record per member already, left as it is
	Plain                       // in place: not compressed, left as it is (its records are addressable as they are)
	Empty                       // no bytes, or an empty gzip stream: nothing to recompress
)

func (o Outcome) String() string {
	return [...]string{"recompressed", "one record per member already", "plain, left as it is", "empty"}[o]
}

// Result tells what was done to one file.
type Result struct {
	Outcome Outcome
	Output  string // the file written (the file itself in place)
	Records int64
	Before  int64 // bytes of the file
	After   int64 // bytes of the new version (0 with DryRun)
}

// RefusedError is a file left untouched: damaged, or not one that can be
// replaced safely. The error says why.
type RefusedError struct {
	File string
	Err  error
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: left untouched: %v", e.File, e.Err) }
func (e *RefusedError) Unwrap() error { return e.Err }

// ErrDamaged wraps the damage found in a file: a record that cannot be read
// whole, bytes that are no record, a gzip member that fails its checks. A
// damaged file is never recompressed, since that would drop the bytes.
var ErrDamaged = errors.New("damaged")

// ErrCheckFailed wraps what the check of a new version found; the new
// version is removed and the file left untouched.
var ErrCheckFailed = errors.New("the new version failed its check and was removed")

// File recompresses the file name names as opt says. Any problem with the
// file leaves it untouched and is returned as a *RefusedError.
func File(ctx context.Context, name string, opt Options) (Result, error) {
	res, err := file(ctx, name, opt)
	if err != nil && ctx.Err() == nil {
		err = &RefusedError{File: name, Err: err}
	}
	return res, err
}

func file(ctx context.Context, name string, opt Options) (Result, error) {
	inPlace := opt.OutputDir == ""
	t, err := openTarget(name, inPlace, inPlace && !opt.DryRun)
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	rc := &recompression{ctx: ctx, name: name, opt: opt, inPlace: inPlace, t: t, res: Result{Before: t.Info.Size(), Output: t.path}}
	done, err := rc.classify()
	if err != nil || done {
		return rc.res, err
	}
	if opt.DryRun {
		err = rc.dryRun()
	} else {
		err = rc.write()
	}
	return rc.res, err
}

// recompression is one file recompressed, its steps in the order file
// takes them: what the file is, then the new version written, checked
// against it and put in place.
type recompression struct {
	ctx     context.Context
	name    string
	opt     Options
	inPlace bool
	t       *target
	res     Result
}

// old reads the file from its start.
func (rc *recompression) old() io.Reader {
	return io.NewSectionReader(rc.t.File, 0, rc.t.Info.Size())
}

// classify settles a file left as it is (empty; in place, plain or with
// a member per record already), done, and names the output of a file
// written elsewhere (.gz added to a plain file's name).
func (rc *recompression) classify() (done bool, err error) {
	gz, err := gzmulti.IsGzip(rc.t.File)
	if err != nil {
		return true, err
	}
	switch {
	case rc.t.Info.Size() == 0:
		rc.res.Outcome = Empty
		return true, nil
	case rc.inPlace && !gz:
		rc.res.Outcome = Plain
		return true, nil
	case rc.inPlace:
		perRecord, err := onePerMember(rc.ctx, rc.old(), rc.name)
		if err != nil {
			return true, err
		}
		if perRecord {
			rc.res.Outcome = PerRecord
			return true, nil
		}
		return false, nil
	}
	base := filepath.Base(rc.name)
	if !gz {
		base += ".gz"
	}
	rc.res.Output = filepath.Join(rc.opt.OutputDir, base)
	return false, checkOutput(rc.res.Output, rc.t, rc.opt.Force)
}

// dryRun counts the records, writing nothing.
func (rc *recompression) dryRun() error {
	var err error
	rc.res.Records, err = split(rc.ctx, rc.old(), rc.name, nil)
	if rc.res.Records == 0 && err == nil {
		rc.res.Outcome = Empty
	}
	return err
}

// write writes the new version under a temporary name beside the
// output, checks it and renames it into place; on any error it is
// removed.
func (rc *recompression) write() error {
	if rc.inPlace {
		// Before the copy: it would be thrown away.
		if err := rc.t.CheckWriters(); err != nil {
			return err
		}
	}
	atomicfile.RemoveLeftovers(rc.res.Output)
	tmp, err := atomicfile.Create(rc.res.Output, rc.t.Info.Mode().Perm())
	if err != nil {
		return err
	}
	defer tmp.Abort()
	if err := rc.copy(tmp); err != nil || rc.res.Records == 0 {
		return err
	}
	if err := rc.verify(tmp); err != nil {
		return err
	}
	if rc.inPlace {
		if err := rc.stillTheFile(tmp); err != nil {
			return err
		}
	}
	return tmp.CommitRenamed()
}

// copy writes each record of the file as a gzip member of its own to
// tmp, synced; a file of no record is Empty, and nothing more is done.
func (rc *recompression) copy(tmp *atomicfile.File) error {
	level := rc.opt.Level
	if level == 0 {
		level = gzip.DefaultCompression
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	mw := newMemberWriter(gzmulti.NewWriter(bw, level))
	var err error
	if rc.res.Records, err = split(rc.ctx, rc.old(), rc.name, mw); err != nil {
		return err
	}
	if rc.res.Records == 0 {
		rc.res.Outcome = Empty
		return nil
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return tmp.Sync()
}

// verify checks the new version, record for record, against the file.
func (rc *recompression) verify(tmp *atomicfile.File) error {
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	rc.res.After = fi.Size()
	if err := check(rc.ctx, rc.old(), tmp, rc.res.After, rc.name, rc.res.Records); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckFailed, err)
	}
	return nil
}

// stillTheFile makes the replacement the same file to everyone who could
// use it, and checks that the file is still the one read, with no writer.
func (rc *recompression) stillTheFile(tmp *atomicfile.File) error {
	if err := rc.t.KeepAttributes(tmp.File); err != nil {
		return err
	}
	if err := rc.t.Unchanged(); err != nil {
		return err
	}
	return rc.t.CheckWriters()
}

// checkOutput refuses an output that exists (unless force) or that is the
// input itself.
func checkOutput(out string, t *target, force bool) error {
	fi, err := os.Stat(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(filepath.Dir(out), 0o755)
	case err != nil:
		return err
	case os.SameFile(fi, t.Info):
		return fmt.Errorf("%s is the file itself: leave out -o to recompress in place", out)
	case !force:
		return fmt.Errorf("%s exists (use --force to overwrite)", out)
	}
	return nil
}

// onePerMember reports whether every record of a gzip file is whole in a
// gzip member of its own, as deduplication reads it. It stops at the first
// record that is not.
func onePerMember(ctx context.Context, r io.Reader, name string) (bool, error) {
	rr, err := record.NewReader(r, name)
	if err != nil {
		return false, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		_, err := rr.Next()
		if err == io.EOF {
			return true, nil
		}
		if err == nil {
			err = rr.Finish()
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			return false, nil // the tolerant reading tells damage from a member of several records
		}
		if err != nil {
			return false, err
		}
	}
}

// split reads the file r (any gzip form, or plain) as one inflated stream
// and, if mw is not nil, gives that stream to mw cut into one member per
// record. It returns the number of records. Any damage is an error
// wrapping ErrDamaged: no byte may be dropped.
func split(ctx context.Context, r io.Reader, name string, mw *memberWriter) (int64, error) {
	z, err := gzmulti.NewReader(r, name)
	if err != nil {
		return 0, err
	}
	var stream io.Reader = gzmulti.NewStream(z)
	if mw != nil {
		stream = io.TeeReader(stream, mw)
	}
	// Records are found in the inflated stream as in a plain file: their
	// offsets are where the members are cut.
	rr, err := record.NewReader(stream, name)
	if err != nil {
		return 0, damaged(err, z.Compressed())
	}
	if rr.Compressed() {
		return 0, fmt.Errorf("%w: the inflated file is gzip again, not WARC or ARC", ErrDamaged)
	}
	var n int64
	p := &progress{m: mw}
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, damaged(err, z.Compressed())
		}
		if mw != nil && n > 0 {
			// The record before ends here, with the line ends after it.
			if err := mw.cut(rec.Offset); err != nil {
				return n, err
			}
		}
		n++
		var w io.Writer = io.Discard
		if mw != nil {
			p.pos = rec.Offset + rec.HeaderLength
			w = p
		}
		if _, err := rr.WriteTo(w); err != nil {
			return n, damaged(err, z.Compressed())
		}
		if err := rr.Finish(); err != nil {
			return n, damaged(err, z.Compressed())
		}
	}
	if mw != nil {
		return n, mw.close()
	}
	return n, nil
}

// damaged marks a reading error as damage in the file, unless it is a
// failure to write the new version. Damage of the gzip layer is told by
// the gzmulti error that found it, not by the readers it passed through.
// Record offsets in a gzip file count inflated bytes, and say so.
func damaged(err error, gz bool) error {
	if ge := innermostGzipError(err); ge != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, ge)
	}
	var re *record.Error
	if errors.As(err, &re) {
		re.Inflated = gz
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return err
}

func innermostGzipError(err error) *gzmulti.Error {
	var found *gzmulti.Error
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ge, ok := e.(*gzmulti.Error); ok {
			found = ge
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return found
}

// check proves the new version cur (size bytes) holds the old one's
// records, byte for byte: read as deduplication reads it, it has n records,
// each whole in a gzip member of its own; and its inflated bytes are the
// old file's inflated bytes. Both are checked at once.
func check(ctx context.Context, old io.Reader, cur io.ReaderAt, size int64, name string, n int64) error {
	structure := make(chan error, 1)
	go func() { structure <- checkRecords(ctx, io.NewSectionReader(cur, 0, size), name, n) }()
	err := sameBytes(old, io.NewSectionReader(cur, 0, size), name)
	if serr := <-structure; err == nil {
		err = serr
	}
	return err
}

// checkRecords reads the new version as warcsum and warcrefs do.
func checkRecords(ctx context.Context, r io.Reader, name string, n int64) error {
	rr, err := record.NewReader(r, name+" (new version)")
	if err != nil {
		return err
	}
	var got int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = rr.Finish()
		}
		if err != nil {
			return err
		}
		got++
	}
	if got != n {
		return fmt.Errorf("it has %d records, the file %d", got, n)
	}
	return nil
}

// sameBytes compares the inflated streams of two files.
func sameBytes(old, cur io.Reader, name string) error {
	streams := [2]io.Reader{}
	for i, r := range []io.Reader{old, cur} {
		z, err := gzmulti.NewReader(r, name)
		if err != nil {
			return err
		}
		streams[i] = gzmulti.NewStream(z)
	}
	a, b := make([]byte, 256<<10), make([]byte, 256<<10)
	var off int64
	for {
		na, errA := io.ReadFull(streams[0], a)
		nb, errB := io.ReadFull(streams[1], b)
		if errA != nil && errA != io.EOF && errA != io.ErrUnexpectedEOF {
			return errA
		}
		if errB != nil && errB != io.EOF && errB != io.ErrUnexpectedEOF {
			return errB
		}
		if !bytes.Equal(a[:na], b[:nb]) {
			i := 0
			for i < min(na, nb) && a[i] == b[i] {
				i++
			}
			return fmt.Errorf("its inflated bytes differ from the file's at offset %d", off+int64(i))
		}
		off += int64(na)
		if errA != nil || errB != nil {
			return nil // both ended, at the same length
		}
	}
}

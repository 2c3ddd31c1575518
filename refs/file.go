package refs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"warcdedup/atomicfile"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
)

// fileRewrite is the rewrite of one file: it walks the file with its
// duplicate lines in order, copies every byte it keeps and writes each
// revisit into a new version beside the file (made when the first revisit
// is due), then checks the new version and puts it in place.
type fileRewrite struct {
	*inplace.Version
	w      *worker
	t      *task
	shrink int64 // bytes earlier runs saved before pos
}

// rewrite does one file: walks it with its lines, writes the new version
// under a temporary name, checks it, and renames it over the target. Any
// failed check leaves the file untouched and returns an
// *inplace.RefusedError; a file that cannot be written stops the run.
func (w *worker) rewrite(ctx context.Context, t *task) (err error) {
	t.stats.Files = 1
	f := &fileRewrite{w: w, t: t}
	defer func() {
		if f.Version != nil {
			f.Close()
		}
		switch {
		case err == errCut, errors.Is(err, context.Canceled):
			// Not refused: the run stopped before the file was done.
			t.stats = Stats{}
		case err != nil:
			t.stats = Stats{Files: 1, Refused: 1}
			t.entries, t.records, t.apart = nil, nil, nil
		}
	}()
	if err := w.walking(ctx); err != nil {
		return err
	}
	if f.Version, err = inplace.Open(w.r.placement(w.files), t.file); err != nil {
		w.walked()
		return err
	}
	// Entries of this job's earlier, interrupted run move the file's
	// lines: the file must be the version they left.
	if fx, ok := w.log.Version(f.Name); ok && w.r.InPlace {
		if err := f.ExpectVersion(fx); err != nil {
			w.walked()
			return err
		}
	}
	err = f.walk(ctx)
	w.walked()
	if err != nil {
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

// walking waits for a walk (Rewriter.Run): the file's walk begins as
// another file's ends, whatever the checks and replacements of the files
// walked before.
func (w *worker) walking(ctx context.Context) error {
	select {
	case w.walk = <-w.walks:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// walked gives the walk back.
func (w *worker) walked() {
	w.walks <- w.walk
	w.walk = nil
}

// walk goes through the file's lines in order with the records examined
// ahead of it, copying what stays and writing each revisit.
func (f *fileRewrite) walk(ctx context.Context) error {
	t, st := f.t, &f.t.stats
	ahead := f.w.examineAhead(ctx, t, f.Content, f.Size, f.Gzip)
	defer ahead.stop()
	for e := range ahead.results {
		<-e.done
		l := e.line
		if ctx.Err() != nil {
			return ctx.Err()
		}
		at := l.Offset - f.shrink
		if at < f.Pos() {
			return &inplace.RefusedError{File: t.file, Offset: l.Offset, Err: ErrOverlap}
		}
		if at >= f.Size {
			return &inplace.RefusedError{File: t.file, Offset: l.Offset, Err: fmt.Errorf("%w: the file has only %d bytes (the file is shorter than the manifest says)", manifest.ErrNotARecord, f.Size)}
		}
		found, stored, err := e.found, e.stored, e.err
		if e.at != at && !e.protected {
			// Examined at the offset the shift known then gave; an earlier
			// run's revisit found since moved it.
			found, stored, err = f.w.ownExaminer().prepare(ctx, f.Content, f.Size, f.Gzip, &l, at)
		}
		if err != nil && f.w.r.Apart != nil && isApart(err) {
			// Left as it is, its bytes copied with what follows, and
			// resolved again by the caller.
			st.Apart++
			t.apart = append(t.apart, apartLine{l, err})
			continue
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
			t.records = append(t.records, recordResult{l.Offset, l.Length, found.length})
			f.shrink += l.Length - found.length
			ahead.shrink.Store(f.shrink)
			if err := f.CopyTo(at + found.length); err != nil {
				return err
			}
			continue
		}
		if err := f.CopyTo(at); err != nil {
			return err
		}
		if int64(len(stored)) >= found.length {
			st.NotSmaller++
			if err := f.CopyTo(at + found.length); err != nil {
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
	return f.CopyTo(f.Size)
}

// writeRevisit writes the revisit that replaces the record of l at at,
// making the temporary file and copying what comes before it first if this
// is the first.
func (f *fileRewrite) writeRevisit(at int64, found *found, stored []byte, l *manifest.Line) error {
	t := f.t
	t.entries = append(t.entries, rewritelog.Entry{File: f.Name, OldOffset: at, OldLength: found.length,
		NewOffset: f.Written(), NewLength: int64(len(stored)), Kind: rewritelog.Revisit,
		PayloadDigest: found.digest, RefersToURI: found.refURI, RefersTo: found.refDate, OriginalMember: found.member})
	t.records = append(t.records, recordResult{l.Offset, l.Length, int64(len(stored))})
	t.stats.Revisits++
	f.w.progress.Revisits.Add(1)
	return f.WriteRecord(at, found.length, stored)
}

// finish puts the new version in place (see inplace.Version.Replace).
func (f *fileRewrite) finish() error {
	r, t := f.w.r, f.t
	f.w.progress.Bytes.Add(f.Size)
	if t.stats.Revisits == 0 {
		// Nothing to write: every line was done before or not worth it.
		t.stats.Untouched = 1
		return nil
	}
	t.stats.Rewritten = 1
	t.stats.BytesBefore, t.stats.BytesAfter = f.Size, f.Written()
	if r.DryRun {
		t.Result = f.DryRun(t.entries)
		return nil
	}
	result, err := f.Replace(f.w.log, r.Originals.Lock(t.file), t.entries, f.checkRevisit)
	if errors.Is(err, atomicfile.ErrNotSynced) {
		if r.Warn != nil {
			r.Warn(err)
		}
		err = nil
	}
	if err != nil {
		return err
	}
	t.Result = result
	if r.Replaced != nil && result.Old != nil && result.New != nil {
		r.Replaced(rewritelog.Replacement{Name: f.Name, Path: f.Path, Old: result.Old, New: result.New, Entries: t.entries, SHA256: result.SHA256, CRC32: result.CRC32, HasCRC32: result.HasCRC32})
	}
	return nil
}

// checkRevisit reads the k-th revisit written back from the new version,
// length bytes at offset at: one whole revisit record of its length,
// referring to the original its entry names (its line's).
func (f *fileRewrite) checkRevisit(k int, at, length int64, newFile *os.File) error {
	rr, err := f.w.ownExaminer().reader(io.NewSectionReader(newFile, at, length), "new version")
	if err != nil {
		return err
	}
	rec, err := rr.Next()
	if err == nil {
		err = rr.Finish()
	}
	if err != nil {
		return fmt.Errorf("revisit at %d: %w", at, err)
	}
	if rec.Type != "revisit" || rec.Length != length || revisit.RefersURI(rec) != f.t.entries[k].RefersToURI {
		return fmt.Errorf("revisit at %d reads back as a %q record of %d bytes", at, rec.Type, rec.Length)
	}
	if _, err := rr.Next(); err != io.EOF {
		return fmt.Errorf("revisit at %d: more than one record in %d bytes", at, length)
	}
	return nil
}

package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/gzmember"
	"warcdedup/gzmulti"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/record"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
)

// restoreWorker restores files one at a time, keeping its buffers.
type restoreWorker struct {
	r   *Restorer
	log *rewritelog.Log
	// progress is the run's (Restorer.Progress, or its own).
	progress *Progress
	scan     *record.Reader  // walks a file's records
	check    *record.Reader  // reads restored records back
	zw       *gzmulti.Writer // members compressed afresh
	buf      []byte
	// cmpBuf is the comparison buffer of re-pointing.
	cmpBuf []byte
	files  *inplace.Files
	// rebuilder rebuilds the gzip members the log describes; made at
	// the first one.
	rebuilder *gzmember.Rebuilder
}

// close frees what the worker holds outside Go's memory (zlib's stream).
func (w *restoreWorker) close() {
	if w.rebuilder != nil {
		w.rebuilder.Close()
	}
}

func newRestoreWorker(r *Restorer, log *rewritelog.Log, progress *Progress) *restoreWorker {
	return &restoreWorker{r: r, log: log, progress: progress, buf: make([]byte, 256<<10), cmpBuf: make([]byte, 0, 64<<10)}
}

// fileRestore is the restore of one file: it walks the file's records,
// copies every byte it keeps, and writes each revisit it restores as the
// whole record into a new version beside the file, then checks the new
// version and puts it in place.
type fileRestore struct {
	*inplace.Version
	w *restoreWorker
	t *restoreTask
	// logged are the log's revisits in the file that no run undid, by
	// where they stand now; members the descriptions the log has of the
	// gzip members they replaced (in a .gz file).
	logged  map[int64]rewritelog.Move
	members map[int64]*gzmember.Description
	// digests are the WARC-Payload-Digest of each record written anew
	// ("" for a revisit re-pointed), in the order of the entries.
	digests []string
}

// restore does one file. A failed check leaves the file untouched and
// returns a *inplace.RefusedError; a file that cannot be written stops the run.
func (w *restoreWorker) restore(ctx context.Context, t *restoreTask) (err error) {
	t.stats.Files = 1
	f := &fileRestore{w: w, t: t}
	defer func() {
		t.written = nil // the file's entries, held until it was restored
		if f.Version != nil {
			f.Close()
		}
		if err != nil {
			t.stats = Stats{Files: 1, Refused: 1}
			t.entries, t.Result = nil, nil
		}
	}()
	if f.Version, err = inplace.Open(w.r.placement(w.files), t.file); err != nil {
		return err
	}
	// The log's offsets of its revisits are those of the version its last
	// replacement of the file left.
	if m := t.written; m != nil {
		if fx, ok := m.Version(f.Name); ok {
			if err := f.ExpectVersion(fx); err != nil {
				return err
			}
		}
	}
	if err := f.findWritten(); err != nil {
		return f.Refuse(err)
	}
	if w.rebuilder != nil {
		// Another file may be another writer's: every setting is tried
		// again.
		w.rebuilder.Reset()
	}
	if err := f.walk(ctx); err != nil {
		return err
	}
	return f.finish()
}

// findWritten lists the log's revisits in the file and, in a .gz file,
// reads the descriptions of the members they replaced from the log.
func (f *fileRestore) findWritten() error {
	f.logged, f.members = map[int64]rewritelog.Move{}, map[int64]*gzmember.Description{}
	m := f.t.written
	if m == nil {
		return nil
	}
	lf := m.Lookup(f.Name)
	if lf == nil {
		return nil
	}
	described := map[int64]int64{} // log line -> offset now
	var lines []int64
	err := m.Live(lf, func(mv rewritelog.Move, off int64) error {
		mv.PayloadDigest = bytes.Clone(mv.PayloadDigest)
		f.logged[off] = mv
		if mv.Member && f.Gzip {
			described[mv.Line] = off
			lines = append(lines, mv.Line)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return m.OriginalMembers(lf, lines, func(line int64, text string) error {
		d, err := gzmember.Parse(text)
		if err != nil {
			return fmt.Errorf("log line %d: %w", line, err)
		}
		f.members[described[line]] = &d
		return nil
	})
}

// walk goes through the file's records, restoring the revisits due.
func (f *fileRestore) walk(ctx context.Context) error {
	rr, err := record.Reuse(f.w.scan, io.NewSectionReader(f.Src, 0, f.Size), f.File)
	f.w.scan = rr
	if err != nil {
		return f.Refuse(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		var damaged *record.Error
		if errors.As(err, &damaged) {
			// Its bytes are copied as they are; only revisits are read.
			continue
		}
		if err != nil {
			return f.Refuse(fmt.Errorf("reading it: %w", err))
		}
		mv, ours := f.logged[rec.Offset]
		if rec.Type == "revisit" && !ours && f.w.r.Only != nil && !f.w.r.Only(revisit.RefersURI(rec), revisit.RefersDate(rec)) {
			rr.Finish()
			continue
		}
		if rec.Type != "revisit" || !ours && !f.w.r.All {
			if ours {
				return f.Refuse(fmt.Errorf("log line %d wrote a revisit at offset %d, and a %q record stands there: the log is not this file's", mv.Line, rec.Offset, rec.Type))
			}
			rr.Finish() // damage in a record that is copied as it is
			continue
		}
		delete(f.logged, rec.Offset)
		if err := f.restoreRecord(ctx, rr, rec, ours, mv); err != nil {
			return err
		}
	}
	for off, mv := range f.logged {
		return f.Refuse(fmt.Errorf("log line %d wrote a revisit at offset %d, and no record starts there: the log is not this file's", mv.Line, off))
	}
	return f.CopyTo(f.Size)
}

// repoint rewrites the revisit rec, whose original line (orig, its payload
// inline or streaming from payload) is to go, as a revisit of alt, if alt's
// payload equals the original's byte for byte and replays alike. It
// reports whether it did; false leaves the file as it was, the original's
// payload read.
func (f *fileRestore) repoint(ctx context.Context, rec *record.Record, block []byte, line *manifest.Line, orig *originals.Original, payload io.Reader, alt manifest.Line, digestValue string) (bool, error) {
	r, at := f.w.r, rec.Offset
	altOrig, altPayload, err := r.Originals.Open(ctx, &alt, r.Policy, f.w.log)
	if err != nil {
		if r.Warn != nil {
			r.Warn(fmt.Errorf("%s: offset %d: not re-pointed to %s offset %d: %v", f.File, at, alt.File, alt.Offset, err))
		}
		return false, nil
	}
	if altPayload != nil {
		defer altPayload.Close()
	}
	if altOrig.Key != orig.Key {
		return false, nil
	}
	cmp := originals.NewComparer(altOrig, altPayload, f.w.cmpBuf)
	if payload == nil {
		cmp.Write(orig.Payload)
	} else if _, err := io.CopyBuffer(cmp, payload, f.w.buf); err != nil {
		return false, f.Refuse(fmt.Errorf("%w %s offset %d: reading it: %v", originals.ErrOriginal, line.File, line.Offset, err))
	}
	same, err := cmp.End()
	if err != nil || !same {
		return false, nil
	}

	// The revisit as it was, but for what it refers to.
	repointed := revisit.Repointed(rec, block, altOrig.URI, altOrig.Date)

	out, newOff, err := f.StartRecord(at)
	if err != nil {
		return false, err
	}
	n, _, err := f.writeRecord(out, repointed, nil, inlinePayload(nil), nil, nil, nil)
	if err != nil {
		return false, err
	}
	refURI, refDate := manifest.EscapeField(altOrig.URI), manifest.EscapeField(altOrig.Date)
	f.EndRecord(at, rec.Length, n)
	f.digests = append(f.digests, "")
	f.t.entries = append(f.t.entries, rewritelog.Entry{File: f.Name, OldOffset: at, OldLength: rec.Length, NewOffset: newOff, NewLength: n,
		Kind: rewritelog.Revisit, PayloadDigest: digestValue, RefersToURI: refURI, RefersTo: refDate})
	f.t.stats.Repointed++
	return true, nil
}

// writeRecord writes a restored record to the new version, feeding its
// payload to ph (if not nil), and returns the bytes it takes there and,
// in a .gz file, how its gzip member was written: rebuilt from desc, the
// description the log has of the member it had (nil: none), or
// compressed afresh, a member of its own.
func (f *fileRestore) writeRecord(w io.Writer, header, head []byte, payload *payloadSource, trailer []byte, desc *gzmember.Description, ph hash.Hash) (int64, memberHow, error) {
	cw := &countWriter{w: w}
	var out io.Writer = cw
	how := memberNone
	if f.Gzip {
		how = memberNoDescription
		if desc != nil {
			var err error
			how, err = f.rebuildMember(desc, header, head, payload, trailer, ph, cw)
			var we *gzmember.WriteError
			var pe *errPayload
			switch {
			case errors.As(err, &we):
				return 0, how, f.WriteFailed(we.Err)
			case errors.Is(err, gzmember.ErrChanged):
				return 0, how, f.Refuse(fmt.Errorf("offset %d: %w: its payload changed between two reads of it while its gzip member was rebuilt", f.Pos(), originals.ErrOriginal))
			case errors.As(err, &pe):
				return 0, how, f.Refuse(fmt.Errorf("%w: reading it: %v", originals.ErrOriginal, pe.err))
			case err != nil:
				return 0, how, f.Refuse(fmt.Errorf("rebuilding its gzip member: %w", err))
			case how == memberRebuilt:
				if cw.n != desc.Length {
					return 0, how, f.Refuse(fmt.Errorf("its gzip member was rebuilt as %d bytes, and the log describes one of %d", cw.n, desc.Length))
				}
				return cw.n, how, nil
			}
			// No setting makes it, and nothing was written: afresh.
		}
		if f.w.zw == nil {
			f.w.zw = gzmulti.NewWriter(cw, gzip.DefaultCompression)
		} else {
			f.w.zw.Reset(cw)
		}
		out = f.w.zw
	}
	for _, b := range [][]byte{header, head} {
		if _, err := out.Write(b); err != nil {
			return 0, how, f.WriteFailed(err)
		}
	}
	if ph != nil {
		ph.Reset() // a rebuild tried may have read some of the payload
	}
	p, err := payload.next()
	if err != nil {
		return 0, how, f.Refuse(fmt.Errorf("%w %v", originals.ErrOriginal, err))
	}
	// Errors reading the original refuse the file; writing, class.
	sink := &splitWriter{out: out, h: ph}
	if _, err := io.CopyBuffer(sink, p, f.w.buf); err != nil {
		if sink.err != nil {
			return 0, how, f.WriteFailed(sink.err)
		}
		return 0, how, f.Refuse(fmt.Errorf("%w: reading it: %v", originals.ErrOriginal, err))
	}
	if _, err := out.Write(trailer); err != nil {
		return 0, how, f.WriteFailed(err)
	}
	if f.Gzip {
		if _, err := f.w.zw.CloseMember(); err != nil {
			return 0, how, f.WriteFailed(err)
		}
	}
	return cw.n, how, nil
}

// splitWriter writes to out and hashes, remembering a write error.
type splitWriter struct {
	out io.Writer
	h   hash.Hash
	err error
}

func (s *splitWriter) Write(p []byte) (int, error) {
	n, err := s.out.Write(p)
	if s.h != nil {
		s.h.Write(p[:n])
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// pickOriginal finds the response the revisit rec refers to, of payload
// digest key (manifest form): the capture its WARC-Refers-To-Target-URI
// and -Date name (of that digest, if several and the manifest's digests
// are of the revisit's algorithm). For a revisit that names no date or no
// URI (some tools write only the digest), among the responses of its
// digest: one of the URI it names, else the latest capture of its own URI
// not after it, else the latest capture not after it, else the earliest.
func (f *fileRestore) pickOriginal(key string, rec *record.Record) (manifest.Line, error) {
	r := f.w.r
	refURI, hasURI := rec.Header.Lookup(hRefersURI)
	refDate, hasDate := rec.Header.Lookup(hRefersDate)
	uri := manifest.EscapeField(record.StripAngles(refURI))
	if hasURI && hasDate {
		date := manifest.EscapeField(strings.TrimSpace(refDate))
		var found *manifest.Line
		err := r.Captures.Find(manifest.CaptureKeyOf(uri, date), func(l *manifest.Line) error {
			switch {
			case l.IsRevisit():
			case l.Digest == key:
				found = l
				return manifest.ErrStop
			case found == nil:
				found = l
			}
			return nil
		})
		if err != nil {
			return manifest.Line{}, err
		}
		if found == nil {
			return manifest.Line{}, fmt.Errorf("its original is not in the collection: no response captured at %s %s in %s", uri, date, r.Captures.Name())
		}
		return *found, nil
	}
	lines, err := r.Originals.Responses(key)
	if err != nil {
		return manifest.Line{}, err
	}
	if len(lines) == 0 {
		return manifest.Line{}, fmt.Errorf("its original is not in the collection: no response of digest %s in the originals manifest", key)
	}
	if hasURI {
		for _, l := range lines {
			if l.URI == uri {
				return l, nil
			}
		}
	}
	own, date := manifest.URIField(rec), manifest.DateField(rec)
	best, bestOwn := -1, false
	for i, l := range lines {
		if l.Date > date {
			continue
		}
		isOwn := l.URI == own
		if best < 0 || isOwn && !bestOwn || isOwn == bestOwn && l.Date > lines[best].Date {
			best, bestOwn = i, isOwn
		}
	}
	if best < 0 {
		best = 0
		for i, l := range lines {
			if l.Date < lines[best].Date {
				best = i
			}
		}
	}
	return lines[best], nil
}

// finish puts the restored version in place (see version.replace).
func (f *fileRestore) finish() error {
	r, t := f.w.r, f.t
	f.w.progress.Bytes.Add(f.Size)
	if t.stats.Records+t.stats.Foreign+t.stats.Repointed == 0 {
		t.stats.Untouched = 1
		return nil
	}
	t.stats.Restored = 1
	t.stats.BytesBefore, t.stats.BytesAfter = f.Size, f.Written()
	result, err := f.Replace(f.w.log, r.Originals.Lock(t.file), t.entries, f.checkRestored)
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
	return nil
}

// checkRestored reads the k-th record written anew back from the new
// version, length bytes at offset at: a restored record is one whole
// response of its length whose payload hashes to its revisit's digest, a
// revisit re-pointed one whole revisit of its new original.
func (f *fileRestore) checkRestored(k int, at, length int64, newFile *os.File) error {
	rr, err := record.Reuse(f.w.check, io.NewSectionReader(newFile, at, length), "new version")
	f.w.check = rr
	if err != nil {
		return err
	}
	rec, err := rr.Next()
	if err != nil {
		return fmt.Errorf("restored record at %d: %w", at, err)
	}
	if e := &f.t.entries[k]; e.Kind == rewritelog.Revisit {
		// Re-pointed: a whole revisit of its new original.
		if err := rr.Finish(); err != nil {
			return fmt.Errorf("re-pointed revisit at %d: %w", at, err)
		}
		if rec.Type != "revisit" || revisit.RefersURI(rec) != e.RefersToURI || rec.Length != length {
			return fmt.Errorf("re-pointed revisit at %d reads back as a %q record of %d bytes referring to %s", at, rec.Type, rec.Length, revisit.RefersURI(rec))
		}
		return nil
	}
	if rec.Type != "response" {
		return fmt.Errorf("restored record at %d reads back as a %q record", at, rec.Type)
	}
	payloadDigest := f.digests[k]
	algo, sum, err := digest.ParseHeader(payloadDigest)
	if err != nil {
		return err
	}
	if _, err := rr.ReadHTTPHead(); err != nil {
		return fmt.Errorf("restored record at %d: %w", at, err)
	}
	ph := algo.New()
	if _, err := io.CopyBuffer(ph, rr, f.w.buf); err != nil {
		return fmt.Errorf("restored record at %d: %w", at, err)
	}
	if err := rr.Finish(); err != nil {
		return fmt.Errorf("restored record at %d: %w", at, err)
	}
	if !bytes.Equal(ph.Sum(nil), sum) || rec.Length != length {
		return fmt.Errorf("restored record at %d reads back as %d bytes whose payload is not %s", at, rec.Length, payloadDigest)
	}
	if _, err := rr.Next(); err != io.EOF {
		return fmt.Errorf("restored record at %d: more than one record in %d bytes", at, length)
	}
	return nil
}

// The WARC fields a revisit names its original by.
const (
	hRefersURI  = "WARC-Refers-To-Target-URI"
	hRefersDate = "WARC-Refers-To-Date"
)

// Package reindex brings a CDX or CDXJ index written before a rewrite up
// to date with the rewrite log, so that it equals what the indexer would
// write for the rewritten files, without reading them.
//
// Every line of a file the log names follows its record through the log's
// runs (rewritelog.Moves.Follow): a record the log rewrote as a revisit
// gets the new offset and length and the fields the indexers write for a
// revisit (mime "warc/revisit", the revisit's payload digest, in the
// spelling the line already uses: with or without its "sha1:" label); a
// restored record gets back the line it had before this log made it a
// revisit; every other line of the file moves by what the rewrites before
// it saved. The length of a rewritten record moves by what the log says
// the record shrank or grew, so it stays the indexer's length whether or
// not that counts the CRLF CRLF after an uncompressed record. A line
// whose range ends where a rewritten record ends is that record's (warcio.js
// gives the record after a dns: record the dns: record's offset and both
// lengths). Lines of other files, and header and metadata lines, pass
// unchanged.
package reindex

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"warcdedup/cdx"
	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// RevisitMIME is the mime the indexers give every revisit record.
const RevisitMIME = "warc/revisit"

// Updater updates the lines of indexes with one log.
type Updater struct {
	// Moves is the log held in memory (68 bytes an entry); or else Log,
	// the log followed on disk, with which a Copy's Indexes and an
	// InPlace's Rewrite read the index twice and sort what they look up
	// (stream.go), their memory growing with neither.
	Moves *rewritelog.Moves
	Log   *rewritelog.Catalog
	// Sort is how the lookups of Log are sorted: the system sort's
	// buffer and the directory of its temporary files (about 100 bytes
	// an index line).
	Sort syssort.Sorter
	// Records re-reads a restored record whose pre-revisit line the
	// index does not have; nil makes such a line an error.
	Records RecordSource
	// Stats counts what was done.
	Stats Stats

	via       follower // what Update follows records through, if not Moves
	labelled  int8     // digest spelling learned from the lines: 1 labelled, -1 not, 0 unknown
	revisited bool     // scratch for the current line
	ours      bool
}

// RecordSource gives the index fields of a record in a rewritten file.
type RecordSource interface {
	// Fields returns the mime and WARC-Payload-Digest the indexers would
	// write for the record at offset of file (a name relative to the
	// collection root).
	Fields(file string, offset int64) (mime, digest string, err error)
}

// Stats counts lines by what happened to them.
type Stats struct {
	Lines      int64 // every line read
	Records    int64 // capture lines
	OtherFiles int64 // records of files the log does not name
	Unchanged  int64 // records of files the log names, before every rewrite
	Moved      int64 // records that only moved
	Revisits   int64 // records the log made revisits
	Restored   int64 // records the log restored
	Reindexed  int64 // of Restored, read from the file
	NoLocation int64 // records without a file name or offset
	Failed     int64 // records that could not be updated (reported, passed unchanged)
}

// LineError is a record line that could not be updated.
type LineError struct {
	Input string
	Line  int64
	Err   error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s: line %d: %v", e.Input, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Update edits l, a line read from input, to what it is after the
// rewrite; it reports whether l changed. A *LineError leaves l as it was
// read: the caller reports it and may write l unchanged.
func (u *Updater) Update(l *cdx.Line, input string) (bool, error) {
	u.Stats.Lines++
	if l.Kind != cdx.Record {
		return false, nil
	}
	u.Stats.Records++
	u.learn(l)
	if l.Filename == nil || l.Offset < 0 {
		u.Stats.NoLocation++
		return false, nil
	}
	fw := u.follower()
	f, err := fw.Resolve(l.Filename)
	if err != nil {
		return false, u.fail(l, input, err)
	}
	if f == nil {
		u.Stats.OtherFiles++
		return false, nil
	}
	f.Lines++
	u.revisited, u.ours = isRevisit(l.MIME), false
	var restored, revisits, reindexed int64
	off, length, err := fw.Follow(f, l.Offset, l.Length, func(mv rewritelog.Move, off, length int64) error {
		switch mv.Kind {
		case rewritelog.Revisit:
			if u.revisited {
				return fmt.Errorf("log line %d makes the record at %d a revisit, but the index line already is one: was the index written after that run of the log? (--since)", mv.Line, mv.OldOffset)
			}
			if err := checkLength(f.Name, off, length, mv); err != nil {
				return err
			}
			l.SetMIME(RevisitMIME)
			if len(mv.PayloadDigest) > 0 {
				l.SetDigest(u.spell(l, mv.PayloadDigest))
			}
			u.revisited, u.ours = true, true
			revisits++
		case rewritelog.Restored:
			switch {
			case u.ours:
				// The line as read is the record's line before the revisit.
				l.Revert()
			case u.revisited && u.Records != nil:
				mime, digest, err := u.recordFields(f.Name, mv)
				if err != nil {
					return fmt.Errorf("log line %d restores the record at %d: %w", mv.Line, mv.OldOffset, err)
				}
				l.SetMIME(mime) // "" is absent, as the indexers leave it
				if digest != "" {
					l.SetDigest(u.spell(l, []byte(digest)))
				}
				reindexed++
			case u.revisited:
				return fmt.Errorf("log line %d restores the record at %d, whose line before its revisit the index does not have: give --root DIR to read it from the file", mv.Line, mv.OldOffset)
			default:
				return fmt.Errorf("log line %d restores the record at %d, but the index line is no revisit", mv.Line, mv.OldOffset)
			}
			if err := checkLength(f.Name, off, length, mv); err != nil {
				return err
			}
			u.revisited, u.ours = false, false
			restored++
		}
		return nil
	})
	if err != nil {
		l.Revert()
		return false, u.fail(l, input, err)
	}
	if off != l.Offset {
		l.SetOffset(off)
	}
	if length != l.Length {
		l.SetLength(length)
	}
	switch {
	case revisits > 0 || restored > 0:
		u.Stats.Revisits += revisits
		u.Stats.Restored += restored
		u.Stats.Reindexed += reindexed
	case l.IsEdited():
		u.Stats.Moved++
	default:
		u.Stats.Unchanged++
	}
	return l.IsEdited(), nil
}

// recordFields are the fields of the record mv restored: as the follow
// of a log on disk read them (in file and offset order), or read now.
func (u *Updater) recordFields(file string, mv rewritelog.Move) (string, string, error) {
	if a, ok := u.via.(*answers); ok {
		if f := a.prefetched(mv); f != nil {
			if f.err != "" {
				return "", "", errors.New(f.err)
			}
			return f.mime, f.digest, nil
		}
	}
	return u.Records.Fields(file, mv.NewOffset)
}

// follower is what records are followed through.
func (u *Updater) follower() follower {
	if u.via != nil {
		return u.via
	}
	return u.Moves
}

// LogFiles are the files the log names, in the order it first names
// them, each with the index lines found of it (File.Lines).
func (u *Updater) LogFiles() []*rewritelog.File {
	files, _, _, _ := u.logFacts()
	return files
}

// logFacts are what the Summary says of the log.
func (u *Updater) logFacts() (files []*rewritelog.File, entries, runs int, legacy bool) {
	if u.Moves != nil {
		return u.Moves.Files(), u.Moves.Entries(), len(u.Moves.Runs), u.Moves.Legacy
	}
	return u.Log.Files(), u.Log.Entries(), len(u.Log.Runs), u.Log.Legacy
}

func (u *Updater) fail(l *cdx.Line, input string, err error) error {
	u.Stats.Failed++
	return &LineError{Input: input, Line: l.Number, Err: err}
}

func isRevisit(mime []byte) bool { return string(mime) == RevisitMIME }

// checkLength refuses an index line whose length cannot be the record the
// log rewrote: in a gzip file a record is its member, whose length both
// know; in a plain file the indexer may leave out the record's final
// CRLF CRLF.
func checkLength(file string, off, length int64, mv rewritelog.Move) error {
	if length < 0 || off != mv.OldOffset {
		// Unknown, or a range that ends with the record (Follow checked).
		return nil
	}
	d := mv.OldLength - length
	if d == 0 || d > 0 && d <= 4 && !strings.HasSuffix(strings.ToLower(file), ".gz") {
		return nil
	}
	return fmt.Errorf("the index gives the record at %d length %d, log line %d %d: the index is not of the file the log rewrote", mv.OldOffset, length, mv.Line, mv.OldLength)
}

// learn notes how the index spells digests: cdxj-indexer's CDXJ keeps the
// "sha1:" label, the others do not.
func (u *Updater) learn(l *cdx.Line) {
	if u.labelled == 0 && len(l.Digest) > 0 {
		u.labelled = -1
		if bytes.IndexByte(l.Digest, ':') > 0 {
			u.labelled = 1
		}
	}
}

// spell writes digest d ("sha1:ABC") as the line, or else the index so
// far, spells digests.
func (u *Updater) spell(l *cdx.Line, d []byte) string {
	labelled := u.labelled > 0
	if len(l.Digest) > 0 && !u.ours {
		labelled = bytes.IndexByte(l.Digest, ':') > 0
	}
	if i := bytes.IndexByte(d, ':'); i > 0 && !labelled {
		d = d[i+1:]
	}
	return string(d)
}

package reindex

import (
	"errors"
	"fmt"
	"io"

	"warcdedup/cdx"
	"warcdedup/rewritelog"
)

// Job updates whole indexes: every line of each input is written to Out,
// updated or as read.
type Job struct {
	Updater
	Out *cdx.Writer
	// Delete and Add, when not nil, get the bodies to POST to OutbackCDX's
	// /{coll}/delete and /{coll}: the lines that changed, as 11-field CDX,
	// before and after. POST the deletions first: OutbackCDX indexes
	// before version 4 key a capture on urlkey and timestamp only, which a
	// rewrite does not change.
	Delete, Add *cdx.Writer
	// Options are the cdx.Reader's.
	Options cdx.Options
	// Strict stops at the first line that cannot be read or updated;
	// otherwise such a line is reported, written as read, and counted.
	Strict bool
	// Report is called for each line that cannot be read or updated, and
	// for each log entry no index line was found for.
	Report func(error)
	// Problems counts what was reported.
	Problems int64
	// Conversion, if set, makes converted ARC files' lines their WARC
	// files' before the log is applied (conversion.go).
	Conversion *Conversion

	old []byte
}

// Index updates the index read from in.
func (j *Job) Index(in io.Reader, name string) error {
	r, err := cdx.NewReader(in, name, j.Options)
	if err != nil {
		return err
	}
	batches := j.Delete != nil || j.Add != nil
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var le *cdx.LineError
			if !errors.As(err, &le) || j.Strict {
				return err
			}
			j.problem(err)
			j.Stats.Lines++
			if err := j.Out.Write(l); err != nil {
				return err
			}
			continue
		}
		if batches && l.Kind == cdx.Record {
			j.old = l.AppendCDX11(j.old[:0])
		}
		if err := j.convert(l, name); err != nil {
			if j.Strict {
				return err
			}
			j.problem(err)
		}
		changed, err := j.Update(l, name)
		if err != nil {
			if j.Strict {
				return err
			}
			j.problem(err)
		}
		if err := j.Out.Write(l); err != nil {
			return err
		}
		if changed && batches {
			if j.Delete != nil {
				if err := j.Delete.WriteRaw(j.old); err != nil {
					return err
				}
			}
			if j.Add != nil {
				if err := j.Add.WriteCDX11(l); err != nil {
					return err
				}
			}
		}
	}
}

func (j *Job) problem(err error) {
	j.Problems++
	if j.Report != nil {
		j.Report(err)
	}
}

// UnmatchedError is a log entry of a file the index has lines of, but
// none at the entry's old offset.
type UnmatchedError struct {
	File string
	Move rewritelog.Move
}

func (e *UnmatchedError) Error() string {
	return fmt.Sprintf("log line %d: %s: no index line at offset %d, which the log rewrote (%s)", e.Move.Line, e.File, e.Move.OldOffset, e.Move.Kind)
}

// Finish reports the log entries of files the indexes have lines of that
// no line was found for, and returns how many.
func (j *Job) Finish() int64 {
	if j.Conversion != nil {
		// A write error stays in the Writer, for its Flush.
		j.Conversion.Finish(j.Out)
	}
	var n int64
	j.Moves.Unmatched(func(f *rewritelog.File, mv rewritelog.Move) {
		n++
		j.problem(&UnmatchedError{File: f.Name, Move: mv})
	})
	return n
}

// Summary writes what was done.
func (j *Job) Summary(w io.Writer) {
	s := j.Stats
	fmt.Fprintf(w, "lines: %d, records: %d; in rewritten files: %d revisits, %d restored (%d read from the files), %d moved, %d before every rewrite; %d of other files, %d without file or offset\n",
		s.Lines, s.Records, s.Revisits, s.Restored, s.Reindexed, s.Moved, s.Unchanged, s.OtherFiles, s.NoLocation)
	files, without := 0, 0
	for _, f := range j.Moves.Files() {
		files++
		if f.Lines == 0 {
			without++
		}
	}
	fmt.Fprintf(w, "log: %d entries in %d runs, %d files (%d with no line in the index); problems: %d\n",
		j.Moves.Entries(), len(j.Moves.Runs), files, without, j.Problems)
	if j.Moves.Legacy {
		fmt.Fprintln(w, "note: the log has five-field lines (warcrefs before it logged digests): revisits keep the digest their line had")
	}
}

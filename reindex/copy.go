package reindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"warcdedup/cdx"
	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// Copy updates whole indexes: every line of each input is written to Out,
// updated or as read.
type Copy struct {
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
	// unmatched counts the log entries without their line, when Log is
	// followed (Indexes reports them).
	unmatched int64
}

// Input is an index a Copy reads: Open gives its bytes from the start each
// time it is called (a Copy following Log reads them twice).
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
	copy string // StreamInput's
}

// FileInput is the index in the file name.
func FileInput(name string) Input {
	return Input{Name: name, Open: func() (io.ReadCloser, error) { return os.Open(name) }}
}

// StreamInput is the index r (standard input), named name: copied to a
// file of o's temporary directory, so that it can be read twice. Remove
// the copy when done.
func StreamInput(name string, r io.Reader, o syssort.Sorter) (Input, error) {
	dir := o.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, ".tmp-reindex-input-*")
	if err != nil {
		return Input{}, err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return Input{}, err
	}
	in := FileInput(f.Name())
	in.Name, in.copy = name, f.Name()
	return in, nil
}

// Remove removes StreamInput's copy.
func (in Input) Remove() {
	if in.copy != "" {
		os.Remove(in.copy)
	}
}

// Indexes updates the indexes of inputs, in order, as Index does; with
// Log, it reads them twice (stream.go) and then reports the log entries no
// line was found for.
func (j *Copy) Indexes(ctx context.Context, inputs []Input) error {
	if j.Log == nil {
		return j.each(inputs, j.Index)
	}
	lp, err := j.startLog(ctx)
	if err != nil {
		return err
	}
	defer lp.close()
	var conv Conversion
	if j.Conversion != nil {
		conv = *j.Conversion
	}
	planErr := j.each(inputs, j.plan)
	if j.Conversion != nil {
		*j.Conversion = conv // set back what the plan counted and learned
	}
	if err := lp.planned(planErr); err != nil {
		return err
	}
	if err := lp.applied(j.each(inputs, j.Index)); err != nil {
		return err
	}
	return lp.eachUnmatched(func(f *rewritelog.File, mv rewritelog.Move) {
		j.unmatched++
		j.problem(&UnmatchedError{File: f.Name, Move: mv})
	})
}

// each calls fn with each input, open.
func (j *Copy) each(inputs []Input, fn func(io.Reader, string) error) error {
	for _, in := range inputs {
		r, err := in.Open()
		if err != nil {
			return err
		}
		err = fn(r, in.Name)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// plan reads an index as Index does, and has Update follow each line
// Index would have it update (stream.go).
func (j *Copy) plan(in io.Reader, name string) error {
	r, err := cdx.NewReader(in, name, j.Options)
	if err != nil {
		return err
	}
	for {
		l, err := r.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil && !errors.As(err, new(*cdx.LineError)):
			return err
		case err != nil:
			continue
		}
		j.convert(l, name)
		j.Update(l, name)
	}
}

// Index updates the index read from in.
func (j *Copy) Index(in io.Reader, name string) error {
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

func (j *Copy) problem(err error) {
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
// no line was found for (with Log, Indexes did), and returns how many.
func (j *Copy) Finish() int64 {
	if j.Conversion != nil {
		// A write error stays in the Writer, for its Flush.
		j.Conversion.Finish(j.Out)
	}
	if j.Moves == nil {
		return j.unmatched
	}
	var n int64
	j.Moves.Unmatched(func(f *rewritelog.File, mv rewritelog.Move) {
		n++
		j.problem(&UnmatchedError{File: f.Name, Move: mv})
	})
	return n
}

// Summary writes what was done.
func (j *Copy) Summary(w io.Writer) {
	s := j.Stats
	fmt.Fprintf(w, "lines: %d, records: %d; in rewritten files: %d revisits, %d restored (%d read from the files), %d moved, %d before every rewrite; %d of other files, %d without file or offset\n",
		s.Lines, s.Records, s.Revisits, s.Restored, s.Reindexed, s.Moved, s.Unchanged, s.OtherFiles, s.NoLocation)
	logFiles, entries, runs, legacy := j.logFacts()
	files, without := 0, 0
	for _, f := range logFiles {
		files++
		if f.Lines == 0 {
			without++
		}
	}
	fmt.Fprintf(w, "log: %d entries in %d runs, %d files (%d with no line in the index); problems: %d\n",
		entries, runs, files, without, j.Problems)
	if legacy {
		fmt.Fprintln(w, "note: the log has five-field lines (warcrefs before it logged digests): revisits keep the digest their line had")
	}
}

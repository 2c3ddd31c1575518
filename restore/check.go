package restore

import (
	"context"
	"fmt"
	"sync"

	"warcdedup/fixity"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// Unrestored is a file an undo was to restore that is not what the rewrite
// log says it must be once restored.
type Unrestored struct {
	File string // escaped as manifest field 1
	Err  error
}

func (u *Unrestored) Error() string { return u.File + ": not restored: " + u.Err.Error() }

// CheckStats counts what CheckRestored read.
type CheckStats struct {
	Files int64 // files the log names among those checked
	Bytes int64 // read to hash them
	// Verdicts say, of each file restored as the log says whose earlier
	// version the log records (rewritelog.Moves.Undone), whether it is
	// that version again, in the order of the files.
	Verdicts []Verdict
}

// Verdict is what a restored file is, compared with the file before the
// runs the undo (or undos) since restored: bit for bit that file again, or
// its records as they were in other bytes (gzip members compressed
// afresh).
type Verdict struct {
	File string // escaped as manifest field 1
	// Before is the "# file" line of the earliest run undone: its
	// OldSize and OldSum are the file before it.
	Before rewritelog.Fixity
	// Sum is the file's now, in the algorithm of Before's OldSum (a log
	// of an earlier version has SHA-256); Exact says it is Before's
	// OldSum (and the size Before's OldSize).
	Sum   string
	Exact bool
	// Unbroken: nothing but the runs and undos the log records changed
	// the file since Before; Restores is the replacements that restored
	// its records since (see rewritelog.Undoing).
	Unbroken bool
	Restores int
}

// CheckRestored verifies the end state of an undo from the rewrite log as
// it is after it (moves gives its entries of each file, asked for once a
// file in the order of files: a merge join with the log sorted on file,
// rewritelog.ByFile.For, or a lookup in the whole log): in each of files (escaped as
// manifest field 1) that the log names, no revisit the log wrote is left,
// no block of its entries is incomplete, and the file has the size and
// sum of the log's last replacement of it: what the restore wrote and
// checked before the rename, read again from disk. A file the log names
// whose version is not the log's has revisits the log cannot account for
// (a log cut short, a run it does not record). It returns what is wrong,
// file by file in the order of files, reading jobs files at a time, and,
// in its stats, the verdict of each file restored (see Verdict): from the
// same reads.
func CheckRestored(ctx context.Context, moves func(file string) (*rewritelog.Moves, error), loc *source.Locator, files []string, jobs int) ([]*Unrestored, CheckStats, error) {
	problems := make([]*Unrestored, len(files))
	sizes := make([]int64, len(files))
	checked := make([]bool, len(files))
	verdicts := make([]*Verdict, len(files))
	type job struct {
		i     int
		moves *rewritelog.Moves
	}
	next := make(chan job)
	var wg sync.WaitGroup
	for range max(jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				i := j.i
				named, size, v, err := checkRestored(j.moves, loc, files[i])
				checked[i], sizes[i], verdicts[i] = named, size, v
				if err != nil {
					problems[i] = &Unrestored{File: files[i], Err: err}
				}
			}
		}()
	}
	var err error
	for i, f := range files {
		if err = ctx.Err(); err != nil {
			break
		}
		var m *rewritelog.Moves
		if m, err = moves(f); err != nil {
			err = fmt.Errorf("the rewrite log's entries of %s: %w", f, err)
			break
		}
		next <- job{i, m}
	}
	close(next)
	wg.Wait()
	var st CheckStats
	var out []*Unrestored
	for i := range files {
		if checked[i] {
			st.Files++
			st.Bytes += sizes[i]
		}
		if problems[i] != nil {
			out = append(out, problems[i])
		}
		if verdicts[i] != nil {
			st.Verdicts = append(st.Verdicts, *verdicts[i])
		}
	}
	return out, st, err
}

// checkRestored checks one file (see CheckRestored); named says whether
// the log names it, size is the bytes read; the verdict is the file's if
// it is restored and the log knows its version before.
func checkRestored(moves *rewritelog.Moves, loc *source.Locator, file string) (named bool, size int64, v *Verdict, err error) {
	name, err := manifest.UnescapeFile(file)
	if err != nil {
		return false, 0, nil, err
	}
	u, undone := moves.Undone(name)
	named, size, sums, err := checkVersion(moves, loc, file, name, u.Before.OldSum)
	if err != nil || sums == nil {
		return named, size, nil, err
	}
	if undone {
		v = &Verdict{File: file, Before: u.Before, Sum: sums.Like(u.Before.OldSum), Exact: sums.Matches(u.Before.OldSum) && size == u.Before.OldSize,
			Unbroken: u.Unbroken, Restores: u.Restores}
	}
	return named, size, v, nil
}

// checkVersion is checkRestored of the file name, but for its verdict:
// sums are its sums if it was read, taken with the algorithm of the log's
// last version of it and that of before (a sum the verdict compares with).
func checkVersion(moves *rewritelog.Moves, loc *source.Locator, file, name, before string) (named bool, size int64, sums *fixity.Hash, err error) {
	fx, versioned := moves.Version(name)
	f := moves.Lookup(name)
	incomplete := moves.Incomplete(name)
	if f == nil && !versioned && incomplete == nil {
		return false, 0, nil, nil // the log never replaced it
	}
	if incomplete != nil {
		return true, 0, nil, incomplete
	}
	if f != nil {
		left := 0
		var first rewritelog.Move
		err := moves.Live(f, func(mv rewritelog.Move, _ int64) error {
			if left == 0 {
				first = mv
			}
			left++
			return nil
		})
		if err != nil {
			return true, 0, nil, err
		}
		if left > 0 {
			return true, 0, nil, fmt.Errorf("%d revisits the rewrite log wrote are left in it (the first of log line %d)", left, first.Line)
		}
	}
	if !versioned {
		return true, 0, nil, nil // a log of a version that wrote no "# file" lines
	}
	local, err := loc.Resolve(file)
	if err != nil {
		return true, 0, nil, err
	}
	sums, err = fixity.HashFile(local.Path(), fixity.Like(fx.NewSum, before)...)
	if err != nil {
		return true, 0, nil, err
	}
	size = sums.Size()
	if size != fx.NewSize || !sums.Matches(fx.NewSum) {
		return true, size, nil, fmt.Errorf("%w (%d bytes, %s): it has %d bytes, %s", inplace.ErrNotLogged, fx.NewSize, fx.NewSum, size, sums.Like(fx.NewSum))
	}
	return true, size, sums, nil
}

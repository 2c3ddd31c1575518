package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"warcdedup/fixity"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
)

// hashedForIdentity bounds the files whose SHA-256 checkLogDescribes
// reads, once the sizes of all agree: enough to tell another collection
// from this one moved, without reading the collection twice.
const hashedForIdentity = 4

// checkLogDescribes refuses a work directory whose rewrite log is of
// another collection's files (the job was on before, other directories):
// the run would add its entries to a log whose earlier ones name, under
// the same names, files it never wrote, and the undo would follow those
// too, and the work directory's records would mix both collections. A
// collection moved or renamed keeps its work directory: every file the log
// last replaced that is here has the size the log gives it (and the
// first few its SHA-256), and at least one is here.
func (r *run) checkLogDescribes(before []string) error {
	if len(before) == 0 || slices.Equal(before, r.opt.Collections) {
		return nil
	}
	if fi, err := os.Stat(r.wd.File(workdir.LogFile)); err != nil || fi.Size() == 0 {
		return nil // nothing written yet: nothing to mix
	}
	loc := r.coll.locator()
	var logged, here, hashed int
	// Each file's last version, the log's "# file" lines sorted on file:
	// memory does not grow with the log.
	err := rewritelog.Versions(context.Background(), r.wd.File(workdir.LogFile), r.sorter(), func(fx rewritelog.Fixity) error {
		logged++
		local, err := loc.Resolve(manifest.EscapeFile(fx.File))
		if err != nil {
			return nil
		}
		fi, err := os.Stat(local.Path())
		if err != nil {
			return nil
		}
		here++
		differs := ""
		if fi.Size() != fx.NewSize {
			differs = fmt.Sprintf("%d bytes, the log's last version of it %d", fi.Size(), fx.NewSize)
		} else if hashed < hashedForIdentity {
			hashed++
			h, err := fixity.HashFile(local.Path(), fixity.Like(fx.NewSum)...)
			if err != nil {
				return &checkError{err}
			}
			if !h.Matches(fx.NewSum) {
				differs = fmt.Sprintf("%s, the log's last version of it %s", h.Like(fx.NewSum), fx.NewSum)
			}
		}
		if differs != "" {
			return &checkError{fmt.Errorf("the work directory %s is of the job on %s: its rewrite log names %s, which in %s is another file (%s); give this collection its own --work-dir",
				r.wd.Path, strings.Join(before, ", "), fx.File, strings.Join(r.opt.Collections, ", "), differs)}
		}
		return nil
	})
	var check *checkError
	switch {
	case errors.As(err, &check):
		return check.err
	case err != nil:
		return fmt.Errorf("the work directory %s was of the job on %s, and its rewrite log cannot be read to tell whether it describes %s: %w",
			r.wd.Path, strings.Join(before, ", "), strings.Join(r.opt.Collections, ", "), err)
	}
	if logged > 0 && here == 0 {
		return fmt.Errorf("the work directory %s is of the job on %s: its rewrite log names %d files, none of them in %s; give this collection its own --work-dir",
			r.wd.Path, strings.Join(before, ", "), logged, strings.Join(r.opt.Collections, ", "))
	}
	return nil
}

// checkError is an error of the check of a file, not of the log's reading.
type checkError struct{ err error }

func (e *checkError) Error() string { return e.err.Error() }

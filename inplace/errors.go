package inplace

import (
	"errors"
	"fmt"
)

// RefusedError says why a file is left untouched: a line of the manifest
// does not describe the record at its offset (a stale or lying manifest),
// the original it names cannot be used, or the file could not be replaced
// safely. The run goes on with the other files.
type RefusedError struct {
	File   string
	Offset int64 // -1 when the refusal is about the whole file
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s: left untouched: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: offset %d: left untouched: %v", e.File, e.Offset, e.Err)
}
func (e *RefusedError) Unwrap() error { return e.Err }

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

// ErrReplacedMeanwhile refuses a file that another process replaced
// (renamed another file over its name) while its new version was made:
// the new version, made from the old file, would take the other file's
// place, and it would be lost.
var ErrReplacedMeanwhile = errors.New("another file was put under its name (renamed over it) while its new version was made")

// ErrChangedMeanwhile is a file whose size or modification time changed
// while its new version was made (bytes appended by a writer, or a
// rewrite of it under another name): the new version, made from what it
// was, would lose the change.
var ErrChangedMeanwhile = errors.New("the file changed while its new version was made")

// stuckError is a file whose new version was exchanged with it and found
// wrong (Why), whose exchange back then failed (Err): the run stops, for
// the operator to see which file the name holds. Old is where the file
// that the name held before is.
type stuckError struct {
	File     string
	Why, Err error
	Old      string
}

func (e *stuckError) Error() string {
	return fmt.Sprintf("%s: its new version took its name and then had to give it back (%v), which failed: %v; the file the name held is %s", e.File, e.Why, e.Err, e.Old)
}

func (e *stuckError) Unwrap() error { return e.Err }

// IsStuck reports whether err is a replacement that could not be undone:
// which version the name holds is not what the caller meant, and the
// other is under a temporary name that err names. The run must stop
// there, for the operator to look, rather than go on and count the file
// as left untouched.
func IsStuck(err error) bool {
	var s *stuckError
	return errors.As(err, &s)
}

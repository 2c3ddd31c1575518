package inplace

import (
	"errors"
	"fmt"
)

// ErrOpenForWriting refuses a file that another process has open for
// writing, or opened for writing while its new version was being made: a
// writer goes on writing to the file it opened, and once a new version is
// renamed over it, what it writes lands in the old version, which no name
// leads to any more, and is lost (wget writes a WARC under its final
// name). The file is left untouched; a later run, once the writer has
// closed it, rewrites it. See writerGuard (lease_linux.go) for how it is
// found and where it cannot be.
var ErrOpenForWriting = errors.New("another process has the file open for writing")

// openForWritingError is ErrOpenForWriting with what is known of it (by
// whom, when), "" for nothing.
func openForWritingError(detail string) error {
	if detail != "" {
		detail = " (" + detail + ")"
	}
	return fmt.Errorf("%w%s: a crawler still writing it? Run again once it has closed the file", ErrOpenForWriting, detail)
}

package rewritelog

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The log is appended to and never shortened, so a log with fewer bytes
// than it once had has lost entries: a cut at a line boundary reads as a
// whole log, and undo would take what is left for every revisit there is.
// The writer keeps the log's size, each time it leaves the log whole, in
// a file beside it (EndFile), and every reader checks the log against it.

// EndFile is the file beside the log that holds its size when it was last
// left whole.
func EndFile(log string) string { return log + ".size" }

// endWidth is the width of the size in EndFile: it is written in place,
// always the same number of bytes, in one write.
const endWidth = 20

// ShortError is a log with fewer bytes than when it was last left whole.
type ShortError struct {
	Log        string
	Size, Want int64
}

func (e *ShortError) Error() string {
	return fmt.Sprintf("%s has %d bytes, and had %d when it was last left whole (%s): entries are lost; restore it from a copy (undo --all restores every revisit whose original is found, whoever wrote it)",
		e.Log, e.Size, e.Want, EndFile(e.Log))
}

// ReadEnd returns the size EndFile records for the log, and false if there
// is none (a log written before it was kept).
func ReadEnd(log string) (int64, bool, error) {
	data, err := os.ReadFile(EndFile(log))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if len(data) == 0 {
		// Made and not yet written: a writer killed between creating the
		// file and its first write (WriteEnd writes in place), which
		// recorded no size yet, as if there were no file.
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%s: %q is not the size of the log", EndFile(log), data)
	}
	return n, true, nil
}

// CheckEnd returns a *ShortError if the log, size bytes long, is shorter
// than EndFile records.
func CheckEnd(log string, size int64) error {
	want, ok, err := ReadEnd(log)
	if err != nil || !ok {
		return err
	}
	if size < want {
		return &ShortError{Log: log, Size: size, Want: want}
	}
	return nil
}

// WriteEnd records size as the log's size, durably. The file is written in
// place: a crash leaves the old size or the new one, both no larger than
// the log (the log is synced before).
func WriteEnd(log string, size int64) error {
	f, err := os.OpenFile(EndFile(log), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(fmt.Appendf(nil, "%0*d\n", endWidth, size), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", EndFile(log), err)
	}
	return nil
}

package workdir

import (
	"io"
	"os"

	"warcdedup/internal/progress"
)

// RunLogFile is the work directory's run log (RunLog) as a run or an
// undo holds it open: every line its display shows, and the details it
// logs only, go to the log too, appended after the earlier runs' and
// undos', from OpenRunLog to Close.
type RunLogFile struct {
	show *progress.Display
	f    *os.File
}

// OpenRunLog opens the run log for appending and sends show's lines to
// it; show nil is a display to nowhere (the log still gets them).
func (d *Dir) OpenRunLog(show *progress.Display) (*RunLogFile, error) {
	f, err := os.OpenFile(d.File(RunLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if show == nil {
		show = progress.NewPlain(io.Discard, "warcdedup")
	}
	show.Tee(f)
	return &RunLogFile{show: show, f: f}, nil
}

// Display is the display whose lines go to the log.
func (l *RunLogFile) Display() *progress.Display { return l.show }

// Close stops the display's lines going to the log, which a display
// outliving the run (the command's, shared by its runs) would otherwise
// write to a closed file, and closes the log. A nil RunLogFile (the log
// was never opened) has nothing to close.
func (l *RunLogFile) Close() error {
	if l == nil {
		return nil
	}
	l.show.Tee(nil)
	return l.f.Close()
}

package undo

import (
	"context"
	"fmt"
	"os"

	"warcdedup/dedup"
	"warcdedup/internal/progress"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// updateCDX brings the indexes undo --cdx names up to date with the
// undo: the restored records' lines become full records' lines again
// (read from the restored files where the index has only the revisit's).
// from is the log's size when the undo began, -1 for its size now (an
// undo that had nothing to restore).
func updateCDX(ctx context.Context, wd *workdir.Dir, indexes, collections []string, from int64, show *progress.Display, res *Result) error {
	if from < 0 {
		from = 0
		if fi, err := os.Stat(wd.File(workdir.LogFile)); err == nil {
			from = fi.Size()
		}
	}
	u, err := dedup.UpdateCDXSince(ctx, wd, indexes, collections, from, show)
	if err != nil {
		return err
	}
	if u.Refused > 0 {
		res.Exit = max(res.Exit, 1)
		res.ExitReason = append(res.ExitReason, fmt.Sprintf("%d indexes left untouched (%s problems; see %s)", u.Refused, progress.Count(u.Problems), workdir.RunLog))
		res.ExitReason = append(res.ExitReason, stage.First(u.Reasons, 5)...)
	}
	return nil
}

package workdir

import (
	"context"
	"path/filepath"

	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
)

// Sort sorts the work file from into the work file to (which appears
// only when complete) with s and the sort command, shown on show as a
// step "sort TO": the sorts of run and undo.
func (d *Dir) Sort(ctx context.Context, show *progress.Display, s syssort.Sorter, from, to, command string) error {
	st := show.Start("sort "+filepath.Base(to), "files", 1)
	err := s.Sort(ctx, command, []string{d.File(from)}, d.File(to))
	st.End(err, "")
	return err
}

package restore

import (
	"warcdedup/rewritelog"
)

// EachLogged reads the log sorted on file (rewritelog.SortByFile) a file
// at a time and calls each, in the byte order of the escaped names, with
// every file in which the log has revisits no run undid (as Files says of
// its group) and the file's entries: a merge join's first pass, which
// holds one file's entries, not the log's.
func EachLogged(g *rewritelog.Grouped, each func(file string, m *rewritelog.Moves) error) error {
	b, err := g.Open()
	if err != nil {
		return err
	}
	defer b.Close()
	for b.Next() {
		left, err := Files(b.Moves())
		if err != nil {
			return err
		}
		if len(left) == 0 {
			continue
		}
		if err := each(b.File(), b.Moves()); err != nil {
			return err
		}
	}
	return b.Close()
}

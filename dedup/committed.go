package dedup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"warcdedup/crawlindex"
	"warcdedup/internal/fspath"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// CheckCommittedCrawls cross-checks the index's registry with the work
// directories of the runs that committed to it where run --index keeps
// them (INDEX/work/NAME): a run whose state says it committed its crawl
// to this index, while the registry neither holds the crawl nor says it
// was removed, is a commit the index lost: a generation set back (a
// snapshot or an old generation restored) with the later ones gone. The
// index's own records (crawlindex's commits/) tell that from the first
// commit of this warcdedup on; the work directories tell it for an index
// an earlier one wrote. Each such crawl is a problem of a
// *crawlindex.DamageError, which every command that changes the index
// (run --index, index remove) refuses and index verify reports.
func CheckCommittedCrawls(ix *crawlindex.Index) error {
	top := filepath.Join(ix.Dir, "work")
	dirs, err := os.ReadDir(top)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var problems []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		wd := filepath.Join(top, d.Name())
		st, err := readStateFile(filepath.Join(wd, workdir.StateFile))
		if err != nil || st.Params.DryRun || st.Params.Crawl == "" || !st.done(stage.CommitName) {
			continue // no run's, or not one whose commit stage ended
		}
		if index, err := fspath.Abs(st.Params.Index); err != nil || index != ix.Dir {
			continue
		}
		k := st.Params.Crawl
		if ix.Registry.Crawl(k) != nil || ix.Registry.RemovedCrawl(k) != nil || !reportedCommitted(wd, k) {
			continue
		}
		problems = append(problems, fmt.Sprintf("crawl %s was committed by the run of %s (its state says so), but the index's generation %d neither holds it nor says it was removed: the index was set back or lost its latest generations and forgot crawl %s (whose revisits may need crawls it would let be removed); restore the index's later generations and CURRENT naming the latest from a backup; until then no command changes the index",
			k, wd, ix.Registry.Generation, k))
	}
	if len(problems) > 0 {
		return &crawlindex.DamageError{Dir: ix.Dir, Problems: problems}
	}
	return nil
}

// reportedCommitted reports whether the run's report in the work
// directory wd lists crawl k as committed: its commit stage ends without
// committing when the crawl's files changed under the run (the next run
// commits it), and writes the report with the index's crawls only once
// the crawl is committed.
func reportedCommitted(wd, k string) bool {
	rep, err := stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
	if err != nil {
		return false
	}
	for _, c := range rep.Crawls {
		if c.Name == k && c.Committed {
			return true
		}
	}
	return false
}

package dedup

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"warcdedup/stage"
	"warcdedup/workdir"
)

// consumed are the intermediate work files a run removes once no stage
// it may still run (or run again on resume) reads them, by the stage
// whose completion makes them so. Removed files are recorded in
// state.json first (State.Removed), so that a resumed run finds the
// stage that left them done without them.
//
// The manifest by digest (and its slice, and its join with an index) is
// read by the resolution only: once resolve is recorded done, it goes.
// The numbered manifest, the same by file and the facts by file are read
// by the rewrite, verify (with an index) and the account, which every
// run does again: they go when the job is complete ("" below), after
// which an unchanged collection has nothing to do and a changed one is
// a new job that makes them again. A dry run never completes: it keeps
// them, for the run that follows it (and assess --sample reads them).
//
// The manifest after (the collection as the job left it) is read by
// verify, the account's dependencies and a crawl's commit, all stages
// of the job: it goes when the job is complete too. Its lines stay in
// the hash cache (cache/*.lines, each file's as the hash again stage
// listed it), which the next run's hash and undo read, so that they are
// kept once (twice, they cost 54 bytes a record more at 1 KB records).
//
// So do the hash stage's listing before (before.manifest) and its facts
// (facts.manifest), and the list of the revisits written (saved.tsv and
// the collision pass's files): the sorts by digest and by file, the
// rewrite, verify and the account read them, stages of the job; nothing
// after the job does (show, check and undo read the rewrite log, the
// cache and their own listings; the next run lists the collection again
// through the cache, whose entries keep each file's facts; each run's
// report keeps its figures). What they said stays elsewhere: a file the
// job did not replace is listed in the cache as it was, and a replaced
// one's every revisit is in the rewrite log with its place and length
// before and after and its digest (saved.tsv is the log's entries of
// this job, less their digests and references). Kept, they cost 70
// bytes a record at 1 KB records (before.manifest 50, saved.tsv 14,
// facts.manifest 6), a third of the work directory.
//
// With a crawl index, the index's originals of the crawl's digests are
// read by the join only (into joined.manifest), and go with it; the
// committed originals the resolution kept (verify's and the account's)
// and the crawl's originals after the run (the commit's) go when the
// job is complete: the index holds what the commit took of them.
//
// A job complete with its records behind (a damaged rewrite log) keeps
// them all, for the next run's account.
var consumed = map[string][]string{
	stage.ResolveName: {workdir.ByDigestFile, workdir.SliceFile, workdir.JoinedFile, workdir.IndexOriginalsFile},
	"": {workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile, workdir.AfterFile,
		workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile, workdir.MemberLinesDir,
		workdir.ApartFile, workdir.CollideFile, workdir.CollideOrigins, workdir.CollideByFile,
		workdir.SavedCollisionsFile, workdir.ApartAgainFile,
		workdir.ResolvedOriginalsFile, workdir.CrawlOriginalsFile, workdir.CrawlOriginalsByDigest},
}

// removeConsumed removes the work files consumed once the stage named
// is done ("" for the job complete), unless the run keeps its work
// files (--keep-work). It records them as removed in state.json before
// removing them: a run killed between the two leaves a file recorded
// removed that is there, which the next run on the complete job
// removes (finishRemoval).
func (r *run) removeConsumed(done string) error {
	gone := r.recordConsumed(done)
	if len(gone) == 0 {
		return nil
	}
	if err := writeState(r.wd, r.state); err != nil {
		return err
	}
	return r.removeFiles(gone)
}

// recordConsumed adds to the state, not yet written, the work files
// consumed once the stage named is done that are there (none with
// --keep-work), and returns them.
func (r *run) recordConsumed(done string) []string {
	if r.opt.KeepWork {
		return nil
	}
	var gone []string
	for _, name := range consumed[done] {
		if _, err := os.Stat(r.wd.File(name)); err == nil {
			gone = append(gone, name)
		}
	}
	for _, name := range gone {
		if !slices.Contains(r.state.Removed, name) {
			r.state.Removed = append(r.state.Removed, name)
		}
	}
	return gone
}

// removeFiles removes work files, those already gone aside.
func (r *run) removeFiles(names []string) error {
	for _, name := range names {
		remove := os.Remove
		if name == workdir.MemberLinesDir {
			remove = os.RemoveAll // a directory of the WACZ members' index lines
		}
		if err := remove(r.wd.File(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// finishRemoval removes, for a run that finds the job complete and
// nothing to do, the work files state.json records as removed that are
// still there: a run killed after recording them and before removing
// them left them, and no stage of the job will run again to remove them
// (each job's intermediates are a share of the collection's size). A
// job complete with its records behind has recorded none of the job's
// (its next run's account reads them); --keep-work keeps them.
func (r *run) finishRemoval() error {
	if r.opt.KeepWork || r.state.RecordsBehind {
		return nil
	}
	return r.removeFiles(r.state.Removed)
}

// outputPresent reports whether a stage's output is in the work
// directory, or was removed as consumed by a later stage done.
func (r *run) outputPresent(name string) bool {
	if _, err := os.Stat(r.wd.File(name)); err == nil {
		return true
	}
	return slices.Contains(r.state.Removed, name)
}

package dedup

import (
	"slices"

	"warcdedup/collock"
	"warcdedup/crawlindex"
	"warcdedup/migrate"
)

// lockCollection locks the directories a run may rewrite files in
// (package collock), before it touches any: the collections' trees, its
// CDX indexes' directories and, for a crawl resuming a rewrite, those of
// the committed crawls' packages it had found it must refresh (its
// refile note: the recovery of the packages may finish them); with
// --convert-arc, lockKeepARC adds the keep directory's. A dry run
// rewrites nothing and takes none.
func (r *run) lockCollection() (*collock.Set, error) {
	if r.opt.DryRun {
		return nil, nil
	}
	files := slices.Clone(r.opt.CDX)
	if r.crawl != nil {
		noted, err := crawlindex.NotedPaths(r.wd.File(crawlRefileNote))
		if err != nil {
			return nil, err
		}
		files = append(files, noted...)
	}
	return collock.LockJob(r.opt.Collections, files)
}

// lockKeepARC adds to the run's locks, with --convert-arc, the --keep-arc
// directory the conversion moves the ARC files into (made first if need
// be: migrate.LockKeepDir): another job keeping ARC files there, or
// working on files there, refuses the run before it converts any. The
// directories beneath it are locked as the conversion first uses them.
// Called once the job has held the run to the keep directory it recorded
// (checkKeepARC), so that a run refused for another keep directory makes
// none.
func (r *run) lockKeepARC() error {
	if r.locks == nil || !r.opt.ConvertARC || r.opt.KeepARC == "" {
		return nil
	}
	return migrate.LockKeepDir(r.locks, r.opt.KeepARC, r.opt.Collections[0])
}

// lockRequirers locks the directories of the packages outside the
// collections whose requires entries the rewrite pr refreshes, before
// it rewrites anything.
func (r *run) lockRequirers(requirers []string) error {
	if r.locks == nil || len(requirers) == 0 {
		return nil
	}
	return r.locks.Add(collock.Dirs(requirers)...)
}

// lockCrawls locks the trees of the committed crawls named (index remove
// --restore rewrites the files of the crawls depending on the one
// removed). A crawl served over HTTP is not rewritten here.
func lockCrawls(ix *crawlindex.Index, names []string) (*collock.Set, error) {
	var roots []string
	for _, n := range names {
		if k := ix.Registry.Crawl(n); k != nil && !isURLLocation(k.Location) {
			roots = append(roots, k.Location)
		}
	}
	return collock.LockJob(roots, nil)
}

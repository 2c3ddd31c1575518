package dedup

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
)

// RemoveOptions say which crawl to take out of an index, and how.
type RemoveOptions struct {
	Index, Crawl string
	// Restore first re-points or restores every revisit of other crawls
	// that needs the crawl; Force removes it though they do.
	Restore, Force bool
	Jobs           int
	Display        *progress.Display
}

// RemoveResult is what a removal did.
type RemoveResult struct {
	Crawl      string
	Size       int64    // of its files: what may now be deleted
	Dependents []string // crawls whose revisits needed it
	Repointed  int64    // revisits now referring to another committed copy
	Restored   int64    // revisits made whole records again
	Refused    int64    // files left untouched (then the crawl stays)
	Removed    bool
	// Already: the crawl was removed by an earlier removal, at RemovedAt;
	// Dependents are the crawls whose revisits still need it then (it was
	// removed with --force).
	Already   bool
	RemovedAt time.Time
	Took      time.Duration
}

// RemoveCrawl takes a crawl out of the index (see warcdedup index remove).
// The index must verify first, its partitions read whole (a removal with
// a partition missing would miss revisits to restore and copies to
// re-point to); a run that holds the crawl (crawlindex.RegisterRun)
// refuses it. A crawl removed already is not removed again.
func RemoveCrawl(ctx context.Context, opt RemoveOptions) (*RemoveResult, error) {
	start := time.Now()
	ix, err := crawlindex.Open(opt.Index)
	if err != nil {
		return nil, err
	}
	if err := CheckCommittedCrawls(ix); err != nil {
		return nil, err
	}
	k := ix.Registry.Crawl(opt.Crawl)
	if k == nil {
		if gone := ix.Registry.RemovedCrawl(opt.Crawl); gone != nil {
			res := &RemoveResult{Crawl: gone.Name, Size: gone.Size, Removed: true, Already: true, RemovedAt: gone.Removed}
			for _, d := range ix.Registry.Dependents(gone.Name) {
				res.Dependents = append(res.Dependents, d.Name)
			}
			return res, nil
		}
		return nil, fmt.Errorf("crawl %s is not committed to the index %s", opt.Crawl, ix.Dir)
	}
	var problems []string
	if _, err := ix.VerifyIndex(func(p string) { problems = append(problems, p) }); err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &crawlindex.DamageError{Dir: ix.Dir, Problems: problems}
	}
	res := &RemoveResult{Crawl: k.Name, Size: k.Size}
	for _, d := range ix.Registry.Dependents(k.Name) {
		res.Dependents = append(res.Dependents, d.Name)
	}
	ch := crawlindex.Change{Remove: k.Name, Force: opt.Force}
	var reg *crawlindex.Registration
	if opt.Restore && len(res.Dependents) > 0 {
		// Their directories locked first: a removal refused there
		// leaves no record of one in progress.
		locks, err := lockCrawls(ix, res.Dependents) // lock.go
		if err != nil {
			return res, err
		}
		defer locks.Release()
		// The dependents' files are rewritten: no run may join them
		// meanwhile, nor hold the crawl.
		if reg, err = crawlindex.RegisterRemove(ix.Dir, k.Name, res.Dependents); err != nil {
			return res, err
		}
		defer reg.Release()
		clearRemoveTemp(ix.Dir)
		r, err := newRestoreDependents(ix, k, opt)
		if err != nil {
			return res, err
		}
		defer r.close()
		if err := r.run(ctx, res); err != nil {
			return res, err
		}
		if res.Refused > 0 {
			if res.Repointed+res.Restored == 0 {
				reg.Drop()
			}
			res.Took = time.Since(start)
			return res, nil
		}
		if ch, err = r.change(ctx); err != nil {
			return res, err
		}
		// No revisit needs the crawl any more; the change says so of
		// every dependent (its Update).
		ch.Force = true
	}
	if _, err := crawlindex.Commit(ix.Dir, ch); err != nil {
		if reg != nil && res.Repointed+res.Restored == 0 {
			reg.Drop()
		}
		return res, err
	}
	if reg != nil {
		reg.Drop()
	}
	res.Removed = true
	res.Took = time.Since(start)
	return res, nil
}

// clearRemoveTemp removes the temporary directories of removals killed
// before removals made theirs as crawlindex.TempDirs (".tmp-remove-*"),
// which a commit's cleanup removes now; the removal's registration must
// be held.
func clearRemoveTemp(index string) {
	left, _ := filepath.Glob(filepath.Join(index, atomicfile.TempPrefix+"remove-*"))
	for _, d := range left {
		os.RemoveAll(d)
	}
}

// RemoveSummary writes what a removal did.
func RemoveSummary(w io.Writer, res *RemoveResult) {
	if res.Already {
		fmt.Fprintf(w, "crawl %s was removed from the index already (%s)", res.Crawl, res.RemovedAt.Local().Format(time.DateTime))
		if len(res.Dependents) > 0 {
			fmt.Fprintf(w, ", with --force: revisits of %s still need its files, keep them\n", strings.Join(res.Dependents, ", "))
		} else {
			fmt.Fprintf(w, ": its %s of files may be deleted\n", progress.Bytes(res.Size))
		}
		return
	}
	if res.Repointed+res.Restored > 0 || res.Refused > 0 {
		fmt.Fprintf(w, "revisits that needed crawl %s: %s re-pointed to another committed copy, %s made whole records again; %s files refused\n",
			res.Crawl, progress.Count(res.Repointed), progress.Count(res.Restored), progress.Count(res.Refused))
	}
	if res.Removed {
		fmt.Fprintf(w, "crawl %s removed from the index: its %s of files may be deleted\n", res.Crawl, progress.Bytes(res.Size))
	} else {
		fmt.Fprintf(w, "crawl %s stays in the index\n", res.Crawl)
	}
}

// ImportOptions say what warcdedup index import commits, and how.
type ImportOptions struct {
	Index, Crawl string
	Location     string   // the crawl's files: a directory or a base URL
	CDX          []string // the CDX/CDXJ indexes of the crawl
	SortMemory   string   // sort's buffer (sort -S); "" for syssort.DefaultMemory (64M)
	// SkipDamaged leaves damaged index lines out, counted, instead of
	// refusing the import at the first.
	SkipDamaged bool
	Warn        func(error) // each line left out, and why
}

// ImportCrawl commits a crawl to the index from CDX/CDXJ indexes (see
// crawlindex.Import), sorting with the system sort in the index's
// directory.
func ImportCrawl(ctx context.Context, opt ImportOptions) (crawlindex.ImportStats, error) {
	if err := os.MkdirAll(opt.Index, 0o755); err != nil {
		return crawlindex.ImportStats{}, err
	}
	td, err := crawlindex.NewTempDir(opt.Index, "import")
	if err != nil {
		return crawlindex.ImportStats{}, err
	}
	defer td.Remove()
	tmp := td.Path
	sortIn := func(ctx context.Context, in, out string) error {
		return syssort.Sorter{TempDir: tmp, Memory: opt.SortMemory, Compress: syssort.Compressor()}.Sort(ctx, manifest.ByDigest.Command, []string{in}, out)
	}
	if isPackageImport(opt.CDX) { // WACZ files or multi-WACZ JSON (waczimport.go)
		return importPackages(ctx, opt, crawlindex.ImportOptions{TempDir: tmp, Report: opt.Warn, SkipDamaged: opt.SkipDamaged, Sort: sortIn})
	}
	location := opt.Location
	if !isURLLocation(location) {
		if location, err = fspath.Abs(location); err != nil {
			return crawlindex.ImportStats{}, err
		}
	}
	var readers []io.Reader
	for _, name := range opt.CDX {
		f, err := os.Open(name)
		if err != nil {
			return crawlindex.ImportStats{}, err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	iopt := crawlindex.ImportOptions{Crawl: opt.Crawl, Location: location, TempDir: tmp, Report: opt.Warn, SkipDamaged: opt.SkipDamaged, Sort: sortIn}
	_, st, err := crawlindex.Import(ctx, opt.Index, iopt, readers, opt.CDX)
	return st, err
}

func isURLLocation(s string) bool {
	return len(s) > 7 && (s[:7] == "http://" || len(s) > 8 && s[:8] == "https://")
}

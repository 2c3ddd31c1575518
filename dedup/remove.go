package dedup

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
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
	Took       time.Duration
}

// RemoveCrawl takes a crawl out of the index (see warcdedup index remove).
func RemoveCrawl(ctx context.Context, opt RemoveOptions) (*RemoveResult, error) {
	start := time.Now()
	ix, err := crawlindex.Open(opt.Index)
	if err != nil {
		return nil, err
	}
	k := ix.Registry.Crawl(opt.Crawl)
	if k == nil {
		return nil, fmt.Errorf("crawl %s is not committed to the index %s", opt.Crawl, ix.Dir)
	}
	res := &RemoveResult{Crawl: k.Name, Size: k.Size}
	for _, d := range ix.Registry.Dependents(k.Name) {
		res.Dependents = append(res.Dependents, d.Name)
	}
	ch := crawlindex.Change{Remove: k.Name, Force: opt.Force}
	if opt.Restore && len(res.Dependents) > 0 {
		r, err := newRestoreDependents(ix, k, opt)
		if err != nil {
			return res, err
		}
		defer r.close()
		if err := r.run(ctx, res); err != nil {
			return res, err
		}
		if res.Refused > 0 {
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
		return res, err
	}
	res.Removed = true
	res.Took = time.Since(start)
	return res, nil
}

// RemoveSummary writes what a removal did.
func RemoveSummary(w io.Writer, res *RemoveResult) {
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

// ImportCrawl commits a crawl to the index from CDX/CDXJ indexes (see
// crawlindex.Import), sorting with the system sort in the index's
// directory with a buffer of sortMemory (sort -S; "" for sort's default).
func ImportCrawl(ctx context.Context, index, crawl, location string, cdx []string, sortMemory string, warn func(error)) (crawlindex.ImportStats, error) {
	if err := os.MkdirAll(index, 0o755); err != nil {
		return crawlindex.ImportStats{}, err
	}
	tmp, err := os.MkdirTemp(index, ".tmp-import-")
	if err != nil {
		return crawlindex.ImportStats{}, err
	}
	defer os.RemoveAll(tmp)
	if !isURLLocation(location) {
		if location, err = filepath.Abs(location); err != nil {
			return crawlindex.ImportStats{}, err
		}
	}
	var readers []io.Reader
	for _, name := range cdx {
		f, err := os.Open(name)
		if err != nil {
			return crawlindex.ImportStats{}, err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	opt := crawlindex.ImportOptions{Crawl: crawl, Location: location, TempDir: tmp, Report: warn,
		Sort: func(ctx context.Context, in, out string) error {
			return Sort(ctx, SortOptions{TempDir: tmp, Memory: sortMemory}, manifest.ByDigest.Command, in, out)
		}}
	_, st, err := crawlindex.Import(ctx, index, opt, readers, cdx)
	return st, err
}

func isURLLocation(s string) bool {
	return len(s) > 7 && (s[:7] == "http://" || len(s) > 8 && s[:8] == "https://")
}

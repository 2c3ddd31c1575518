package stage

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/internal/progress"
)

// The rewrite of WACZ packages needs room beside them that a rewrite of
// WARC files does not: every member with duplicates is staged (copied
// out) before the first is rewritten, and stays, as its new version,
// until its package is written anew after the whole rewrite; each
// package is then written beside itself before it replaces the old one.
// A disk that fills on the way stops the job with every file whole (a
// rerun finishes it), but only after the copies and part of the rewrite
// were made for nothing. So Prepare first compares what the job will
// need on each file system with what is free there, and refuses the job,
// before anything is copied, when it cannot fit.

// spaceNeed is what the staging and rebuild of packages take on one file
// system.
type spaceNeed struct {
	dir          string // a directory on it, named in the refusal
	free         int64  // free for this process, with the copies a stopped attempt left
	memberSizes  []int64
	packageSizes map[string]int64 // by path, of the packages written anew
}

// staged is what the copies of the members take, all there at once.
func (n *spaceNeed) staged() int64 { return sumLargest(n.memberSizes, len(n.memberSizes)) }

// inFlight is what is written beside them at once: up to twice jobs new
// versions of members (the rewrite's, as for WARC files) and jobs
// packages written anew, the largest.
func (n *spaceNeed) inFlight(jobs int) int64 {
	return sumLargest(n.memberSizes, 2*jobs) + sumLargest(slices.Collect(maps.Values(n.packageSizes)), jobs)
}

// fileSystem says which file system a directory is on and how many bytes
// are free there for this process; ok is false where that is not known.
type fileSystem func(dir string) (id uint64, free int64, ok bool)

// checkSpace refuses the staging of the members names when a file system
// they would be staged on has not the room the job needs there (a dry
// run's: the copies alone, in TempDir). It says what it needs and what
// is free, and what to do.
func (pr *PackageRewrite) checkSpace(names []string) error {
	needs, err := pr.spaceNeeds(names)
	if err != nil {
		return err
	}
	jobs := max(pr.Jobs, 1)
	var short []string
	for _, id := range slices.Sorted(maps.Keys(needs)) {
		n := needs[id]
		staged, inFlight := n.staged(), int64(0)
		if !pr.DryRun {
			inFlight = n.inFlight(jobs)
		}
		if need := staged + inFlight; need > n.free {
			short = append(short, fmt.Sprintf("%s needs about %s (copies of %d members with duplicates, %s; new versions and packages written at once, %s), %s free",
				n.dir, progress.Bytes(need), len(n.memberSizes), progress.Bytes(staged), progress.Bytes(inFlight), progress.Bytes(n.free)))
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("%w: the WACZ packages' members with duplicates are copied beside their packages, and the packages written anew beside themselves, before any is replaced: %s; nothing was copied or rewritten: free space there, or run the crawls one at a time (run --index: a committed crawl is never rewritten)",
			ErrNoSpace, strings.Join(short, "; "))
	}
	return nil
}

// spaceNeeds gathers, by file system, the members names would be staged
// on it and their packages; file systems whose free space is not known
// are left out.
func (pr *PackageRewrite) spaceNeeds(names []string) (map[uint64]*spaceNeed, error) {
	fs := pr.fileSystem
	if fs == nil {
		fs = freeSpace
	}
	needs := map[uint64]*spaceNeed{}
	for _, name := range names {
		m := pr.Members[name]
		dir := filepath.Dir(m.Path)
		if pr.DryRun {
			dir = pr.TempDir
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
		id, free, ok := fs(dir)
		if !ok {
			continue
		}
		n := needs[id]
		if n == nil {
			n = &spaceNeed{dir: dir, free: free, packageSizes: map[string]int64{}}
			needs[id] = n
		}
		n.memberSizes = append(n.memberSizes, m.Size)
		if fi, err := os.Stat(filepath.Join(dir, stageName(m))); err == nil {
			n.free += fi.Size() // a stopped attempt's copy, made again
		}
		if fi, err := os.Stat(m.Path); err == nil {
			n.packageSizes[m.Path] = fi.Size()
		}
	}
	return needs, nil
}

// ErrNoSpace is a job refused before it began for want of free space.
var ErrNoSpace = errors.New("not enough free space")

// sumLargest is the sum of the n largest of sizes.
func sumLargest(sizes []int64, n int) int64 {
	s := slices.Clone(sizes)
	slices.Sort(s)
	var sum int64
	for _, v := range s[max(len(s)-n, 0):] {
		sum += v
	}
	return sum
}

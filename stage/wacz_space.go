package stage

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/internal/progress"
	"warcdedup/wacz"
)

// The rewrite of WACZ packages needs room beside them that a rewrite of
// WARC files does not: a run writes each member's new version beside
// its package (the member read where it lies), where it stays until its
// package is written anew after the whole rewrite; each package is then
// written beside itself before it replaces the old one. A disk that
// fills on the way stops the job with every file whole (a rerun
// finishes it), but only after part of the rewrite was made for
// nothing. So Prepare first compares what the job will need on each
// file system with what is free there, and refuses the job, before
// anything is written, when it cannot fit. A dry run writes nothing
// there and is not checked. An undo stages the members it
// restores beside their packages (PrepareMembers) and needs more: each
// restored version is larger than the member copied, by the bytes the
// revisits it gives back saved (the rewrite log's), and so is each
// package written anew around them.

// spaceJob is what a check of free space counts differently for a run's
// rewrite and for an undo.
type spaceJob struct {
	// grown are the bytes each member's new version has more than the
	// member now, by name (an undo's: see PrepareMembers); nil for a
	// run, whose new versions are no larger.
	grown map[string]int64
	// packagesAtOnce is how many packages are written anew at once.
	packagesAtOnce int
	// packagesAfter is set when the packages are written anew only once
	// every new version is (an undo's FinishUndo follows the restore):
	// the larger of the two is written beside the copies, not both; but
	// what the files and packages replaced before grew stays
	// (spaceNeed.grown).
	packagesAfter bool
	// filesGrown are the bytes the files that are no members grow by
	// once restored, on each file system (rewrittenFiles.grown).
	filesGrown map[uint64]int64
	// inPlace is set when no member is copied (a run's rewrite): each
	// member's new version, no larger than the member, is what the
	// members' sizes count, not a copy beside which it is written.
	inPlace bool
	// staging, members, versions and refused are the refusal's words
	// for what the members' sizes count ("copies of", "new versions
	// of"), the members, what is written beside them (new versions and
	// packages), and what it says after the file systems short of room.
	staging, members, versions, refused string
}

// runSpace is a run's rewrite: Jobs packages written at once (Finish).
// A dry run writes nothing beside the packages, and is not checked.
func (pr *PackageRewrite) runSpace() spaceJob {
	return spaceJob{packagesAtOnce: max(pr.Jobs, 1), inPlace: true, staging: "new versions of", members: "members with duplicates, at most their size", versions: "packages written at once and WARC files' new versions",
		refused: "the WACZ packages' members with duplicates get their new versions beside their packages, which stay until the packages are written anew beside themselves, before any is replaced: %s; nothing was rewritten: free space there, or run the crawls one at a time (run --index: a committed crawl is never rewritten)"}
}

// undoSpace is an undo's (PrepareMembers): the members grow by grown,
// and the packages are written anew one at a time (FinishUndo).
func undoSpace(grown map[string]int64, filesGrown map[uint64]int64) spaceJob {
	return spaceJob{grown: grown, filesGrown: filesGrown, packagesAtOnce: 1, packagesAfter: true, staging: "copies of", members: "members to restore, at their restored size", versions: "restored versions written at once or, after them, a package written anew, with what the files and packages replaced before grew",
		refused: "the WACZ packages' members an undo restores are copied beside their packages and restored there, larger by what the rewrite log says their revisits saved, and the packages written anew beside themselves, before any is replaced: %s; nothing was copied or restored: free space there, or undo the packages a few at a time (undo PATH naming them)"}
}

// spaceNeed is what the staging and rebuild of packages take on one file
// system.
type spaceNeed struct {
	dir  string // a directory on it, named in the refusal
	free int64  // free for this process, with the copies a stopped attempt left
	// memberSizes are the sizes of the copies of the members staged
	// there, at the largest they grow to: a run's the members' (its new
	// versions are no larger), an undo's their restored versions'.
	memberSizes []int64
	// fileSizes are the largest WARC files rewritten there
	// (rewrittenFiles), packageSizes the packages written anew there
	// (by path, at their size once written anew), requirer the largest
	// package RefreshRequirers may write anew there.
	fileSizes    []int64
	packageSizes map[string]int64
	requirer     int64
	// filesGrown and membersGrown are what the files that are no members
	// (once each is replaced by its restored version) and the packages
	// (once each is written anew around its restored members) take there
	// more than now, for good: an undo's (spaceJob.packagesAfter).
	filesGrown, membersGrown int64
}

// staged is what the copies of the members take, all there at once (or
// a run's new versions of them, at most their size).
func (n *spaceNeed) staged() int64 { return sumLargest(n.memberSizes, len(n.memberSizes)) }

// inFlight is what is written beside the copies at once: up to twice
// jobs new versions of members or WARC files (the rewrite's, as for WARC
// files alone; a restore's the same; of WARC files alone when the
// members' new versions are what staged counts: job.inPlace) and
// packagesAtOnce packages written anew, the largest (only the larger of
// the two when the packages are written after the versions:
// job.packagesAfter); or, after the rebuild, one requirer written anew.
func (n *spaceNeed) inFlight(jobs int, job spaceJob) int64 {
	versions := slices.Clone(n.fileSizes)
	if !job.inPlace {
		versions = append(versions, n.memberSizes...)
	}
	packages := slices.Collect(maps.Values(n.packageSizes))
	v, p := sumLargest(versions, 2*jobs), sumLargest(packages, job.packagesAtOnce)
	if job.packagesAfter {
		// The restore: the files restored before stay larger; then the
		// packages, one at a time, each staying larger once written,
		// then the requirers.
		return max(n.filesGrown+v, n.filesGrown+n.membersGrown+max(p, n.requirer))
	}
	return max(v+p, n.requirer)
}

// fileSystem says which file system a directory is on and how many bytes
// are free there for this process; ok is false where that is not known.
type fileSystem func(dir string) (id uint64, free int64, ok bool)

// fileSystemOf is pr.fileSystem, freeSpace when none is set.
func (pr *PackageRewrite) fileSystemOf() fileSystem {
	if pr.fileSystem != nil {
		return pr.fileSystem
	}
	return freeSpace
}

// checkSpace refuses the staging of the members names for a run's
// rewrite (runSpace) when a file system they would be staged on has not
// the room the job needs there: see checkSpaceOf.
func (pr *PackageRewrite) checkSpace(names []string, files map[uint64][]int64) error {
	return pr.checkSpaceOf(pr.runSpace(), names, files)
}

// checkSpaceOf refuses the staging of the members names when a file
// system they would be staged on has not the room job needs there: the
// copies and what is written
// beside them at once (spaceNeed.inFlight; files: the largest WARC files
// rewritten, by file system, rewrittenFiles). It says what it needs and
// what is free, and what to do.
func (pr *PackageRewrite) checkSpaceOf(job spaceJob, names []string, files map[uint64][]int64) error {
	needs, err := pr.spaceNeeds(names, job.grown)
	if err != nil {
		return err
	}
	for id, sizes := range files {
		if n := needs[id]; n != nil {
			n.fileSizes = sizes
		}
	}
	for id, grown := range job.filesGrown {
		if n := needs[id]; n != nil {
			n.filesGrown = grown
		}
	}
	pr.addRequirers(needs, names)
	jobs := max(pr.Jobs, 1)
	var short []string
	for _, id := range slices.Sorted(maps.Keys(needs)) {
		n := needs[id]
		staged, inFlight := n.staged(), n.inFlight(jobs, job)
		if need := staged + inFlight; need > n.free {
			short = append(short, fmt.Sprintf("%s needs about %s (%s %d %s, %s; %s, %s), %s free",
				n.dir, progress.Bytes(need), job.staging, len(n.memberSizes), job.members, progress.Bytes(staged), job.versions, progress.Bytes(inFlight), progress.Bytes(n.free)))
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("%w: "+job.refused, ErrNoSpace, strings.Join(short, "; "))
	}
	return nil
}

// spaceNeeds gathers, by file system, the members names would be staged
// on it and their packages, each grown by grown (by member name; nil:
// none grows); file systems whose free space is not known are left out.
func (pr *PackageRewrite) spaceNeeds(names []string, grown map[string]int64) (map[uint64]*spaceNeed, error) {
	fs := pr.fileSystemOf()
	needs := map[uint64]*spaceNeed{}
	for _, name := range names {
		m := pr.Members[name]
		dir := filepath.Dir(m.Path)
		id, free, ok := fs(dir)
		if !ok {
			continue
		}
		n := needs[id]
		if n == nil {
			n = &spaceNeed{dir: dir, free: free, packageSizes: map[string]int64{}}
			needs[id] = n
		}
		g := max(grown[name], 0)
		n.memberSizes = append(n.memberSizes, m.Size+g)
		n.membersGrown += g
		if fi, err := os.Stat(filepath.Join(dir, stageName(m))); err == nil {
			// A stopped attempt's copy, made again (free as many bytes
			// as an int64 holds stays so).
			n.free += min(fi.Size(), math.MaxInt64-n.free)
		}
		if _, ok := n.packageSizes[m.Path]; !ok {
			if fi, err := os.Stat(m.Path); err == nil {
				n.packageSizes[m.Path] = fi.Size()
			}
		}
		if _, ok := n.packageSizes[m.Path]; ok {
			n.packageSizes[m.Path] += g
		}
	}
	return needs, nil
}

// addRequirers gives each need the largest of the collection's packages
// that the refresh after the rebuild writes anew there, one at a time,
// the copies of packages not rebuilt still there (RefreshRequirers): those
// requiring one written anew (of the members names, or Changed).
func (pr *PackageRewrite) addRequirers(needs map[uint64]*spaceNeed, names []string) {
	fs := pr.fileSystemOf()
	changed := map[string]bool{}
	for _, name := range names {
		changed[filepath.Base(pr.Members[name].Path)] = true
	}
	for _, pkg := range pr.Changed {
		changed[filepath.Base(pkg)] = true
	}
	for path, size := range pr.refreshedPackages(changed) {
		if id, _, ok := fs(filepath.Dir(path)); ok && needs[id] != nil {
			needs[id].requirer = max(needs[id].requirer, size)
		}
	}
}

// rewrittenFiles are the largest files with duplicates that are no
// package's members (WARC and ARC files), on each file system: the
// rewrite writes their new versions beside them while the staged copies
// are there (a collection of packages and WARC files), Jobs at a time.
// Taken from the rewrite's input, on file: each file's lines one after
// the other, so that it keeps no more than the few largest.
type rewrittenFiles struct {
	pr      *PackageRewrite
	fs      fileSystem
	keep    int    // how many of the largest, on each file system
	last    string // the file of the line before
	largest map[uint64][]int64
	// grown is what the files take more once restored, all of them, on
	// each file system (addGrown: an undo's).
	grown map[uint64]int64
	// dir is the directory of the file before, on file system id (ok:
	// known): files of a directory come one after the other.
	dir string
	id  uint64
	ok  bool
}

func (pr *PackageRewrite) newRewrittenFiles() *rewrittenFiles {
	return &rewrittenFiles{pr: pr, fs: pr.fileSystemOf(), keep: 2 * max(pr.Jobs, 1), largest: map[uint64][]int64{}, grown: map[uint64]int64{}}
}

// add takes the file of a duplicate's line (manifest field 1), once.
// A file not found is not counted (the rewrite names it), nor any in a
// dry run, which writes no new version.
func (f *rewrittenFiles) add(field string) { f.addGrown(field, 0) }

// addGrown is add of a file whose new version has grown bytes more than
// it (an undo's restored version).
func (f *rewrittenFiles) addGrown(field string, grown int64) {
	if field == f.last || f.pr.Files == nil || f.pr.DryRun {
		return
	}
	f.last = field
	path, err := f.pr.Files(field)
	if err != nil {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if dir := filepath.Dir(path); dir != f.dir {
		f.dir = dir
		f.id, _, f.ok = f.fs(dir)
	}
	if !f.ok {
		return
	}
	f.grown[f.id] += max(grown, 0)
	s := append(f.largest[f.id], fi.Size()+max(grown, 0))
	slices.Sort(s)
	f.largest[f.id] = s[max(len(s)-f.keep, 0):]
}

// refreshedPackages are the sizes, by path, of the collection's packages
// that RefreshRequirers may write anew after the rebuild: those that
// require by SHA-256 or size a package of changed (file names: the
// packages the job writes anew), or one of those in turn. A package that
// cannot be read is not counted (the refresh names it).
func (pr *PackageRewrite) refreshedPackages(changed map[string]bool) map[string]int64 {
	requires := map[string][]string{} // path -> the file names it requires by hash
	for _, m := range pr.Members {
		if _, ok := requires[m.Path]; ok {
			continue
		}
		requires[m.Path] = nil
		p, err := wacz.Open(m.Path)
		if err != nil {
			continue
		}
		names, err := p.Datapackage.RequiredByHash()
		p.Close()
		if err == nil {
			requires[m.Path] = names
		}
	}
	out := map[string]int64{}
	for grown := true; grown; {
		grown = false
		for path, names := range requires {
			if _, ok := out[path]; ok || !slices.ContainsFunc(names, func(n string) bool { return changed[n] }) {
				continue
			}
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			out[path] = fi.Size()
			changed[filepath.Base(path)] = true
			grown = true
		}
	}
	return out
}

// CheckRequirersSpace refuses the rewrite, before anything is rewritten,
// when a package outside the collection that it writes anew after the
// rebuild (Requirers: a committed crawl's, known only once the members
// are staged) has not the room beside it: each is written anew there,
// one at a time, and the free space now, with the copies made, is no
// more than the rebuild leaves. The caller discards the copies.
func (pr *PackageRewrite) CheckRequirersSpace() error {
	fs := pr.fileSystemOf()
	type need struct {
		path       string
		size, free int64
	}
	largest := map[uint64]*need{}
	for _, p := range pr.Requirers {
		fi, err := os.Stat(p)
		if err != nil {
			continue // the refresh names it
		}
		id, free, ok := fs(filepath.Dir(p))
		if !ok {
			continue
		}
		if n := largest[id]; n == nil || fi.Size() > n.size {
			largest[id] = &need{path: p, size: fi.Size(), free: free}
		}
	}
	var short []string
	for _, id := range slices.Sorted(maps.Keys(largest)) {
		if n := largest[id]; n.size > n.free {
			short = append(short, fmt.Sprintf("%s needs about %s beside it, %s free", n.path, progress.Bytes(n.size), progress.Bytes(n.free)))
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("%w: the committed crawls' packages that require the packages this run rewrites are written anew beside themselves after the rewrite, one at a time: %s; the copies made were removed, nothing was rewritten: free space there",
			ErrNoSpace, strings.Join(short, "; "))
	}
	return nil
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

package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/fixity"
	"warcdedup/record"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// A rewrite or undo stopped between replacing a staged member (logged)
// and renaming its package's new version over the package leaves the
// package as it was and the member's new version staged beside it,
// while the rewrite log names the new version. The next run or undo
// finishes that package first (Recover): nothing was lost, but the log
// must describe the package before more work reads it.

// Pending is a staged member found beside its package.
type Pending struct {
	Path    string // the package file
	Package string // its name in the collection
	Member  string // "archive/..."
	Staged  string // the staged copy
}

// FindPending lists the staged members left beside the packages under
// roots.
func FindPending(roots []string) ([]Pending, error) {
	var out []Pending
	for _, root := range roots {
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			return nil, err
		}
		err = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n, ok := strings.CutSuffix(d.Name(), stagedSuffix)
			if !ok || !strings.HasPrefix(n, ".") {
				return nil
			}
			base, member, ok := wacz.SplitName(n[1:])
			if !ok {
				return nil
			}
			if member, err = url.PathUnescape(member); err != nil {
				return nil
			}
			pkg := filepath.Join(filepath.Dir(path), base)
			rel, err := filepath.Rel(real, pkg)
			if err != nil {
				return err
			}
			out = append(out, Pending{Path: pkg, Package: filepath.ToSlash(rel), Member: member, Staged: path})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Recover writes anew each package with pending members whose staged copy
// is the version the rewrite log's last replacement of the member left
// (version gives it, by member name) while the package still holds the
// version that replacement was made from, its requires entries naming
// the packages the revisits of those members have their originals in
// (recoveredRequires), then the packages recovered that require one
// another brought up to date (RefreshRequirers). A package holding
// another version (someone changed it since) is refused, its staged
// copies kept. Other staged copies are stale, and removed.
//
// The entries cannot be left to the job resumed after it: its rewrite
// finds those members rewritten already (logged), so it writes the
// package no more, and a later job's numbering sees revisits, which make
// no dependency; without them here the package would end requiring
// nothing while its revisits send ReplayWeb.page to other packages.
func (pr *PackageRewrite) Recover(pending []Pending, version func(name string) (rewritelog.Fixity, bool), now time.Time) (PackageResult, error) {
	var res PackageResult
	pr.paths = map[string]string{}
	byPackage := map[string][]Pending{}
	for _, p := range pending {
		byPackage[p.Package] = append(byPackage[p.Package], p)
		pr.paths[p.Package] = p.Path
	}
	var recovered []string
	for _, pkg := range slices.Sorted(maps.Keys(byPackage)) {
		replace := map[string]string{}
		old, err := wacz.Open(pr.paths[pkg])
		for _, p := range byPackage[pkg] {
			if err != nil {
				break
			}
			fx, ok := version(wacz.JoinName(pkg, p.Member))
			if !ok {
				continue
			}
			staged, serr := fixity.HashFile(p.Staged, fixity.Like(fx.NewSum)...)
			if serr != nil || !staged.Is(fx.NewSize, fx.NewSum) {
				continue
			}
			// The package's member must be the version the logged
			// replacement was made from (or already the one it made):
			// any other is someone's, which the staged version would
			// replace, and lose.
			m := old.Member(p.Member)
			if m == nil {
				err = fmt.Errorf("%s: it no longer has the member (changed since the rewrite log's last replacement of it); to keep it as it is, remove %s", p.Member, p.Staged)
				break
			}
			sec, serr := old.Section(m)
			if serr != nil {
				err = serr
				break
			}
			h := fixity.New(fixity.Like(fx.NewSum, fx.OldSum)...)
			if _, err = io.Copy(h, sec); err != nil {
				break
			}
			if h.Matches(fx.NewSum) {
				continue // the package has it already
			}
			if h.Size() != fx.OldSize || !h.Matches(fx.OldSum) {
				err = fmt.Errorf("%s: changed since the rewrite log's last replacement of it: it has %d bytes, %s, neither the version that replacement was made from (%d bytes, %s) nor the one it made; to keep it as it is, remove %s",
					p.Member, h.Size(), h.Like(fx.OldSum), fx.OldSize, fx.OldSum, p.Staged)
				break
			}
			replace[p.Member] = p.Staged
		}
		if old != nil {
			old.Close()
		}
		if err == nil && len(replace) > 0 {
			var out *rebuilt
			if out, err = pr.recoverRebuild(pkg, replace, now); err == nil {
				recovered = append(recovered, pkg)
				res.Rebuilt++
				if out.info != nil {
					res.checked(pr.paths[pkg], out.info)
				}
			}
		}
		if err != nil {
			// Left for the operator: the staged copies are the members'
			// logged versions.
			res.Refused = append(res.Refused, fmt.Sprintf("%s: its members' logged versions are staged beside it and it could not be written anew around them: %v", pkg, err))
			continue
		}
		for _, p := range byPackage[pkg] {
			os.Remove(p.Staged)
		}
	}
	if len(recovered) > 0 {
		// A package recovered after one that requires it changed its
		// hash: the entry written before is brought up to date (those
		// of the packages not recovered are the resumed job's Changed).
		rr, err := pr.RefreshRequirers(context.Background(), recovered, now)
		for path, fi := range rr.Checked {
			res.checked(path, fi)
		}
		res.Rebuilt += rr.Rebuilt
		res.Requires += rr.Requires
		res.Refused = append(res.Refused, rr.Refused...)
		if err != nil {
			return res, err
		}
		res.Refused = append(res.Refused, pr.unsoundRequires(res.Checked)...)
	}
	return res, pr.stuckPut()
}

// recoverRebuild writes the package pkg anew around its members' logged
// versions (replace): with the metadata it had before the first run
// when they give it back bit for bit (an undo stopped before the rename:
// the next undo finds nothing left to restore in its members, so this is
// the only time its datapackage.json, digest file and ZIP times can come
// back), else with its own, requires entries kept (no SHA-256 of it is
// needed), and the members back as they were with their times then.
func (pr *PackageRewrite) recoverRebuild(pkg string, replace map[string]string, now time.Time) (*rebuilt, error) {
	saved, times, err := SavedMetadata(pr.MetadataDir, pkg)
	if err != nil {
		return nil, err
	}
	if saved != nil {
		out, err := pr.rebuild(pkg, replace, now, func(b *wacz.Rebuild) { b.Metadata, b.Times, b.NoPackageSHA256 = saved, times, true })
		if err == nil {
			return out, ForgetMetadata(pr.MetadataDir, pkg)
		}
		if !errors.Is(err, wacz.ErrHash) {
			return nil, err
		}
	}
	back, err := timesOfMembersBack(saved, times, replace)
	if err != nil {
		return nil, err
	}
	reqs, err := pr.recoveredRequires(pkg, replace)
	if err != nil {
		return nil, err
	}
	return pr.rebuild(pkg, replace, now, func(b *wacz.Rebuild) {
		b.Times, b.NoPackageSHA256 = back, true
		b.Require = reqs
	})
}

// recoveredRequires are the requires entries the package pkg needs for
// the members' versions it is written anew around (replace): one for
// each other package that a revisit in them names in
// WARC-Refers-To-Container, with its SHA-256 and size as it now is
// beside pkg (ReplayWeb.page loads it from there). A package not beside
// it (a committed crawl's, elsewhere) is named alone: an entry the
// package already has for it keeps its hash and size (Require).
//
// The truth is the revisits themselves, read from the staged copies:
// the numbered manifest that made them may be gone or of another job,
// and the rewrite log names the members' versions, not the packages
// their revisits point at. Only the members put in are read (the
// package's other members kept their entries, which Require keeps),
// record by record, holding the names alone.
func (pr *PackageRewrite) recoveredRequires(pkg string, replace map[string]string) ([]wacz.Requirement, error) {
	names := map[string]bool{}
	for _, staged := range slices.Sorted(maps.Values(replace)) {
		if err := containersIn(staged, names); err != nil {
			return nil, err
		}
	}
	path := pr.paths[pkg]
	delete(names, filepath.Base(path))
	var reqs []wacz.Requirement
	for _, name := range slices.Sorted(maps.Keys(names)) {
		beside := filepath.Join(filepath.Dir(path), name)
		sum, size, err := fileSHA256(beside)
		switch {
		case err == nil:
			reqs = append(reqs, wacz.RequirementOf(beside, sum, size, ""))
		case errors.Is(err, fs.ErrNotExist):
			r, err := pr.committedRequirement(name)
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, r)
		default:
			return nil, fmt.Errorf("the package its revisits refer to, %s: %w", beside, err)
		}
	}
	return reqs, nil
}

// committedRequirement is the requires entry for the package of that
// file name not beside the one finished (PackageNamed): its SHA-256,
// size and crawlId, the name alone if it is not found.
func (pr *PackageRewrite) committedRequirement(name string) (wacz.Requirement, error) {
	if pr.PackageNamed == nil {
		return wacz.Requirement{Filename: name, Size: -1}, nil
	}
	e, ok := pr.PackageNamed(name)
	if !ok {
		return wacz.Requirement{Filename: name, Size: -1}, nil
	}
	sum, size, ok := e.recorded()
	if !ok {
		var err error
		if sum, size, err = fileSHA256(e.Path); err != nil {
			return wacz.Requirement{}, fmt.Errorf("the package its revisits refer to, %s: %w", e.Path, err)
		}
	}
	return wacz.RequirementOf(e.Path, sum, size, e.CrawlID), nil
}

// containersIn adds to names the packages (file names) that the revisits
// of the WARC file at path name in WARC-Refers-To-Container.
func containersIn(path string, names map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := record.NewReader(f, path)
	if err != nil {
		return err
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Type != "revisit" {
			continue
		}
		if name, ok := wacz.ParseContainerURI(rec.Header.Get("WARC-Refers-To-Container")); ok {
			names[name] = true
		}
	}
}

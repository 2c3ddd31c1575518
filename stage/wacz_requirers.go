package stage

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"warcdedup/wacz"
)

// A package that another package requires (relation.requires with its
// SHA-256 and size) changes when a later run rewrites it, or an undo
// gives it back, while the requirer itself has nothing to rewrite: its
// entry would go stale. RefreshRequirers writes each such requirer of
// the collection anew with the entry brought up to date (its members
// copied byte for byte, datapackage.json and its digest file rewritten,
// checked, renamed over it, as any rebuild), and so on for the
// requirers of those, each package once: a package whose entries go
// stale again (packages requiring each other by hash, from runs apart)
// gets the entries of that cycle without hash and size, as Browsertrix
// names a WACZ it has not hashed. A requirer that cannot be written anew
// (signed, without Unsign; changed meanwhile) is named in the result's
// Refused, its entry left stale.

// RefreshRequirers brings up to date the requires entries of the
// collection's packages (pr.Members) that name a package of changed
// (package names), or one it writes anew itself. It returns what it
// wrote.
func (pr *PackageRewrite) RefreshRequirers(ctx context.Context, changed []string, now time.Time) (PackageResult, error) {
	var res PackageResult
	if pr.paths == nil {
		pr.paths = map[string]string{}
	}
	for _, m := range pr.Members {
		if pr.paths[m.Package] == "" {
			pr.paths[m.Package] = m.Path
		}
	}
	for _, p := range pr.Requirers {
		if pr.paths[p] == "" {
			pr.paths[p] = p // outside the collection: named by its path
		}
	}
	byBase := map[string][]string{} // file name -> the packages of that name
	for _, pkg := range slices.Sorted(maps.Keys(pr.paths)) {
		b := filepath.Base(pr.paths[pkg])
		byBase[b] = append(byBase[b], pkg)
	}
	refreshed := map[string]int{}
	todo := slices.Clone(changed)
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		names := map[string]bool{}
		for _, pkg := range todo {
			if path := pr.paths[pkg]; path != "" {
				names[filepath.Base(path)] = true
			}
		}
		todo = nil
		for _, pkg := range slices.Sorted(maps.Keys(pr.paths)) {
			reqs, err := pr.staleEntries(pkg, names, byBase)
			if err != nil {
				msg := fmt.Sprintf("%s: its relation.requires could not be brought up to date: %v", pkg, err)
				res.Refused = append(res.Refused, msg)
				pr.Messages.Error(errors.New(msg))
				continue
			}
			if len(reqs) == 0 {
				continue
			}
			var drop []string
			if refreshed[pkg] > 0 {
				// Stale again: packages requiring each other by hash
				// (a third time too, by another entry: never left
				// stale). Named alone, they cannot go stale any more,
				// so that each rewrite after the first names more
				// entries alone, and the refresh ends.
				for i := range reqs {
					drop = append(drop, reqs[i].Filename)
					reqs[i] = wacz.Requirement{Filename: reqs[i].Filename, Size: -1, CrawlID: reqs[i].CrawlID}
				}
			}
			rep, err := pr.rebuild(pkg, nil, now, func(b *wacz.Rebuild) {
				// Every member copied byte for byte, the index too.
				b.FreshIndex = false
				b.Unrequire, b.Require = drop, reqs
			})
			if err != nil {
				msg := fmt.Sprintf("%s: relation.requires left naming %d packages as they were before this job changed them: %v", pkg, len(reqs), err)
				res.Refused = append(res.Refused, msg)
				pr.Messages.Error(errors.New(msg))
				continue
			}
			if rep.sha256 != nil {
				pr.wrote(pkg, wacz.RequirementOf(pr.paths[pkg], rep.sha256, rep.size, ""))
			} else {
				delete(pr.written, pkg)
			}
			if rep.info != nil {
				// As trusted as any package written here (rebuild):
				// a later rewrite of the job (the collisions') may
				// rebuild it from this version.
				if res.Checked == nil {
					res.Checked = map[string]os.FileInfo{}
				}
				res.Checked[pr.paths[pkg]] = rep.info
			}
			refreshed[pkg]++
			res.Rebuilt++
			res.Requires += len(reqs)
			todo = append(todo, pkg)
		}
	}
	return res, nil
}

// staleEntries are the requires entries of pkg that name a package of
// names (by file name) with a SHA-256 or size other than the package's
// now, brought up to date.
func (pr *PackageRewrite) staleEntries(pkg string, names map[string]bool, byBase map[string][]string) ([]wacz.Requirement, error) {
	p, err := wacz.Open(pr.paths[pkg])
	if err != nil {
		return nil, err
	}
	reqs, err := p.Datapackage.Requires()
	p.Close()
	if err != nil {
		return nil, err
	}
	var out []wacz.Requirement
	for _, r := range reqs {
		if !names[r.Filename] || r.Hash == "" && r.Size < 0 {
			continue
		}
		of := byBase[r.Filename]
		if len(of) != 1 || of[0] == pkg {
			continue // not one package of the collection: not ours to say
		}
		var sum []byte
		var size int64
		if w, ok := pr.written[of[0]]; ok {
			sum, _ = hex.DecodeString(w.Hash)
			size = w.Size
		} else {
			if sum, size, err = fileSHA256(pr.paths[of[0]]); err != nil {
				return nil, err
			}
			pr.wrote(of[0], wacz.RequirementOf(pr.paths[of[0]], sum, size, ""))
		}
		h := hex.EncodeToString(sum)
		if (r.Hash == "" || r.Hash == h) && (r.Size < 0 || r.Size == size) {
			continue
		}
		n := wacz.RequirementOf(pr.paths[of[0]], sum, size, r.CrawlID)
		if r.Hash == "" {
			n.Hash = "" // the entry had a size alone: it keeps its form
		}
		if r.Size < 0 {
			n.Size = -1
		}
		out = append(out, n)
	}
	return out, nil
}

// StagedPackages are the paths of the packages whose members Prepare
// staged: those the rewrite may write anew.
func (pr *PackageRewrite) StagedPackages() []string {
	var out []string
	for pkg := range pr.packages {
		out = append(out, pr.paths[pkg])
	}
	slices.Sort(out)
	return out
}

// wrote notes the SHA-256 and size of a package as it now is.
func (pr *PackageRewrite) wrote(pkg string, r wacz.Requirement) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.written == nil {
		pr.written = map[string]wacz.Requirement{}
	}
	pr.written[pkg] = r
}

// unsoundRequires checks the relation.requires of each package written
// anew here (checked, by path) against what the job knows, and says
// what is wrong with each: a package it makes require another (pr.deps)
// that does not name it, or an entry naming a package written here with
// a SHA-256 or size other than it was written with. It reads each
// package's datapackage.json alone, never a package named by another's
// entry (their sums are those this job took as it wrote them): cheap
// next to the rebuilds themselves, so a job that leaves a package's
// requires incomplete or stale is never reported done.
func (pr *PackageRewrite) unsoundRequires(checked map[string]os.FileInfo) []string {
	pr.mu.Lock()
	byBase := map[string]wacz.Requirement{} // package file name -> as written here
	for _, w := range pr.written {
		byBase[w.Filename] = w
	}
	pr.mu.Unlock()
	pathOf := map[string]string{} // package -> path, one per package
	for _, m := range pr.Members {
		pathOf[m.Package] = m.Path
	}
	maps.Copy(pathOf, pr.paths)
	needs := map[string][]string{} // requirer -> the file names it must name
	for d := range pr.deps {
		path := pathOf[d[1]]
		if e, ok := pr.externals[d[1]]; ok {
			path = e.Path
		}
		if path != "" && d[0] != d[1] {
			needs[d[0]] = append(needs[d[0]], filepath.Base(path))
		}
	}
	var out []string
	for _, pkg := range slices.Sorted(maps.Keys(pr.paths)) {
		path := pr.paths[pkg]
		if checked[path] == nil {
			continue
		}
		p, err := wacz.Open(path)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: its relation.requires could not be checked: %v", pkg, err))
			continue
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: its relation.requires could not be checked: %v", pkg, err))
			continue
		}
		named := map[string]bool{}
		for _, r := range reqs {
			named[r.Filename] = true
			w, ok := byBase[r.Filename]
			if !ok || w.Hash == "" || r.Hash == "" && r.Size < 0 {
				continue
			}
			if r.Hash != "" && r.Hash != w.Hash || r.Size >= 0 && r.Size != w.Size {
				out = append(out, fmt.Sprintf("%s: relation.requires names %s with %d bytes, %s, but this job wrote it with %d bytes, %s", pkg, r.Filename, r.Size, r.Hash, w.Size, w.Hash))
			}
		}
		for _, n := range slices.Sorted(slices.Values(needs[pkg])) {
			if !named[n] {
				out = append(out, fmt.Sprintf("%s: relation.requires does not name %s, which holds originals of its revisits", pkg, n))
			}
		}
	}
	return out
}

package undo

import (
	"context"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/dedup"
	"warcdedup/stage"
	"warcdedup/wacz"
)

// refreshRequirers brings up to date the requires entries of the
// collection's packages that name a package the rewrite log names by a
// SHA-256 or size it no longer has (stage's RefreshRequirers reads only
// the packages such an entry names). finishWACZ does so for the packages
// it writes anew; an undo killed after putting a package's new version
// in place and before that, or before the package was put in place (the
// next undo finishing it from its staged members, dedup's
// RecoverPackages), left the entries stale, and the next undo, with
// nothing left to restore, exited 0.
func (u *undo) refreshRequirers(ctx context.Context) error {
	pr := u.coll.PackageRewrite(u.show)
	if pr == nil {
		// No listing yet (nothing was left to restore): the packages
		// as they are now.
		if _, err := u.coll.Collect(); err != nil {
			return err
		}
		if pr = u.coll.PackageRewrite(u.show); pr == nil {
			return nil
		}
	}
	logged, err := dedup.RewrittenPackages(u.wd)
	if err != nil || len(logged) == 0 {
		return err
	}
	rr, err := pr.RefreshRequirers(ctx, slices.Sorted(maps.Keys(logged)), time.Now().UTC())
	u.res.Unrestored = append(u.res.Unrestored, rr.Refused...)
	if rr.Rebuilt > 0 {
		u.show.Note("warcdedup: %d WACZ packages written anew to bring their relation.requires up to date", rr.Rebuilt)
	}
	if err != nil {
		return err
	}
	// The packages the runs wrote anew for their requires entries alone
	// (their members never changed), and those given back while a
	// package they require was not, get the metadata they had before
	// the first run once it is right again: they are then the files
	// they were, signature included. For a crawl, the first run of its
	// work directory: a package of an earlier crawl that it wrote anew
	// got its metadata after that crawl's run kept there.
	if u.coll.NamedPackages() && u.crawl == nil {
		// The packages of their directory outside the job that require
		// some by hash (as stageWACZ finds them): a package given back
		// changes its hash for them too. Those of a crawl's directory
		// are brought up to date by refreshOutside, which records the
		// committed crawls' ones again in the index.
		err := u.coll.EachOutside(func(path string, reqs []wacz.Requirement) {
			if slices.ContainsFunc(reqs, func(r wacz.Requirement) bool { return r.Hash != "" || r.Size >= 0 }) {
				pr.Requirers = append(pr.Requirers, path)
			}
		})
		if err != nil {
			return err
		}
	}
	// A crawl's packages given back keep their metadata until
	// refreshOutside brought up to date the committed crawls' packages
	// that require them by hash (forgetGivenBack): it finds them by it,
	// as the rewrite log never names such a package, also when this
	// undo is stopped before and run again.
	if u.crawl != nil {
		// Their entries naming a committed crawl's package (in a
		// directory of its own) are judged against it.
		if pr.PackageNamed, err = u.committedPackages(); err != nil {
			return err
		}
	}
	gb, back, err := pr.GiveBackMetadata(ctx, time.Now().UTC(), u.crawl != nil)
	if u.crawl != nil {
		u.givenBack = back
	}
	u.res.Unrestored = append(u.res.Unrestored, gb.Refused...)
	if gb.Rebuilt > 0 {
		u.show.Note("warcdedup: %d WACZ packages written anew with the metadata they had before the first run, or their relation.requires brought up to date after", gb.Rebuilt)
	}
	return err
}

// forgetGivenBack forgets the metadata kept of the packages of a crawl
// (and of committed crawls' packages) that this undo gave back, or found
// given back, once the packages that may require them were brought up to
// date with nothing left stale or refused: an undo run again after one
// that was finds them again, as given back, and brings their requirers
// up to date then.
func (u *undo) forgetGivenBack() error {
	if len(u.givenBack) == 0 || len(u.res.StaleRequirers) > 0 || len(u.res.Unrestored) > 0 {
		return nil
	}
	dir := dedup.WACZMetadataDir(u.wd)
	for _, pkg := range u.givenBack {
		if err := stage.ForgetMetadata(dir, pkg); err != nil {
			return err
		}
	}
	u.givenBack = nil
	return nil
}

// committedPackages finds the packages of the crawls committed to the
// index of the crawl undone by their file name, as a requires entry
// names them (stage.PackageRewrite.PackageNamed): none when several
// crawls have a package of that name. Crawls served over HTTP are left
// out (refreshOutside warns of them).
func (u *undo) committedPackages() (func(string) (stage.ExternalPackage, bool), error) {
	ix, err := crawlindex.Open(u.crawl.index.Dir)
	if err != nil {
		return nil, err
	}
	byName := map[string][]stage.ExternalPackage{}
	for _, k := range ix.Registry.Crawls {
		if strings.Contains(k.Location, "://") {
			continue
		}
		files, err := ix.Files(k.Name)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if wacz.IsWACZ(f.Name) {
				name := path.Base(f.Name)
				byName[name] = append(byName[name], stage.ExternalPackage{Path: filepath.Join(k.Location, filepath.FromSlash(f.Name)), CrawlID: k.Name})
			}
		}
	}
	return func(name string) (stage.ExternalPackage, bool) {
		if of := byName[name]; len(of) == 1 {
			return of[0], true
		}
		return stage.ExternalPackage{}, false
	}, nil
}

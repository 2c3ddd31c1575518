package undo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/collock"
	"warcdedup/crawlindex"
	"warcdedup/dedup"
	"warcdedup/fixity"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// Requirers outside the job (issue 23). A package the job rewrote may be
// required (relation.requires: its file name, SHA-256 and size) by
// packages outside the job's collection: with a crawl index, packages of
// committed crawls (an earlier crawl's, made to require it by a job on
// their directory), and, for a job on packages named, the other packages
// of their directory. When the undo gives the package back its hash and
// size change, and such an entry would be left stale, which breaks
// replay (Browsertrix crawler #1004). The undo brings them up to date:
// each such requirer is written anew (every member copied byte for
// byte, datapackage.json and its digest file alone changed, checked,
// renamed over it: stage.PackageRewrite.RefreshRequirers), and so on
// for the packages requiring those. A requirer that is a committed
// crawl's file is recorded again in the index (crawlindex.Change.Refile:
// its size, SHA-256 and stamp; its originals stay, as the rewrite moves
// none of its WARC members, which is checked); one whose metadata comes
// before a WARC member (a rewrite would move its records) is not
// touched and named, exit status 1.
//
// The refresh is resumable: the requirers of index crawls are noted in
// the work directory (waczRefileFile, a crawlindex refile note, as a
// crawl's run writes it) with where their members are before any is
// written anew; an undo stopped after writing one anew and before the
// index recorded it records it when run again, once it finds every
// member where it was (crawlindex.Refiles). Before the index records
// them, the multi-WACZ JSON of their crawls, where the index has one
// (crawlindex.Index.UpdateSources), gets their hash and size now, as a
// run's commit does. Then the undo checks that every requirer names
// each of the job's packages with its hash and size now, and that the
// index records each refreshed requirer as it is.

// waczRefileFile is the work directory's crawlindex refile note of the
// index crawls' packages the undo may write anew for their requires
// entries (the run's crawlRefileNote: an undo of a stopped run records
// those it wrote anew).
const waczRefileFile = "wacz-refile.json"

// outsideRequirer is a package outside the job that may require one of
// its packages: the crawl and name it has in the index, if any.
type outsideRequirer struct {
	path, crawl, name string
	recorded          crawlindex.FileInfo // what the index records of it (a crawl's)
}

// jobPackagePaths are the packages (by name in the job, with its
// crawl's prefix) whose members the job's rewrite log names, and those
// whose metadata the work directory keeps (the runs wrote them anew for
// their requires entries alone, which the log never names; the undo
// gives them their metadata back, or brings their entries up to date:
// either changes their hash), and their paths.
func (u *undo) jobPackagePaths() (map[string]string, error) {
	rewritten, err := dedup.RewrittenPackages(u.wd)
	if err != nil {
		return nil, err
	}
	saved, err := stage.SavedPackages(dedup.WACZMetadataDir(u.wd))
	if err != nil {
		return nil, err
	}
	for _, pkg := range saved {
		if !filepath.IsAbs(pkg) {
			// Not a package outside the collection the runs wrote
			// anew, named by its path (a committed crawl's): the
			// refresh finds those among the requirers.
			rewritten[pkg] = true
		}
	}
	prefix := ""
	if u.crawl != nil {
		prefix = u.crawl.name + "/"
	}
	root := u.state.Params.Collections[0]
	out := map[string]string{}
	for name := range rewritten {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		out[name] = filepath.Join(root, filepath.FromSlash(rel))
	}
	return out, nil
}

// outsideRequirers finds the packages outside the job that may require
// one of its packages: the committed crawls' packages (with an index),
// the other packages of the directory (a job on packages named).
func (u *undo) outsideRequirers(mine map[string]bool) ([]outsideRequirer, *crawlindex.Index, error) {
	var out []outsideRequirer
	seen := map[string]bool{}
	add := func(r outsideRequirer) {
		if !mine[r.path] && !seen[r.path] {
			seen[r.path] = true
			out = append(out, r)
		}
	}
	var ix *crawlindex.Index
	if u.crawl != nil {
		var err error
		if ix, err = crawlindex.Open(u.crawl.index.Dir); err != nil {
			return nil, nil, err
		}
		for _, k := range ix.Registry.Crawls {
			if strings.Contains(k.Location, "://") {
				// Served over HTTP: not ours to write, and not read
				// here; the operator is told, since a package there
				// may require one this undo gives back.
				u.show.Print("warcdedup: warning: crawl %s is served over HTTP (%s): its packages were not checked for requires entries naming the packages this undo gives back", k.Name, k.Location)
				continue
			}
			files, err := ix.Files(k.Name)
			if err != nil {
				return nil, nil, err
			}
			for _, f := range files {
				if wacz.IsWACZ(f.Name) {
					add(outsideRequirer{path: filepath.Join(k.Location, filepath.FromSlash(f.Name)), crawl: k.Name, name: f.Name, recorded: f})
				}
			}
		}
	}
	if u.coll.NamedPackages() {
		err := u.coll.EachOutside(func(path string, _ []wacz.Requirement) { add(outsideRequirer{path: path}) })
		if err != nil {
			return nil, nil, err
		}
	}
	return out, ix, nil
}

// outsidePackage is what refreshOutside needs of a package outside the
// job, read once: its requires entries by hash or size, and where its
// WARC members are (placed: why a rewrite would move them, if it would).
type outsidePackage struct {
	byHash []wacz.Requirement
	places []wacz.Place
	placed error
}

// inspect reads the package at path.
func inspect(path string) (*outsidePackage, error) {
	p, err := wacz.Open(path)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	reqs, err := p.Datapackage.Requires()
	if err != nil {
		return nil, err
	}
	o := &outsidePackage{}
	for _, r := range reqs {
		if r.Hash != "" || r.Size >= 0 {
			o.byHash = append(o.byHash, r)
		}
	}
	o.places, o.placed = p.ArchivePlaces()
	return o, nil
}

// crawlOf is " (crawl NAME)" for a package of a committed crawl.
func crawlOf(crawl string) string {
	if crawl == "" {
		return ""
	}
	return " (crawl " + crawl + ")"
}

// requires reports whether the package requires one of names (file
// names) by SHA-256 or size.
func (o *outsidePackage) requires(names map[string]bool) bool {
	return slices.ContainsFunc(o.byHash, func(r wacz.Requirement) bool { return names[r.Filename] })
}

// refreshOutside brings up to date the requires entries of the packages
// outside the job that require one it gave back, records the committed
// crawls' ones again in the index, and checks both. Problems go to
// u.res.StaleRequirers.
func (u *undo) refreshOutside(ctx context.Context) error {
	if u.crawl == nil && !u.coll.NamedPackages() {
		return nil // a directory: every package that may require one is in it
	}
	// A stopped undo's refreshed packages the index does not record yet.
	if err := u.refile(nil); err != nil {
		return err
	}
	jobs, err := u.jobPackagePaths()
	if err != nil || len(jobs) == 0 {
		return err
	}
	r := newOutsideRefresh(jobs)
	if u.crawl != nil {
		// The committed crawls' packages the crawl's run wrote anew for
		// their requires entries alone, their metadata before it kept by
		// path (GiveBackMetadata, in rewriteRequirers): those whose
		// entries it named without hash (packages requiring each other)
		// require none of the job's by hash now, and are given back all
		// the same.
		saved, err := stage.SavedPackages(dedup.WACZMetadataDir(u.wd))
		if err != nil {
			return err
		}
		for _, p := range saved {
			if filepath.IsAbs(p) {
				r.kept[p] = true
			}
		}
	}
	candidates, ix, err := u.outsideRequirers(r.mine())
	if err != nil {
		return err
	}
	for _, c := range candidates {
		if stale := r.consider(c); stale != "" {
			u.res.StaleRequirers = append(u.res.StaleRequirers, stale)
		}
	}
	if len(r.touched) == 0 {
		return nil
	}
	if err := u.locks.Add(collock.Dirs(r.requirers)...); err != nil { // lock.go
		return err
	}
	// Noted before any is written anew: an undo stopped in between
	// records them when run again (refile).
	if len(r.notes) > 0 {
		if err := crawlindex.WriteRefileNote(u.wd.File(waczRefileFile), r.notes); err != nil {
			return err
		}
	}
	if err := u.rewriteRequirers(ctx, r); err != nil {
		return err
	}
	if u.opt.refileStop != nil {
		if err := u.opt.refileStop(); err != nil {
			return err
		}
	}
	if err := u.refile(ix); err != nil {
		return err
	}
	return u.checkOutside(r.jobs, r.requirers, r.touched)
}

// outsideRefresh is what one refresh of the requirers outside the job
// works from: the job's packages, and which outside packages it may
// write anew, found by consider.
type outsideRefresh struct {
	jobs  map[string]string // the job's packages: paths by name
	names map[string]bool   // their file names, as requires entries name them

	// Every outside package that requires any by hash is a requirer the
	// refresh may reach (one requiring a requirer written anew); it
	// writes anew only those whose entries went stale.
	requirers []string
	notes     []crawlindex.RefileEntry // the requirers of index crawls, as they are
	touched   map[string]bool          // the requirers of the job's packages, and those written anew
	// kept are the packages outside the job (paths) whose metadata the
	// work directory keeps: the job's runs wrote them anew.
	kept map[string]bool
}

func newOutsideRefresh(jobs map[string]string) *outsideRefresh {
	r := &outsideRefresh{jobs: jobs, names: map[string]bool{}, touched: map[string]bool{}, kept: map[string]bool{}}
	for _, p := range jobs {
		r.names[filepath.Base(p)] = true
	}
	return r
}

// mine is the job's packages by path: they are not outside it.
func (r *outsideRefresh) mine() map[string]bool {
	m := map[string]bool{}
	for _, p := range r.jobs {
		m[p] = true
	}
	return m
}

// consider reads the outside package c and takes it as a requirer if it
// requires any by hash and may be written anew; a package of an index
// crawl is noted as it is. It returns why c is left stale ("" if it is
// not): one that cannot be read, or cannot be written anew without
// moving its records, is left as it is and named if it may require
// the job's packages.
func (r *outsideRefresh) consider(c outsideRequirer) (stale string) {
	o, err := inspect(c.path)
	if err != nil {
		// It may require one the job gave back: the undo cannot say
		// it is up to date.
		return fmt.Sprintf("%s%s: cannot be read, so whether it requires a package the undo gave back is not known: %v", c.path, crawlOf(c.crawl), err)
	}
	if len(o.byHash) == 0 && !r.kept[c.path] {
		return "" // requires nothing by hash: never stale
	}
	if c.crawl != "" {
		// Changed since the index recorded it (not by a stopped job
		// of this work directory: refile recorded those first), it
		// is left as it is: written anew and recorded again, the
		// index would take its WARC members, wherever they are now,
		// as where its originals are (as a run refuses it).
		if why := crawlindex.ChangedSinceCommit(c.path, c.recorded); why != "" {
			if o.requires(r.names) {
				return fmt.Sprintf("%s (crawl %s): not brought up to date: it %s, and recorded again the index would take its WARC members as where its originals are; warcdedup index verify checks it", c.path, c.crawl, why)
			}
			return ""
		}
		if o.placed != nil {
			if o.requires(r.names) {
				return fmt.Sprintf("%s (crawl %s): not brought up to date: %v", c.path, c.crawl, o.placed)
			}
			return ""
		}
		r.notes = append(r.notes, crawlindex.RefileEntry{Crawl: c.crawl, Name: c.name, Path: c.path, Members: o.places})
	}
	r.requirers = append(r.requirers, c.path)
	if o.requires(r.names) || r.kept[c.path] {
		r.touched[c.path] = true
	}
	return ""
}

// rewriteRequirers writes anew the requirers whose entries for the
// job's packages went stale (and so on for those requiring them),
// keeping in place the members of the index crawls' ones, as the index
// has their records at offsets in them; those checked join r.touched.
func (u *undo) rewriteRequirers(ctx context.Context, r *outsideRefresh) error {
	members := map[string]stage.PackageMember{}
	var changed []string
	for name, path := range r.jobs {
		members[name] = stage.PackageMember{Path: path, Package: name}
		changed = append(changed, name)
	}
	slices.Sort(changed)
	keep := map[string]bool{}
	for _, n := range r.notes {
		keep[n.Path] = true
	}
	pr := &stage.PackageRewrite{Members: members, Requirers: r.requirers, TempDir: u.wd.File(workdir.TmpDir), Software: "warcdedup", Messages: dedup.Messages(u.show), KeepPlaces: keep}
	res, err := pr.RefreshRequirers(ctx, changed, time.Now().UTC())
	u.res.StaleRequirers = append(u.res.StaleRequirers, res.Refused...)
	if err != nil {
		return err
	}
	if res.Rebuilt > 0 {
		u.show.Note("warcdedup: %d WACZ packages outside the job written anew with the requires entries of the packages it gave back (%d entries)", res.Rebuilt, res.Requires)
	}
	for p := range res.Checked {
		r.touched[p] = true
	}
	if u.crawl == nil {
		return nil
	}
	// The committed crawls' packages the crawl's run wrote anew for their
	// requires entries alone get the metadata they had before it, kept
	// by path in its work directory (after their own crawl's run, or an
	// earlier crawl's that wrote them anew), once every entry of it is
	// right again: the files they were then. Their metadata is kept
	// until the index records them and nothing is stale
	// (forgetGivenBack): an undo stopped before gives it back again
	// (found the same) and brings their requirers up to date.
	pr.MetadataDir = dedup.WACZMetadataDir(u.wd)
	if pr.PackageNamed, err = u.committedPackages(); err != nil {
		return err
	}
	gb, back, err := pr.GiveBackMetadata(ctx, time.Now().UTC(), true)
	u.res.Unrestored = append(u.res.Unrestored, gb.Refused...)
	u.givenBack = append(u.givenBack, back...)
	for _, p := range back {
		if filepath.IsAbs(p) {
			r.touched[p] = true
		}
	}
	for p := range gb.Checked {
		r.touched[p] = true
	}
	if gb.Rebuilt > 0 {
		u.show.Note("warcdedup: %d WACZ packages of committed crawls written anew with the metadata they had before the crawl's run, or their relation.requires brought up to date after", gb.Rebuilt)
	}
	return err
}

// refile records again in the index each noted package of a committed
// crawl that was written anew (its stamp is not the index's) with every
// member where it was (crawlindex.Refiles), after bringing up to date
// its hash and size in its crawl's multi-WACZ JSON; then the note goes.
// ix is the index as opened, nil to open it.
func (u *undo) refile(ix *crawlindex.Index) error {
	notes, err := crawlindex.ReadRefileNote(u.wd.File(waczRefileFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if u.crawl == nil {
		return os.Remove(u.wd.File(waczRefileFile))
	}
	if ix == nil {
		if ix, err = crawlindex.Open(u.crawl.index.Dir); err != nil {
			return err
		}
	}
	change, problems, gone, err := crawlindex.Refiles(ix, notes)
	if err != nil {
		return err
	}
	for _, g := range gone {
		u.show.Note("warcdedup: warning: %s", g)
	}
	u.res.StaleRequirers = append(u.res.StaleRequirers, problems...)
	if len(change) > 0 {
		// The crawls' multi-WACZ JSON first: run again after a stop
		// before the commit, it finds them up to date.
		sources, err := ix.UpdateSources(change)
		for _, n := range sources {
			u.show.Note("warcdedup: note: %s", n)
		}
		if err != nil {
			return err
		}
		if u.opt.sourcesStop != nil {
			if err := u.opt.sourcesStop(); err != nil {
				return err
			}
		}
		if _, err := crawlindex.CommitWith(u.crawl.index.Dir, crawlindex.Change{Refile: change}, crawlindex.CommitOptions{NoCompact: true}); err != nil {
			return fmt.Errorf("recording in the index the packages written anew with their requires entries: %w", err)
		}
		n := 0
		for _, files := range change {
			n += len(files)
		}
		u.show.Note("warcdedup: %d packages of committed crawls recorded again in the index %s (their requires entries written anew; their records where they were)", n, u.crawl.index.Dir)
	}
	return os.Remove(u.wd.File(waczRefileFile))
}

// checkOutside checks that every requirer names each of the job's
// packages (jobs: paths by name) it requires with its SHA-256 and size
// now, and that the index records each committed crawl's package as it
// is (those of touched); what is not goes to u.res.StaleRequirers.
func (u *undo) checkOutside(jobs map[string]string, requirers []string, touched map[string]bool) error {
	byBase := map[string]string{}
	for _, p := range jobs {
		byBase[filepath.Base(p)] = p
	}
	now := map[string]wacz.Requirement{}
	for _, path := range requirers {
		p, err := wacz.Open(path)
		if err != nil {
			return err
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			return err
		}
		for _, r := range reqs {
			req, ok := byBase[r.Filename]
			if !ok || r.Hash == "" && r.Size < 0 {
				continue
			}
			cur, ok := now[req]
			if !ok {
				h, err := fixity.HashFile(req, fixity.SHA256)
				if err != nil {
					return err
				}
				cur = wacz.RequirementOf(req, h.Raw(fixity.SHA256), h.Size(), "")
				now[req] = cur
			}
			if r.Hash != "" && r.Hash != cur.Hash || r.Size >= 0 && r.Size != cur.Size {
				u.res.StaleRequirers = append(u.res.StaleRequirers, fmt.Sprintf("%s requires %s by SHA-256 %s, %d bytes; it has %s, %d bytes", path, r.Filename, r.Hash, r.Size, cur.Hash, cur.Size))
			}
		}
	}
	if u.crawl == nil {
		return nil
	}
	ix, err := crawlindex.Open(u.crawl.index.Dir)
	if err != nil {
		return err
	}
	for _, k := range ix.Registry.Crawls {
		if strings.Contains(k.Location, "://") {
			continue
		}
		files, err := ix.Files(k.Name)
		if err != nil {
			return err
		}
		for _, f := range files {
			path := filepath.Join(k.Location, filepath.FromSlash(f.Name))
			if !touched[path] {
				continue
			}
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			if fi.Size() != f.Size || f.Stamp != "" && crawlindex.Stamp(fi) != f.Stamp {
				u.res.StaleRequirers = append(u.res.StaleRequirers, fmt.Sprintf("%s: the index %s records crawl %s's file %s otherwise (%d bytes, stamp %q); it has %d bytes, stamp %q",
					path, u.crawl.index.Dir, k.Name, f.Name, f.Size, f.Stamp, fi.Size(), crawlindex.Stamp(fi)))
			}
		}
	}
	return nil
}

package stage

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/manifest"
	"warcdedup/wacz"
)

// Undo's part for WACZ packages: the members whose revisits it restores
// are staged beside their packages (PrepareMembers) for refs to restore
// in place, as it restores any file; then each package whose members
// changed is written anew around them (FinishUndo) with the
// datapackage.json and digest file it had before the first run
// (signature included) when every member is back bit for bit, else with
// their new hashes and without the requires entries the runs added.

// PrepareMembers stages the members named (manifest field 1) for an
// undo: those of the collection's packages. Before it copies any, it
// refuses the undo (ErrNoSpace) when a file system has not the room it
// needs there (checkSpaceOf): the copies, at their size once restored
// (grown: the bytes each member, by name, gets back, which the rewrite
// log says), up to twice Jobs restored versions of members and of the
// other files named (Files finds them) written at once, the largest
// package at its size once written anew, and the requirers refreshed
// after, as a run counts them.
func (pr *PackageRewrite) PrepareMembers(ctx context.Context, names []string, grown map[string]int64) error {
	pr.staged, pr.packages, pr.deps, pr.paths = map[string]*stagedMember{}, map[string][]string{}, map[[2]string]bool{}, map[string]string{}
	pr.restoring = true
	var members []string
	files := pr.newRewrittenFiles()
	for _, field := range names {
		name, err := manifest.UnescapeFile(field)
		if err != nil {
			return err
		}
		if _, ok := pr.Members[name]; ok {
			members = append(members, name)
		} else {
			files.addGrown(field, grown[name])
		}
	}
	if len(members) == 0 {
		return nil
	}
	if err := pr.checkSpaceOf(undoSpace(grown, files.grown), members, files.largest); err != nil {
		return err
	}
	for _, name := range members {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := pr.Members[name]
		s, err := pr.stage(m)
		if err != nil {
			return err
		}
		pr.staged[name] = s
		pr.packages[m.Package] = append(pr.packages[m.Package], name)
		pr.paths[m.Package] = m.Path
	}
	return nil
}

// StagedCopy is where the member name (unescaped) was staged, "" if it
// was not.
func (pr *PackageRewrite) StagedCopy(name string) string {
	if s, ok := pr.staged[name]; ok {
		return s.path
	}
	return ""
}

// FinishUndo writes anew each package whose staged members the undo
// replaced, checked and renamed over it as Finish does, and tells Done
// of each package it staged members of as it is through with it. The
// staged copies stay until Discard (the undo's check reads them).
// Restored counts the packages whose metadata came back as it was before
// the first run.
func (pr *PackageRewrite) FinishUndo(ctx context.Context, now time.Time) (res PackageResult, restored int, err error) {
	var rebuilt []string
	for _, pkg := range slices.Sorted(maps.Keys(pr.packages)) {
		if err := ctx.Err(); err != nil {
			return res, restored, err
		}
		out, err := pr.undoPackage(pkg, now)
		pr.done(pkg)
		if out.refused != "" {
			res.Refused = append(res.Refused, out.refused)
		}
		if out.rebuilt {
			res.Rebuilt++
			rebuilt = append(rebuilt, pkg)
			if out.back {
				restored++
			}
		}
		if err != nil {
			return res, restored, err
		}
	}
	// The packages of the collection that require one given back by the
	// hash it had deduplicated get its hash now (wacz_requirers.go),
	// which reads it: the rebuilds above do not take it as they write.
	rr, err := pr.RefreshRequirers(ctx, rebuilt, now)
	res.Rebuilt += rr.Rebuilt
	res.Requires += rr.Requires
	res.Refused = append(res.Refused, rr.Refused...)
	if stuck := pr.stuckPut(); stuck != nil && err == nil {
		err = stuck
	}
	return res, restored, err
}

// addedRequirements are the requires entries of the package at path that
// its metadata before the first run (saved; nil if unknown: none) did
// not have.
func addedRequirements(path string, saved *wacz.Metadata) ([]string, error) {
	if saved == nil {
		return nil, nil
	}
	before, err := wacz.ParseDatapackage(saved.Datapackage)
	if err != nil {
		return nil, err
	}
	had, err := before.Requires()
	if err != nil {
		return nil, err
	}
	p, err := wacz.Open(path)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	now, err := p.Datapackage.Requires()
	if err != nil {
		return nil, err
	}
	var added []string
	for _, r := range now {
		if !slices.ContainsFunc(had, func(h wacz.Requirement) bool { return h.Filename == r.Filename }) {
			added = append(added, r.Filename)
		}
	}
	return added, nil
}

// timesOfMembersBack are the ZIP times before the first run (times, of
// the metadata saved then; nil if none) of the members of replace whose
// new version (the file replace names) is the member as it was then: the
// SHA-256 and size the saved datapackage.json gives it. A package written
// anew while some of its members are not back yet gives those that are
// their time back, so that the rebuild that later puts its metadata back
// (which copies them as they are) leaves the package the file it was.
func timesOfMembersBack(saved *wacz.Metadata, times map[string][2]uint16, replace map[string]string) (map[string][2]uint16, error) {
	if saved == nil {
		return nil, nil
	}
	dp, err := wacz.ParseDatapackage(saved.Datapackage)
	if err != nil {
		return nil, err
	}
	rs, err := dp.Resources()
	if err != nil {
		return nil, err
	}
	back := map[string][2]uint16{}
	for _, r := range rs {
		path, ok := replace[r.Path]
		t, timed := times[r.Path]
		if !ok || !timed || r.SHA256 == nil {
			continue
		}
		sums, err := fixity.HashFile(path, fixity.SHA256)
		if err != nil {
			return nil, err
		}
		if sums.Size() == r.Bytes && bytes.Equal(sums.Raw(fixity.SHA256), r.SHA256) {
			back[r.Path] = t
		}
	}
	return back, nil
}

// undoneOutcome is what FinishUndo did with one package.
type undoneOutcome struct {
	rebuilt bool   // written anew around its restored members
	back    bool   // with its metadata as it was before the first run
	refused string // left as it was, and why
}

// undoPackage writes the package pkg anew around the members the undo
// restored, if it replaced any: with its metadata before the first run
// when every member is back bit for bit (which is then forgotten), else
// with the new hashes and without the requires entries the runs added.
// The error stops the undo (a package written anew is counted all the
// same); a package left as it was is refused.
func (pr *PackageRewrite) undoPackage(pkg string, now time.Time) (undoneOutcome, error) {
	replace := map[string]string{}
	for _, n := range pr.packages[pkg] {
		s := pr.staged[n]
		if fi, err := os.Stat(s.path); err == nil && !os.SameFile(fi, s.info) {
			replace[s.Member] = s.path
		}
	}
	if len(replace) == 0 {
		return undoneOutcome{}, nil
	}
	left := func(err error) undoneOutcome {
		return undoneOutcome{refused: fmt.Sprintf("%s: left as it was: %v", pkg, err)}
	}
	saved, savedTimes, err := SavedMetadata(pr.MetadataDir, pkg)
	if err != nil {
		return undoneOutcome{}, err
	}
	putBack := saved != nil
	if putBack {
		// Not while it names a package it requires by a hash that
		// package no longer has (one the runs deduplicated, not given
		// back yet): its entry would be stale, and a signed package
		// could not then be brought up to date. It is kept, and put back
		// once that package is (GiveBackMetadata).
		dp, err := wacz.ParseDatapackage(saved.Datapackage)
		if err != nil {
			return left(err), nil
		}
		// The packages this undo writes anew are not judged: each is
		// given back too, or its requirers brought up to date after.
		undone := map[string]bool{}
		for p := range pr.packages {
			undone[filepath.Base(pr.paths[p])] = true
		}
		stale, _, err := staleRequires(pr.paths[pkg], dp, undone, nil)
		if err != nil {
			return left(err), nil
		}
		putBack = !stale
	}
	if putBack {
		_, err = pr.rebuild(pkg, replace, now, func(b *wacz.Rebuild) { b.Metadata, b.Times, b.NoPackageSHA256 = saved, savedTimes, true })
		switch {
		case err == nil:
			return undoneOutcome{rebuilt: true, back: true}, ForgetMetadata(pr.MetadataDir, pkg)
		case !errors.Is(err, wacz.ErrHash):
			return left(err), nil
		}
	}
	unrequire, err := addedRequirements(pr.paths[pkg], saved)
	var times map[string][2]uint16
	if err == nil {
		times, err = timesOfMembersBack(saved, savedTimes, replace)
	}
	if err == nil {
		_, err = pr.rebuild(pkg, replace, now, func(b *wacz.Rebuild) { b.Unrequire, b.Times, b.NoPackageSHA256 = unrequire, times, true })
	}
	if err != nil {
		return left(err), nil
	}
	return undoneOutcome{rebuilt: true}, nil
}

// GiveBackMetadata puts back the metadata kept from before the first run
// (datapackage.json, digest file and signature, ZIP times) of each
// package of the collection, or of Requirers (kept by path), that has it
// while no undo could put it back: a package the runs wrote anew only to bring its requires
// entries up to date (RefreshRequirers: its members never changed), or
// one given back while a package its entries name was not (undoPackage
// kept it). It is put back once the package's resources are those it
// lists, every member the same, and each of its requires entries by
// hash or size names a package as it now is: the package is then the
// file it was before the first run, and its metadata kept is forgotten.
// The requirers of the packages given back are brought up to date
// after, and so on. It returns what it wrote and the packages it gave
// back (those an undo stopped before it forgot their metadata gave back
// too).
//
// With keep their metadata is not forgotten: the caller forgets it
// (ForgetMetadata) once it brought up to date the requirers outside the
// collection too (the undo of a crawl: packages of committed crawls may
// require them by hash), so that an undo stopped before that finds them
// again, as given back, and brings those requirers up to date then.
func (pr *PackageRewrite) GiveBackMetadata(ctx context.Context, now time.Time, keep bool) (PackageResult, []string, error) {
	var res PackageResult
	if pr.MetadataDir == "" {
		return res, nil, nil
	}
	pkgs := pr.metadataPackages()
	// What it writes is the undo's: no metadata of it is kept (the
	// requirers it brings up to date keep what they had, if any).
	defer func(was bool) { pr.restoring = was }(pr.restoring)
	pr.restoring = true
	var given []string
	seen := map[string]bool{} // given back, in an earlier round
	for {
		var back []string
		for _, pkg := range pkgs {
			if err := ctx.Err(); err != nil {
				return res, given, err
			}
			if seen[pkg] {
				continue // its metadata kept (keep): the file it was already
			}
			if pr.giveBack(pkg, now, &res) {
				back = append(back, pkg)
			}
		}
		if len(back) == 0 {
			return res, given, nil
		}
		for _, pkg := range back {
			seen[pkg] = true
		}
		given = append(given, back...)
		// Their hashes changed: the packages requiring them by hash get
		// their hashes now, and may then fit the metadata kept of them.
		// Only then is their metadata forgotten: an undo stopped before
		// leaves it, which tells the next one (same, above) that their
		// requirers are to be brought up to date; the rewrite log never
		// names a package written anew for its requires alone.
		rr, err := pr.RefreshRequirers(ctx, back, now)
		res.Rebuilt += rr.Rebuilt
		res.Requires += rr.Requires
		res.Refused = append(res.Refused, rr.Refused...)
		for p, fi := range rr.Checked {
			if res.Checked == nil {
				res.Checked = map[string]os.FileInfo{}
			}
			res.Checked[p] = fi
		}
		if err != nil {
			return res, given, err
		}
		if keep {
			continue
		}
		for _, pkg := range back {
			if err := ForgetMetadata(pr.MetadataDir, pkg); err != nil {
				return res, given, err
			}
		}
	}
}

// metadataPackages are the packages whose metadata GiveBackMetadata
// may give back, sorted: the collection's, and the requirers outside it
// named by their path, as the run that wrote them anew for their entries
// alone kept their metadata (a committed crawl's, with a crawl index).
func (pr *PackageRewrite) metadataPackages() []string {
	if pr.paths == nil {
		pr.paths = map[string]string{}
	}
	var pkgs []string
	for _, m := range pr.Members {
		if pr.paths[m.Package] == "" {
			pr.paths[m.Package] = m.Path
		}
		pkgs = append(pkgs, m.Package)
	}
	for _, p := range pr.Requirers {
		if pr.paths[p] == "" {
			pr.paths[p] = p
		}
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

// giveBack gives pkg the metadata kept of it from before the first run,
// when it fits the package as it now is, and reports whether pkg has it
// now: given back here, or by an undo stopped before it forgot it (its
// requirers may not have its hash yet). What it could not give back is
// in res.Refused.
func (pr *PackageRewrite) giveBack(pkg string, now time.Time, res *PackageResult) bool {
	saved, times, err := SavedMetadata(pr.MetadataDir, pkg)
	if err != nil || saved == nil {
		if err != nil {
			res.Refused = append(res.Refused, fmt.Sprintf("%s: its metadata before the first run could not be read: %v", pkg, err))
		}
		return false
	}
	fits, same, retime, err := pr.metadataFits(pkg, saved, times)
	switch {
	case err != nil:
		res.Refused = append(res.Refused, fmt.Sprintf("%s: its metadata before the first run could not be put back: %v", pkg, err))
		return false
	case same:
		return true
	case !fits:
		return false
	}
	if _, err := pr.rebuild(pkg, nil, now, func(b *wacz.Rebuild) {
		// Every member copied byte for byte; the index too, unless it
		// has another time than it had (an undo that rebuilt it, its
		// members not all back): then written anew with that time,
		// which the metadata checks is the index it had.
		b.FreshIndex = retime
		b.Metadata, b.Times, b.NoPackageSHA256 = saved, times, true
	}); errors.Is(err, wacz.ErrHash) {
		return false // an index of other bytes: left as it is
	} else if err != nil {
		res.Refused = append(res.Refused, fmt.Sprintf("%s: its metadata before the first run could not be put back: %v", pkg, err))
		return false
	}
	res.Rebuilt++
	return true
}

// SavedPackages are the packages (names) whose metadata dir, a
// MetadataDir, keeps: those the runs wrote anew (their members, or
// their requires entries alone) and no undo gave back yet.
func SavedPackages(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, atomicfile.TempPrefix) || !e.Type().IsRegular() {
			continue // a copy cut short by a stop, never renamed
		}
		pkg, err := url.PathUnescape(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
		out = append(out, pkg)
	}
	slices.Sort(out)
	return out, nil
}

// metadataFits says whether the metadata saved of pkg can be put back as
// it is: the package's resources are those it lists (each path with the
// same SHA-256 and size: the package was checked against its own
// datapackage.json), and each of its requires entries by hash or size
// names a package (by file name, beside pkg) with that SHA-256 and size
// now. Same is set when the package has that metadata already; a
// package signed now never fits. Retime is set when an index has another
// ZIP time than times, the saved ones, give it.
func (pr *PackageRewrite) metadataFits(pkg string, saved *wacz.Metadata, times map[string][2]uint16) (fits, same, retime bool, err error) {
	path := pr.paths[pkg]
	p, err := wacz.Open(path)
	if err != nil {
		return false, false, false, err
	}
	nowRes, err := p.Datapackage.Resources()
	if bytes.Equal(p.DatapackageRaw, saved.Datapackage) && bytes.Equal(p.DigestRaw, saved.Digest) {
		same = true
	}
	for _, m := range p.Members {
		t, ok := times[m.Name]
		if ok && !m.IsArchive() && m.Name != wacz.DatapackageName && m.Name != wacz.DigestName && t != [2]uint16{m.ModifiedTime, m.ModifiedDate} {
			retime = true
		}
	}
	// Signed since the run (which removed its signature, or it would
	// not have written it): whoever signed it wants it as it is.
	signed := p.Signed()
	p.Close()
	if err != nil || same || signed {
		return false, same, false, err
	}
	dp, err := wacz.ParseDatapackage(saved.Datapackage)
	if err != nil {
		return false, false, false, err
	}
	savedRes, err := dp.Resources()
	if err != nil {
		return false, false, false, err
	}
	if len(savedRes) != len(nowRes) {
		return false, false, false, nil
	}
	for i, r := range savedRes {
		n := nowRes[i]
		if r.Path != n.Path || r.SHA256 == nil || !bytes.Equal(r.SHA256, n.SHA256) || r.Bytes != n.Bytes {
			return false, false, false, nil
		}
	}
	stale, unknown, err := staleRequires(path, dp, nil, pr.locate())
	return err == nil && !stale && !unknown, false, retime, err
}

// locate finds the package a requires entry of a package in dir names
// by its file name: the one package the rewrite knows by that name
// (pr.paths: the collection's, and the requirers outside it), else the
// one beside it, else the one PackageNamed finds (a committed crawl's).
// Packages of crawls in directories of their own require each other
// across them.
func (pr *PackageRewrite) locate() func(dir, filename string) string {
	byBase := map[string][]string{}
	for _, path := range pr.paths {
		b := filepath.Base(path)
		if !slices.Contains(byBase[b], path) {
			byBase[b] = append(byBase[b], path)
		}
	}
	return func(dir, filename string) string {
		if of := byBase[filename]; len(of) == 1 {
			return of[0]
		}
		beside := filepath.Join(dir, filepath.FromSlash(filename))
		if _, err := os.Lstat(beside); err == nil || pr.PackageNamed == nil {
			return beside
		}
		if e, ok := pr.PackageNamed(filename); ok {
			return e.Path
		}
		return beside
	}
}

// staleRequires says whether a requires entry by hash or size of dp, the
// datapackage.json of the package at path, names a package beside it
// with another SHA-256 or size than the package has now (stale), and
// whether one names a package not found there (unknown). Entries naming
// a package of skip (file names) are not looked at. Locate, if not nil,
// finds the package an entry names (pr.locate), else it is the one
// beside.
func staleRequires(path string, dp *wacz.Datapackage, skip map[string]bool, locate func(dir, filename string) string) (stale, unknown bool, err error) {
	reqs, err := dp.Requires()
	if err != nil {
		return false, false, err
	}
	for _, r := range reqs {
		if r.Hash == "" && r.Size < 0 || skip[r.Filename] {
			continue
		}
		at := filepath.Join(filepath.Dir(path), filepath.FromSlash(r.Filename))
		if locate != nil {
			at = locate(filepath.Dir(path), r.Filename)
		}
		sum, size, err := fileSHA256(at)
		if errors.Is(err, fs.ErrNotExist) {
			unknown = true
			continue
		}
		if err != nil {
			return false, false, err
		}
		if r.Hash != "" && r.Hash != hex.EncodeToString(sum) || r.Size >= 0 && r.Size != size {
			stale = true
		}
	}
	return stale, unknown, nil
}

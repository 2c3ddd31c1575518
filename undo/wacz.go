package undo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"warcdedup/fixity"
	"warcdedup/inplace"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Undo of WACZ members (see stage/wacz_undo.go): the members whose
// revisits the undo restores are staged beside their packages, restored
// there by refs, checked as CheckRestored checks a file (no revisit the
// log wrote left, the size and SHA-256 of the log's last replacement,
// bit for bit the member before the runs or not), and their packages
// written anew around them, with their metadata as it was before the
// first run when every member is back bit for bit.

// waczUndo is an undo's staged members.
type waczUndo struct {
	pr *stage.PackageRewrite
}

// packageMembers lists the WARC members of a package, unchecked, for
// undo to name what a path holds (warcsum.Collector's Packages).
func packageMembers(in warcsum.Input) ([]warcsum.Input, error) {
	p, err := wacz.Open(in.Path)
	if err != nil {
		return nil, nil // not a package undo can have rewritten
	}
	defer p.Close()
	var out []warcsum.Input
	for _, m := range p.WARCs() {
		out = append(out, warcsum.Input{Path: in.Path, Name: wacz.JoinName(in.Name, m.Name), Size: m.Size, Offset: m.DataOffset})
	}
	return out, nil
}

// memberNamesOf names (as manifest field 1) the members of the package
// at path, named rel in its collection.
func memberNamesOf(path, rel string) ([]string, error) {
	members, err := packageMembers(warcsum.Input{Path: path, Name: rel})
	var names []string
	for _, m := range members {
		names = append(names, manifest.EscapeFile(m.Name))
	}
	return names, err
}

// stageWACZ stages the members among todo (the listing of the collection
// now, u.coll, says where they are).
func (u *undo) stageWACZ(ctx context.Context, todo []string) (*waczUndo, error) {
	pr := u.coll.PackageRewrite(u.show)
	if pr == nil {
		return nil, nil
	}
	if u.coll.NamedPackages() && u.crawl == nil {
		// A job on packages named: the packages of their directory
		// outside it that require some by hash (put there by later
		// jobs) get the hashes the undo gives back too.
		err := u.coll.EachOutside(func(path string, reqs []wacz.Requirement) {
			if slices.ContainsFunc(reqs, func(r wacz.Requirement) bool { return r.Hash != "" || r.Size >= 0 }) {
				pr.Requirers = append(pr.Requirers, path)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	// The restore's files at once, and where the files of todo that are
	// no member are: the check of free space counts their restored
	// versions written beside the copies.
	pr.Jobs = u.jobs()
	loc := u.coll.Locator()
	pr.Files = func(field string) (string, error) {
		l, err := loc.Resolve(field)
		return l.Path(), err
	}
	if err := pr.PrepareMembers(ctx, todo, u.grown); err != nil {
		pr.Discard()
		return nil, err
	}
	return &waczUndo{pr: pr}, nil
}

// restoredGrowth are the bytes each file to restore gets back, by name
// (unescaped): for each revisit the rewrite log wrote in it and no run
// undid (rewritelog.Moves.Live), the length of the record it replaced
// less its own, as the log's entry says. That is what the restore adds
// to the file when each record comes back as it was, as the restore
// rebuilds it; a record whose gzip member is compressed afresh, or a
// revisit repointed rather than restored, can differ from it by a few
// bytes, and other tools' revisits (--all) are not counted. Taken from
// the pass over the log that finds the files to restore
// (filesWithRevisits), with no read of the files.
type restoredGrowth map[string]int64

// add takes the revisits of the file f (escaped as manifest field 1)
// that m, the log's entries of it, has left. A file whose entries
// cannot be followed gets nothing: the restore refuses it.
func (g restoredGrowth) add(f string, m *rewritelog.Moves) {
	name, err := manifest.UnescapeFile(f)
	if err != nil {
		return
	}
	lf := m.Lookup(name)
	if lf == nil {
		return
	}
	var grown int64
	if err := m.Live(lf, func(mv rewritelog.Move, _ int64) error {
		grown += mv.OldLength - mv.NewLength
		return nil
	}); err != nil {
		return
	}
	if grown > 0 {
		g[name] = grown
	}
}

// opener reads records of members where they are now (their staged copy,
// or their package), every other one through loc.
func (wu *waczUndo) opener(loc originals.Opener) originals.Opener {
	if wu == nil {
		return loc
	}
	return &stage.PackageOpener{Next: loc, Members: wu.pr.Members, Staged: wu.pr.Locations()}
}

func (wu *waczUndo) locations() map[string]string {
	if wu == nil {
		return nil
	}
	return wu.pr.Locations()
}

// finishWACZ checks the members restored, from the log as the restore
// left it, and writes their packages anew; the staged copies go.
func (u *undo) finishWACZ(ctx context.Context, wu *waczUndo, todo []string) error {
	if wu == nil {
		return nil
	}
	defer wu.pr.Discard()
	// The log as the restore left it, sorted on file, read in step with
	// todo (in byte order).
	after, err := rewritelog.SortByFile(ctx, u.wd.File(workdir.LogFile), u.sorter())
	if err != nil {
		return err
	}
	defer after.Remove()
	logged, err := after.Open()
	if err != nil {
		return err
	}
	defer logged.Close()
	for _, field := range todo {
		name, err := manifest.UnescapeFile(field)
		if err != nil {
			return err
		}
		staged := wu.pr.StagedCopy(name)
		if staged == "" || u.refused[field] {
			continue
		}
		moves, err := logged.For(field, nil)
		if err != nil {
			return err
		}
		u.memberChecked[field] = true
		if err := u.checkMember(moves, field, name, staged); err != nil {
			u.res.Unrestored = append(u.res.Unrestored, fmt.Sprintf("%s: %v", name, err))
			u.show.Print("warcdedup: error: %s: %v", name, err)
		}
	}
	// The packages' writing has a stage of its own: on a large
	// collection it takes long after the restore is done.
	show := u.show.Start("write the WACZ packages", "bytes", wu.pr.PlannedBytes())
	wu.pr.Done = func(n int64) { show.Add(n) }
	res, restored, err := wu.pr.FinishUndo(ctx, time.Now().UTC())
	show.End(err, fmt.Sprintf("%s packages written anew", progress.Count(int64(res.Rebuilt))))
	for _, m := range res.Refused {
		u.res.Unrestored = append(u.res.Unrestored, m)
		u.show.Print("warcdedup: error: %s", m)
	}
	if res.Rebuilt > 0 {
		u.show.Note("warcdedup: %d WACZ packages written anew around their restored members, %d with their datapackage.json as it was before the first run", res.Rebuilt, restored)
	}
	return err
}

// loggedVersion is the version the rewrite log names of the member name
// (versioned: it names one), once the log says that every revisit it
// wrote there was given back: an error if its entries for name are
// incomplete or some revisit is left.
func loggedVersion(moves *rewritelog.Moves, name string) (fx rewritelog.Fixity, versioned bool, err error) {
	fx, versioned = moves.Version(name)
	if err := moves.Incomplete(name); err != nil {
		return fx, false, err
	}
	if f := moves.Lookup(name); f != nil {
		left := 0
		if err := moves.Live(f, func(rewritelog.Move, int64) error { left++; return nil }); err != nil {
			return fx, false, err
		}
		if left > 0 {
			return fx, false, fmt.Errorf("%d revisits the rewrite log wrote are left in it", left)
		}
	}
	return fx, versioned, nil
}

// checkMember is restore.CheckRestored of a restored member, read from its
// staged copy (what its package is then written around).
func (u *undo) checkMember(moves *rewritelog.Moves, field, name, staged string) error {
	fx, versioned, err := loggedVersion(moves, name)
	if err != nil || !versioned {
		return err
	}
	d, undone := moves.Undone(name)
	sums, err := fixity.HashFile(staged, fixity.Like(fx.NewSum, d.Before.OldSum)...)
	if err != nil {
		return err
	}
	size := sums.Size()
	u.res.Checked++
	u.res.CheckedBytes += size
	if size != fx.NewSize || !sums.Matches(fx.NewSum) {
		return fmt.Errorf("%w (%d bytes, %s): it has %d bytes, %s", inplace.ErrNotLogged, fx.NewSize, fx.NewSum, size, sums.Like(fx.NewSum))
	}
	if undone {
		u.verdict(&restore.Verdict{File: field, Before: d.Before, Sum: sums.Like(d.Before.OldSum), Exact: sums.Matches(d.Before.OldSum) && size == d.Before.OldSize,
			Unbroken: d.Unbroken, Restores: d.Restores})
	}
	return nil
}

// notMembers are the files of names (field 1) that are no WACZ member:
// those restore.CheckRestored reads (finishWACZ checked the members).
func notMembers(names []string) []string {
	var out []string
	for _, n := range names {
		if _, _, ok := wacz.SplitName(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

package dedup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// WACZ packages in a collection (issue 23). A package's WARC members are
// files of the collection of their own, named "PATH.wacz#archive/NAME"
// (wacz.JoinName): the hash stage reads each by range from the package
// (they are stored), the stages that read records read them there too,
// and the rewrite rewrites them through stage.PackageRewrite, which
// writes each package anew around its new members. A package that is not
// what its metadata says (wacz.Open, wacz.Check) is named and never read
// nor rewritten; a signed one is refused unless the run may remove the
// signature (--unsign). Every run lists the packages again.
//
// The listing checks a package without reading its WARC members (the
// ZIP, datapackage.json and its digest, the sizes, the other members and
// the index's structure: wacz.Check with Deferred); the hash stage, which
// reads every WARC member anyway, takes each one's SHA-256 from the same
// bytes (warcsum.Runner.OnFile, WantSum), and a package one of whose
// members does not have the SHA-256 its datapackage.json gives is then
// named and left out: the collection is listed again without it (the
// cache replays the rest). The verdict holds for the version of the
// package read (its stamp, as the hash cache stamps files), kept in the
// work directory (waczCheckedFile) for the rewrite and the next runs: a
// package written anew is rebuilt only from the version checked
// (stage.PackageRewrite.Verified).

// waczMetadataDir is the work directory's keep of each package's
// datapackage.json and digest file before its first rewrite, which undo
// puts back (stage.PackageRewrite.MetadataDir).
const waczMetadataDir = "wacz-metadata"

// waczCheckedFile is the work directory's keep of the verdicts on the
// packages whose members the hash stage compared with their
// datapackage.json, each for the version of the package it read.
const waczCheckedFile = "wacz-checked.json"

// waczPackages lists the WARC members of a collection's packages and
// remembers where each member is, for the readers of records.
type waczPackages struct {
	unsign bool
	// prefix is "CRAWL/" with a crawl index (crawlwacz.go): the members
	// are named CRAWL/PATH.wacz#archive/NAME, as crawlMode.collect names
	// every file of the crawl.
	prefix string
	// checked keeps the verdict on each package, by path, for the
	// version of the package its stamp says: the listing's (members
	// false) until the hash stage compared the WARC members' SHA-256
	// with datapackage.json (members true).
	checked map[string]waczVerdict
	// store, if set, is the work file that keeps the verdicts of the
	// members' comparison across runs (waczCheckedFile); loaded says it
	// was read.
	store  string
	loaded bool
	// expect are the WARC members whose SHA-256 the hash stage takes, by
	// package path and member offset, while their package's verdict is
	// the listing's; pending their packages, by path.
	expect  map[memberAt]expectedSum
	pending map[string]pendingPackage
	// members are the members of the last listing, by name (unescaped),
	// where they are in their package now (relocate).
	members map[string]stage.PackageMember
	// located is the version (fileStamp) of each package, by path, whose
	// members' places members gives.
	located map[string]string
	// refused say why each package passed over in the last listing was,
	// by package name.
	refused map[string]string
	// refusedPaths are their paths, for the files not read.
	refusedPaths []string
	// rebuilt is what the rewrite's rebuild of the packages did.
	rebuilt stage.PackageResult
	// sums are the SHA-256 (hex) of the packages the rewrite wrote anew,
	// taken as it wrote them, by path, for the version their stamp says:
	// what a crawl's commit records of them (packageFiles).
	sums map[string]packageSum
	// listOnly lists the members without checking the packages (a
	// listing to draw a sample from: ListInputs); want, when not nil,
	// checks only the packages holding a member it names (the others'
	// members are left out by the job's Files anyway), so that a
	// sample's dry run does not read every package whole.
	listOnly bool
	want     map[string]bool
}

// packageSum is a package's SHA-256 (hex) for the version stamp names.
type packageSum struct {
	stamp, sha256 string
}

type waczVerdict struct {
	stamp string
	err   error
	// members is set once the WARC members' SHA-256 were compared with
	// datapackage.json (by the hash stage, or as the rewrite wrote them).
	members bool
}

func newWACZPackages(unsign bool) *waczPackages {
	return &waczPackages{unsign: unsign, checked: map[string]waczVerdict{}, members: map[string]stage.PackageMember{}, refused: map[string]string{},
		expect: map[memberAt]expectedSum{}, pending: map[string]pendingPackage{}, located: map[string]string{}}
}

// begin starts a new listing.
func (w *waczPackages) begin() {
	clear(w.members)
	clear(w.located)
	clear(w.refused)
	clear(w.expect)
	clear(w.pending)
	w.refusedPaths = nil
	w.load()
}

// expand lists the WARC members of the package in (warcsum.Collector's
// Packages): none, and the package named in refused, when it cannot be
// trusted or may not be rewritten.
func (w *waczPackages) expand(in warcsum.Input) ([]warcsum.Input, error) {
	// The stamp before the package is read: one replaced after it, its
	// datapackage.json read but its members' sums checked against
	// another's, has another stamp than the one its checks are kept
	// under, and is never taken for verified (the rewrite logs a
	// member's SHA-256 from datapackage.json as its old sum).
	stamp, _ := fileStamp(in.Path)
	p, err := wacz.Open(in.Path)
	if err != nil {
		w.refused[in.Name] = fmt.Sprintf("%s: not read, never rewritten: %v", in.Name, err)
		w.refusedPaths = append(w.refusedPaths, in.Path)
		return nil, nil
	}
	defer p.Close()
	if w.listOnly || !w.wanted(in.Name, p) {
		return w.list(in, p), nil
	}
	v, ok := w.checked[in.Path]
	if !ok || v.stamp != stamp || stamp == "" {
		// All but the WARC members' bytes, which the hash stage reads.
		rep, err := wacz.Check(p, wacz.CheckOptions{Deferred: func(member string) bool {
			m := p.Member(member)
			return m != nil && m.IsArchive()
		}})
		if err == nil {
			err = rep.Err()
		}
		v = waczVerdict{stamp: stamp, err: err}
		w.checked[in.Path] = v
	}
	if v.err != nil {
		w.refused[in.Name] = fmt.Sprintf("%s: not read, never rewritten: the package is not what its datapackage.json says: %v", in.Name, v.err)
		w.refusedPaths = append(w.refusedPaths, in.Path)
		return nil, nil
	}
	if p.Signed() && !w.unsign {
		w.refused[in.Name] = fmt.Sprintf("%s: not read, never rewritten: the package is signed, and deduplication invalidates its signature (--unsign removes the signature and records in datapackage.json what was removed, when and why)", in.Name)
		w.refusedPaths = append(w.refusedPaths, in.Path)
		return nil, nil
	}
	if !v.members {
		if err := w.expectSums(in, p, stamp); err != nil {
			w.refused[in.Name] = fmt.Sprintf("%s: not read, never rewritten: the package is not what its datapackage.json says: %v", in.Name, err)
			w.refusedPaths = append(w.refusedPaths, in.Path)
			return nil, nil
		}
	}
	return w.list(in, p), nil
}

// list lists the WARC members of the package p (the input in).
func (w *waczPackages) list(in warcsum.Input, p *wacz.Package) []warcsum.Input {
	var out []warcsum.Input
	w.located[in.Path], _ = fileStamp(in.Path)
	for _, m := range p.WARCs() {
		name := wacz.JoinName(in.Name, m.Name)
		out = append(out, warcsum.Input{Path: in.Path, Name: name, Size: m.Size, Offset: m.DataOffset, Stamp: memberStamp(m)})
		w.members[w.prefix+name] = stage.PackageMember{Path: in.Path, Package: w.prefix + in.Name, Member: m.Name, Offset: m.DataOffset, Size: m.Size}
	}
	return out
}

// allMembers reports whether every input is a WACZ member.
func (w *waczPackages) allMembers(inputs []warcsum.Input) bool {
	for _, in := range inputs {
		if _, ok := w.members[in.Name]; !ok {
			return false
		}
	}
	return true
}

// relocate finds the WARC members of the packages written anew since the
// listing where they now are in them (their data's offset and size),
// for the stages after a rewrite that read their records: the
// collisions' resolve and rewrite (run.compareOnce).
func (w *waczPackages) relocate() error {
	byPath := map[string][]string{}
	for name, m := range w.members {
		byPath[m.Path] = append(byPath[m.Path], name)
	}
	for path, names := range byPath {
		stamp, _ := fileStamp(path)
		if stamp != "" && stamp == w.located[path] {
			continue
		}
		p, err := wacz.Open(path)
		if err != nil {
			return fmt.Errorf("finding its WARC members after its rewrite: %w", err)
		}
		for _, name := range names {
			m := w.members[name]
			pm := p.Member(m.Member)
			if pm == nil || !pm.IsArchive() {
				p.Close()
				return fmt.Errorf("%s: written anew without its WARC member %s", path, m.Member)
			}
			m.Offset, m.Size = pm.DataOffset, pm.Size
			w.members[name] = m
		}
		p.Close()
		w.located[path] = stamp
	}
	return nil
}

// wanted reports whether the package p (named name) holds a member the
// listing wants (all, without want).
func (w *waczPackages) wanted(name string, p *wacz.Package) bool {
	if w.want == nil {
		return true
	}
	for _, m := range p.WARCs() {
		if w.want[wacz.JoinName(name, m.Name)] {
			return true
		}
	}
	return false
}

// memberStamp is a WACZ member's identity for "nothing changed": its
// size and CRC-32 as the ZIP gives them, which a rebuild of the package
// around it keeps.
func memberStamp(m *wacz.Member) string { return wacz.MemberStamp(m) }

// inputStamp is fileStamp of an input: a WACZ member's own stamp, or its
// file's.
func inputStamp(in warcsum.Input) (string, bool) {
	if in.Stamp != "" {
		return in.Stamp, true
	}
	return fileStamp(in.Path)
}

// refusedPackages are the packages the last listing passed over, and why,
// in name order.
func (w *waczPackages) refusedPackages() []string {
	var s []string
	for _, n := range slices.Sorted(maps.Keys(w.refused)) {
		s = append(s, w.refused[n])
	}
	return s
}

// opener reads records of WACZ members where they are, and every other
// record through next.
func (w *waczPackages) opener(next originals.Opener) originals.Opener {
	if len(w.members) == 0 {
		return next
	}
	return &stage.PackageOpener{Next: next, Members: w.members}
}

// waczReasons are why the exit status is not 0, as far as the packages go.
func (w *waczPackages) reasons() []string {
	if w == nil {
		return nil
	}
	var reasons []string
	if refused := w.refusedPackages(); len(refused) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d WACZ packages not read and left untouched", len(refused)))
		reasons = append(reasons, stage.First(refused, 5)...)
	}
	if refused := w.rebuilt.Refused; len(refused) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d WACZ packages not written anew around their rewritten members (rewrite stage: their members' new versions are beside them), or written with relation.requires incomplete or stale (each named below)", len(refused)))
		reasons = append(reasons, stage.First(refused, 5)...)
	}
	return reasons
}

// removeLeftovers removes the temporary files (atomicfile's
// ".tmp-NAME-DIGITS") beside each package of the last listing: a new
// version a killed run or undo was writing, or the package as it was,
// which a run killed after exchanging it with its checked new version
// left under the temporary name. A rebuild removes them before it writes
// the package anew, but a package the killed run already put in place is
// not written again, and its old version, as large as itself, stayed for
// good after runs that exited 0. The caller holds the work directory's
// lock: no run of the job is writing them.
func (w *waczPackages) removeLeftovers() {
	paths := make([]string, 0, len(w.located))
	for path := range w.located {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		paths = append(paths, path)
	}
	atomicfile.RemoveLeftoversOfAll(paths)
}

// note shows, once, the packages the listing passed over.
func (w *waczPackages) note(show messages) {
	for _, m := range w.refusedPackages() {
		show.show.Print("warcdedup: error: %s", m)
	}
}

// runRewrite runs the rewrite stage s with the WACZ packages' part: the
// members with duplicates staged before, their packages rebuilt after
// (stage.PackageRewrite).
func (r *run) runRewrite(ctx context.Context, s *stage.Rewrite) (stage.RewriteResult, error) {
	return r.rewritePackages(ctx, s, workdir.NumberedFile, workdir.ByFileFile)
}

// rewritePackages is runRewrite of the rewrite s of the numbering
// numbered (on digest; byFile on file, the rewrite's input): the first
// rewrite's, or the collisions' (collide.go).
func (r *run) rewritePackages(ctx context.Context, s *stage.Rewrite, numbered, byFile string) (stage.RewriteResult, error) {
	w := r.coll.wacz
	if w == nil || len(w.members) == 0 {
		return s.Run(ctx)
	}
	pr := &stage.PackageRewrite{Members: w.members, DryRun: r.opt.DryRun, Unsign: r.opt.Unsign, TempDir: r.wd.File(workdir.TmpDir),
		MetadataDir: r.wd.File(waczMetadataDir), Software: "warcdedup", Messages: messages{r.show}, External: r.externalPackages(),
		Verified: w.verified, Jobs: r.opt.Jobs, PackageSHA256: r.crawl != nil, Files: rewrittenFile(s)}
	if s.SHA256 && w.allMembers(r.inputs) {
		// A crawl of packages alone: its commit records the packages,
		// whose SHA-256 the rebuild takes as it writes them; the
		// members' own (refs' check would take it) are taken there too,
		// once.
		s.SHA256 = false
	}
	if s.Cache != "" && !r.opt.DryRun {
		if cache, err := warcsum.NewCache(s.Cache, stage.Options(s.Algorithm)); err == nil {
			pr.Restamp = cache.Restamp
		}
	}
	if err := r.changedPackages(pr, s.LogFrom); err != nil {
		return stage.RewriteResult{}, err
	}
	closeMoves, err := r.packageMoves(pr, s.Log)
	if err != nil {
		return stage.RewriteResult{}, err
	}
	err = pr.Prepare(ctx, r.wd.File(numbered), r.wd.File(byFile))
	if cerr := closeMoves(); err == nil {
		err = cerr
	}
	if err != nil {
		pr.Discard()
		return stage.RewriteResult{}, err
	}
	if !r.opt.DryRun {
		if err := r.requirersOutside(pr); err != nil {
			pr.Discard()
			return stage.RewriteResult{}, err
		}
	}
	if !r.opt.DryRun {
		r.memberLines(s, pr)
		// The check of each staged member's new version takes the
		// CRC-32 and SHA-256 its package's rebuild stores it with.
		s.WantSums = pr.WantSums
		next := s.Replaced
		s.Replaced = func(rp rewritelog.Replacement) {
			if next != nil {
				next(rp)
			}
			pr.Replaced(rp)
		}
	}
	s.Locations = pr.Locations()
	s.Sections = pr.Sections()
	s.Container = pr.Container
	s.Open = &stage.PackageOpener{Next: s.Open, Members: w.members, Staged: s.Locations, InPlace: s.Sections != nil}
	if !r.opt.DryRun {
		finishProgress(s, pr)
	}
	res, err := s.Run(ctx)
	if err != nil {
		pr.Discard()
		return res, err
	}
	pres, err := pr.Finish(ctx, time.Now().UTC())
	w.addUp(pres)
	if err == nil {
		var stale []string
		stale, err = r.checkCommittedRequirers()
		w.rebuilt.Refused = append(w.rebuilt.Refused, stale...)
	}
	w.keepChecked(pres, messages{r.show})
	if pres.Rebuilt > 0 || len(pres.Refused) > 0 {
		r.show.Note("warcdedup: %d WACZ packages written anew around their rewritten members (%d requires entries), %d left as they were", pres.Rebuilt, pres.Requires, len(pres.Refused))
	}
	if err == nil && !r.opt.DryRun {
		// The multi-WACZ JSON named, with the new hashes and sizes.
		err = syncMultiWACZ(r.wd, r.opt.input)
	}
	if err == nil && !r.opt.DryRun {
		err = w.relocate()
	}
	return res, err
}

// changedPackages gives pr the job's packages a stopped attempt at its
// rewrite wrote (the job: its rewrite log's offset, from): their
// requirers are brought up to date too (and counted in Prepare's check
// of free space). Unless in a dry run, pr lists each package it writes
// anew before it renames it over (putPackages).
func (r *run) changedPackages(pr *stage.PackageRewrite, job int64) error {
	changed, err := jobPackages(r.wd, job)
	if err != nil {
		return err
	}
	written := putPackages{path: r.wd.File(waczPutFile), job: job}
	read := written.take
	if r.opt.DryRun {
		read = written.read
	}
	more, err := read()
	if err != nil {
		return err
	}
	pr.Changed = sortedUnion(changed, more)
	if !r.opt.DryRun {
		pr.WillPut = written.add
	}
	return nil
}

// packageMoves gives pr the moves of the job's rewrites so far (the rewrite
// log since the hash stage), while the log has entries since: Prepare
// reads revisits of the members at the numbered manifest's offsets, the
// hash stage's, which the first rewrite moved for the collisions' (and a
// stopped attempt for a resumed one). The log is opened at the first
// revisit read (few runs read one), and closed again before the rewrite
// opens it (close; it is locked).
func (r *run) packageMoves(pr *stage.PackageRewrite, logFile string) (close func() error, err error) {
	fi, err := os.Stat(logFile)
	if r.opt.DryRun || err != nil || fi.Size() <= r.state.LogSizeAtHash {
		return func() error { return nil }, nil
	}
	m := &logMoves{file: logFile, since: r.state.LogSizeAtHash}
	pr.Moves = m
	return func() error {
		pr.Moves = nil
		if m.log == nil {
			return nil
		}
		return m.log.Close()
	}, nil
}

// logMoves follows offsets through the rewrite log file since a size,
// opened at the first Move.
type logMoves struct {
	file  string
	since int64
	log   *rewritelog.Log
	err   error
}

func (m *logMoves) Move(name string, offset int64) (int64, error) {
	if m.log == nil && m.err == nil {
		if m.log, m.err = rewritelog.Open(m.file); m.err == nil {
			m.log.Since(m.since)
		}
	}
	if m.err != nil {
		return 0, m.err
	}
	return m.log.Move(name, offset)
}

// memberLines gives the rewrite s and the packages' rebuild pr the index
// lines the hash stage made of the WACZ members: the rewrite derives
// those of each copy it replaces, the rebuild makes its fresh index of
// them (wacz.LineStore; any member's missing or of another version: the
// rebuild reads the members).
func (r *run) memberLines(s *stage.Rewrite, pr *stage.PackageRewrite) {
	d := &lineDeriver{store: &wacz.LineStore{Dir: r.wd.File(workdir.MemberLinesDir)}, stamps: map[string]string{},
		next: s.Replaced, show: r.show}
	for _, in := range r.inputs {
		if _, _, ok := wacz.SplitName(in.Name); ok && in.Stamp != "" {
			d.stamps[in.Name] = in.Stamp
		}
	}
	pr.Lines = d.store
	s.Replaced = d.replaced
}

// lineDeriver derives the index lines of each WACZ member's copy the
// rewrite replaces from the hash stage's lines of the member (stamps:
// the version of each member, by name, that the hash stage read).
type lineDeriver struct {
	store  *wacz.LineStore
	stamps map[string]string
	next   func(rewritelog.Replacement) // the rewrite's Replaced before
	show   *progress.Display
}

func (d *lineDeriver) replaced(rp rewritelog.Replacement) {
	if d.next != nil {
		d.next(rp)
	}
	stamp, ok := d.stamps[rp.Name]
	if !ok {
		return
	}
	// A member the collisions pass rewrites again is of another version
	// than the hash read: its package's rebuild reads it, and says so in
	// the log, as it does of a member whose lines failed.
	if err := d.store.Derive(rp, stamp); err != nil && !errors.Is(err, wacz.ErrOtherVersion) {
		messages{d.show}.Note("%v; the rebuild of its package reads it for its index", err)
	}
}

// requirersOutside makes the packages outside the job that require the
// packages pr rewrites part of it, or refuses the job before anything is
// rewritten: committed crawls' requirers are brought up to date too
// (crawlwacz.go), written anew beside themselves, with the room for them
// checked now that they are known; a job on packages named may not
// change any other package of their directory (waczinput.go).
func (r *run) requirersOutside(pr *stage.PackageRewrite) error {
	if err := r.committedRequirers(pr); err != nil {
		return err
	}
	if err := r.lockRequirers(pr.Requirers); err != nil { // lock.go
		return err
	}
	if err := pr.CheckRequirersSpace(); err != nil {
		return err
	}
	return r.opt.input.outsideRequirers(pr.StagedPackages(), pr.KeepPlaces)
}

// addUp adds what a rewrite's packages came to: both rewrites of a run
// comparing once write packages (the collisions' too).
func (w *waczPackages) addUp(pres stage.PackageResult) {
	w.rebuilt.Rebuilt += pres.Rebuilt
	w.rebuilt.Requires += pres.Requires
	w.rebuilt.Refused = append(w.rebuilt.Refused, pres.Refused...)
	w.rebuilt.Left += pres.Left
}

// keepChecked keeps the packages written anew as checked: their members
// have the SHA-256 they were written with (the next listing would read
// them all again), and their own, when taken as written.
func (w *waczPackages) keepChecked(pres stage.PackageResult, show messages) {
	for path, fi := range pres.Checked {
		w.checked[path] = waczVerdict{stamp: crawlindex.Stamp(fi), members: true}
		if sum, ok := pres.SHA256[path]; ok {
			if w.sums == nil {
				w.sums = map[string]packageSum{}
			}
			w.sums[path] = packageSum{stamp: crawlindex.Stamp(fi), sha256: sum}
		}
	}
	if len(pres.Checked) > 0 {
		if err := w.save(); err != nil {
			show.show.Note("warcdedup: %v; the next run compares the packages written with their datapackage.json again", err)
		}
	}
}

// rewrittenFile finds the files the rewrite s rewrites that are no
// package's members (WARC and ARC files) where s does: their new
// versions count in the packages' check of free space. A Locator each
// time: one kept would remember every file (source.Locator's memo).
func rewrittenFile(s *stage.Rewrite) func(field string) (string, error) {
	return func(field string) (string, error) {
		l, err := (&source.Locator{Roots: s.Roots, Prefixes: s.Prefixes}).Resolve(field)
		return l.Path(), err
	}
}

// recoverPackages finishes the packages a stopped run or undo left with
// their members' logged versions staged beside them (stage.Recover),
// before anything reads the collection.
//
// A job named WACZ files or a multi-WACZ JSON (only: their paths) takes up
// only its own packages': another package of the directory is another
// job's, whose staged members it must neither finish nor remove.
//
// With a crawl index (crawl not nil) the log names the packages
// CRAWL/PATH, as the crawl's run named them.
func recoverPackages(wd *workdir.Dir, roots []string, show messages, only map[string]bool, crawl *crawlMode) error {
	pending, err := stage.FindPending(roots)
	if err != nil || len(pending) == 0 {
		return err
	}
	if crawl != nil {
		for i := range pending {
			pending[i].Package = crawl.name + "/" + pending[i].Package
		}
	}
	if only != nil {
		mine := map[string]bool{}
		for p := range only {
			mine[p] = true
			if real, err := filepath.EvalSymlinks(p); err == nil {
				mine[real] = true
			}
		}
		pending = slices.DeleteFunc(pending, func(p stage.Pending) bool { return !mine[p.Path] })
		if len(pending) == 0 {
			return nil
		}
	}
	// The log first completed from its journal, as a run opens it.
	log, err := rewritelog.Open(wd.File(workdir.LogFile))
	if err != nil {
		return err
	}
	if err := log.Close(); err != nil {
		return err
	}
	// The versions the log gives the members staged, read in one pass
	// that keeps no more (issue 22: memory does not grow with the log).
	want := map[string]bool{}
	for _, p := range pending {
		want[wacz.JoinName(p.Package, p.Member)] = true
	}
	versions, err := loggedVersions(wd.File(workdir.LogFile), want)
	if err != nil {
		return err
	}
	version := func(name string) (rewritelog.Fixity, bool) {
		fx, ok := versions[name]
		return fx, ok
	}
	if only == nil {
		// A whole directory: none of the staged members may be another
		// job's (waczinput.go's otherJobsStaged).
		if err := otherJobsStaged(wd, roots, pending, version); err != nil {
			return err
		}
	}
	pr := &stage.PackageRewrite{Unsign: true, TempDir: wd.File(workdir.TmpDir), MetadataDir: wd.File(waczMetadataDir),
		Software: "warcdedup", Messages: show}
	pr.PackageNamed = func(filename string) (stage.ExternalPackage, bool) {
		if e, ok := packageNamed(roots, filename); ok {
			return e, true
		}
		if crawl != nil {
			return crawl.committedByFile(filename)
		}
		return stage.ExternalPackage{}, false
	}
	// The packages a recovered one is written anew for may be required
	// by others, recovered or not, whose entries would go stale: Recover's
	// refresh of requirers goes through every package under roots.
	var signed []string
	pr.Requirers, signed = packagesUnder(roots, pending)
	for _, p := range signed {
		show.Note("%s: signed, not checked for requires entries naming the packages recovered (Recover may remove the signature only of those it finishes)", p)
	}
	verdicts := keptVerdictsOf(wd, pending)
	res, err := pr.Recover(pending, version, time.Now().UTC())
	if err != nil {
		return err
	}
	verdicts.carryOver(res.Checked)
	for _, m := range res.Refused {
		show.Error(fmt.Errorf("%s", m))
	}
	if res.Rebuilt > 0 {
		show.show.Note("warcdedup: %d WACZ packages an interrupted run or undo left unfinished written anew around their members' logged versions", res.Rebuilt)
	}
	if len(res.Refused) > 0 {
		return fmt.Errorf("%d WACZ packages could not be finished (see above): their members' logged versions are staged beside them", len(res.Refused))
	}
	return nil
}

// packagesUnder are the paths of the packages under roots (directories
// walked, packages named directly) but those of pending, which Recover
// names by their place in the collection, and signed: the signed ones,
// whose signature Recover (which may remove that of the packages it
// finishes, their job having been allowed to) must not remove.
func packagesUnder(roots []string, pending []stage.Pending) (out, signed []string) {
	skip := map[string]bool{}
	for _, p := range pending {
		skip[p.Path] = true
	}
	for _, root := range roots {
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !wacz.IsWACZ(p) || skip[p] {
				return nil
			}
			if pkg, err := wacz.Open(p); err == nil {
				isSigned := pkg.Signed()
				pkg.Close()
				if isSigned {
					signed = append(signed, p)
					return nil
				}
			}
			out = append(out, p)
			return nil
		})
	}
	return out, signed
}

// packageNamed finds the one package of that file name under roots
// (directories walked, packages named directly): where Recover finds a
// package its revisits point at that is not beside it. None when there
// is none, or more than one.
func packageNamed(roots []string, filename string) (stage.ExternalPackage, bool) {
	var found []string
	for _, root := range roots {
		fi, err := os.Stat(root)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			if filepath.Base(root) == filename && wacz.IsWACZ(root) {
				found = append(found, root)
			}
			continue
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == filename && wacz.IsWACZ(p) {
				found = append(found, p)
			}
			return nil
		})
	}
	if len(found) != 1 {
		return stage.ExternalPackage{}, false
	}
	return stage.ExternalPackage{Path: found[0]}, true
}

// keptVerdicts are the verdicts of the members' comparison the work
// directory keeps (waczCheckedFile), with the stamps the packages a
// recovery may write anew had before it.
type keptVerdicts struct {
	store  string
	saved  map[string]savedVerdict
	before map[string]string // package path -> its stamp before the recovery
}

func keptVerdictsOf(wd *workdir.Dir, pending []stage.Pending) *keptVerdicts {
	k := &keptVerdicts{store: wd.File(waczCheckedFile), before: map[string]string{}}
	k.saved, _ = workdir.ReadJSON[map[string]savedVerdict](k.store)
	for _, p := range pending {
		k.before[p.Path], _ = fileStamp(p.Path)
	}
	return k
}

// carryOver gives each package the recovery wrote anew (checked: as it
// was checked and renamed) the verdict its version before had, where
// that version's members were found what its datapackage.json says: the
// members it replaced have the SHA-256 they were written with, the
// others were copied and checked against the version found right.
// Without it a run resumed after a kill, its hash stage done, took the
// package its own recovery finished for one changed by someone, and left
// it (exit 1, "run again").
func (k *keptVerdicts) carryOver(checked map[string]os.FileInfo) {
	changed := false
	for path, fi := range checked {
		v, ok := k.saved[path]
		if !ok || v.Problem != "" || v.Stamp == "" || v.Stamp != k.before[path] {
			continue
		}
		k.saved[path] = savedVerdict{Stamp: crawlindex.Stamp(fi)}
		changed = true
	}
	if changed {
		workdir.WriteJSON(k.store, k.saved) // none kept: the next hash stage compares the members again
	}
}

// waczPutFile lists the packages a job's rewrite renamed new versions
// over (putPackages).
const waczPutFile = "wacz-put.tsv"

// putPackages is the work directory's list of the packages a job's
// rewrite wrote anew, each line the job (its rewrite log's offset,
// stage.Rewrite.LogFrom) and a package's name, written and synced before
// the package is renamed over: a package written anew for its requires
// entries alone is named by no entry of the rewrite log (names as
// manifest field 1 spells them), and the rerun
// of a run stopped before that package's requirers were brought up to
// date must bring them up to date (stage.PackageRewrite.Changed). Before
// 2026-11-28 such a requirer was left naming the package's old SHA-256,
// exit 0.
type putPackages struct {
	path string
	job  int64
}

// read returns the packages of the list that the job wrote.
func (p putPackages) read() ([]string, error) {
	names, _, err := p.lines()
	return names, err
}

// take is read for the job's rewrite, which goes on to add to the list:
// the list is left with the job's lines alone. Every other line is of a
// job whose rewrite ended, whose packages' requirers were brought up to
// date then (a run's rewrites go one after the other, and a stopped one
// is taken up again before the next begins), or of one an undo gave
// back; and a line a stop cut short would run into the next one added,
// naming no package (the package it was written for was not renamed
// over: add syncs the line first). Before 2026-11-28 the list kept
// every job's lines, a few bytes for each package ever written anew.
func (p putPackages) take() ([]string, error) {
	names, keep, err := p.lines()
	if err != nil || keep == nil {
		return names, err
	}
	f, err := atomicfile.Create(p.path, 0o644)
	if err == nil {
		if _, err = f.Write(keep); err == nil {
			err = f.Commit()
		} else {
			f.Abort()
		}
	}
	if err != nil && !errors.Is(err, atomicfile.ErrNotSynced) {
		return nil, fmt.Errorf("%s: leaving the list with this job's lines alone: %w", p.path, err)
	}
	return names, nil
}

// lines reads the list: the names of the job's packages and, when the
// list holds anything else (another job's lines, a line cut short),
// the job's lines alone, to be written in its place (nil when there is
// nothing else).
func (p putPackages) lines() (names []string, keep []byte, err error) {
	f, err := os.Open(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// Read a line at a time: the list may hold other jobs' lines.
	job := strconv.FormatInt(p.job, 10) + "\t"
	var mine bytes.Buffer
	other := false
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			other = other || line != "" // a line cut short by a stop is no package's
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.path, err)
		}
		pkg, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), job)
		if !ok {
			other = true // another job's
			continue
		}
		name, err := manifest.UnescapeFile(pkg)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.path, err)
		}
		names = append(names, name)
		mine.WriteString(line)
	}
	if other {
		keep = mine.Bytes()
		if keep == nil {
			keep = []byte{}
		}
	}
	return names, keep, nil
}

// add lists pkg, synced.
func (p putPackages) add(pkg string) error {
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d\t%s\n", p.job, manifest.EscapeFile(pkg))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("listing it in %s before it is written anew: %w", p.path, err)
	}
	return nil
}

// sortedUnion is the names of a and b, sorted, each once.
func sortedUnion(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// jobPackages are the packages (names) whose members the job's entries
// of the rewrite log, from byte offset from on, name.
func jobPackages(wd *workdir.Dir, from int64) ([]string, error) {
	if _, err := os.Stat(wd.File(workdir.LogFile)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	err := scanLog(wd.File(workdir.LogFile), from, func(fx rewritelog.Fixity) {
		if pkg, _, ok := wacz.SplitName(fx.File); ok && !seen[pkg] {
			seen[pkg] = true
			out = append(out, pkg)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// scanLog reads the rewrite log name, from byte offset from on, in one
// pass, giving fn each block's "# file" line: what the WACZ code needs of
// the log (the files it names, the version it gives each) without
// keeping its entries, so that memory does not grow with the log (issue
// 22). As rewritelog.LoadFile, it refuses a log shorter than its end
// file records, and passes over blocks whose entries do not account for
// their file's change of size.
func scanLog(name string, from int64, fn func(rewritelog.Fixity)) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := rewritelog.CheckEnd(name, fi.Size()); err != nil {
		return err
	}
	r := rewritelog.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, from, max(fi.Size()-from, 0)), 256<<10), name)
	r.Fixity = func(fx rewritelog.Fixity) error {
		fn(fx)
		return nil
	}
	r.Incomplete = func(*rewritelog.IncompleteError) error { return nil }
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// loggedVersions are the versions the rewrite log name gives the files
// of want (the last "# file" line of each that wrote something:
// rewritelog.Moves.Version's answer), read in one pass.
func loggedVersions(name string, want map[string]bool) (map[string]rewritelog.Fixity, error) {
	out := map[string]rewritelog.Fixity{}
	err := scanLog(name, 0, func(fx rewritelog.Fixity) {
		if want[fx.File] && fx.NewSum != "-" {
			out[fx.File] = fx
		}
	})
	if errors.Is(err, os.ErrNotExist) {
		err = nil // no log: no version
	}
	return out, err
}

// finishProgress makes the rewrite stage s count the packages pr's
// Finish writes anew after it, beside the files it reads: its total the
// two together, each package's size added as Finish is through with it.
// (Its progress stood at 100% while the packages were written: a
// quarter of the stage's time on the WACZ bench.)
func finishProgress(s *stage.Rewrite, pr *stage.PackageRewrite) {
	read := s.Total
	if read == 0 {
		// A rewrite that counts with no total (the collisions'): the
		// packages' bytes would be a total its reads could pass.
		return
	}
	s.Total += pr.PlannedBytes()
	var mu sync.Mutex // packages are written at once; a Meter's Set is not atomic
	written := read
	pr.Done = func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		written += n
		s.Meter.Set(written)
	}
}

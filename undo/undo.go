// Package undo is warcdedup undo: it turns the revisits a job of
// warcdedup run wrote (package dedup) back into the records they replaced,
// in place, and checks that they are. It opens the job's work directory
// and collection as the run left them (dedup.OpenCollection), lists the
// collection with the run's Hash stage to find each revisit's original,
// restores (package restore), reads the files again, and keeps its
// records in the work directory as a run's (runs/TIME-undo). WACZ members
// are restored staged beside their packages, which are then written anew
// (wacz.go); packages outside the job that require one it gave back are
// brought up to date (wacz_outside.go).
package undo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/collock"
	"warcdedup/crawlindex"
	"warcdedup/dedup"
	"warcdedup/digest"
	"warcdedup/inplace"
	"warcdedup/internal/fspath"
	"warcdedup/internal/heapprof"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Options are what to undo and how.
type Options struct {
	// Paths are collections, directories or files in them: the revisits
	// in those files are restored.
	Paths []string
	// WorkDir is the job's work directory; "" finds it beside the
	// collection that holds the first path (COLLECTION.warcdedup), or in
	// Index.
	WorkDir string
	// Index is the crawl index a crawl was run with (run --index): its
	// work directory is the one of INDEX/work whose crawl holds the first
	// path.
	Index string
	// All also makes other tools' revisits whole records.
	All        bool
	HardLinks  bool
	Jobs       int
	SortMemory string
	Display    *progress.Display
	// CDX are indexes to bring up to date with the undo (cdx.go).
	CDX []string
	// refileStop, if set, is called after the packages outside the job
	// were written anew and before the index records them
	// (wacz_outside.go); its error stops the undo there (tests).
	refileStop func() error
	// sourcesStop, if set, is called after the crawls' multi-WACZ JSON
	// got the hash and size of the packages written anew and before the
	// index records them (wacz_outside.go); its error stops the undo
	// there (tests).
	sourcesStop func() error
	// outsideStop, if set, is called after the packages of the
	// collection got their metadata back (refreshRequirers) and before
	// the packages outside it are brought up to date (refreshOutside);
	// its error stops the undo there (tests).
	outsideStop func() error
}

// Result is what an undo did.
type Result struct {
	WorkDir     string
	Collections []string
	Crawl       string // the crawl of an index undone, if one
	Files       int    // files with revisits to restore
	Stats       restore.Stats
	Took        time.Duration
	NothingToDo bool     // no revisit of this toolchain's left in those files
	Refused     []string // files left untouched, and why
	// Checked are the files the rewrite log names among those named, read
	// again once the undo was over (Verified); Unrestored those of them
	// that are not what the log says (revisits left, another version), and
	// why, but for those refused, named already.
	Verified     bool
	Checked      int64
	CheckedBytes int64
	Unrestored   []string
	// Missing are the files in the paths named in which the rewrite log
	// has revisits left, that are no longer in the collection (moved,
	// renamed, deleted), and why: not restored.
	Missing []string `json:",omitempty"`
	// Unlogged are the files named that the rewrite log never replaced
	// that hold revisits in the form this toolchain writes, and why: a
	// run the log does not record wrote them; not restored.
	Unlogged []string `json:",omitempty"`
	// Of the files checked that are restored and whose version before
	// the runs undone the log records (its "# file" line): BitExact have
	// that version's SHA-256 again, restored bit for bit; BytesDiffer
	// have their records back in other bytes (gzip members compressed
	// afresh), Recompressed members in all in those this undo restored.
	// Differ names the first of those and why. Unexplained are files of
	// BytesDiffer whose records this undo restored all at once,
	// rebuilding every gzip member of them (or having none), unchanged
	// between the runs undone: something it cannot account for changed
	// their bytes (exit status 1).
	BitExact, BytesDiffer int64
	Recompressed          int64
	Differ                []string
	Unexplained           []string
	// StaleRequirers are WACZ packages outside the job that require one
	// it gave back and could not be brought up to date, or that the
	// crawl index does not record as they are, and why
	// (wacz_outside.go).
	StaleRequirers []string `json:",omitempty"`
	Exit           int
	ExitReason     []string
}

// Run turns the revisits this toolchain wrote in the files named back into
// the records they replaced (restore.Restorer), in place, and then checks that
// they are. It first completes the rewrite log from the journal a killed
// run or undo left; it hashes the collection as it is now (known files
// from the cache), sorts that manifest on URI and date to find each
// original, restores, and writes a fixity list of the files it replaced.
// Then every file named that the log names is read again: no revisit the
// log wrote may be left in it, and it must have the size and SHA-256 of
// the log's last replacement of it; any that is not is named, exit status
// 1. Run again after an interruption, it restores what is left.
func Run(ctx context.Context, opt Options) (*Result, error) {
	start := time.Now()
	u, files, err := openUndo(opt)
	if err != nil {
		return nil, err
	}
	defer u.close()
	err = u.run(ctx, files)
	if err == nil {
		u.letGoOfJoin()
		// The multi-WACZ JSON with the restored packages' hashes and sizes.
		err = u.coll.SyncMultiWACZ()
	}
	u.res.Took = time.Since(start)
	// The work directory's records of the collection (records.go).
	if u.restoreFrom >= 0 {
		keepRecords(ctx, u.wd, u.state.Params, u.res, u.restoreFrom, start, u.crawl != nil)
	}
	if werr := workdir.WriteJSON(u.wd.File(workdir.UndoStatsFile), u.res); err == nil {
		err = werr
	}
	return u.res, err
}

// undo is one undo in a work directory: it opens the work directory
// (openUndo, open), restores what the rewrite log names (restoreLogged:
// the collection listed as it is now, listNow, then restore), reads the
// files again (check), and says why its exit status is not 0
// (exitReasons).
type undo struct {
	opt    Options
	wd     *workdir.Dir
	locks  *collock.Set // the collections' directories, locked
	state  *dedup.State
	coll   *dedup.Collection
	crawl  *crawl // the crawl of an index undone; nil for a collection
	show   *progress.Display
	runLog *workdir.RunLogFile
	res    *Result
	// refused are the files the restore refused (escaped as field 1).
	refused map[string]bool
	// restoreFrom is the log's size when the restore began, -1 before.
	restoreFrom int64
	// restored are the files this undo replaced, and how.
	restored map[string]restore.RestoredFile
	// stamps are the files' stamps when the job last completed, as its
	// state recorded them before this undo (nil for none).
	stamps map[string]string
	// leftovers are the partial new versions a killed run or undo left
	// in the collection that could not be removed (removeLeftovers).
	leftovers []string
	// after is the rewrite log as the restore left it, sorted on file
	// (check, unloggedRevisits and letGoOfJoin read it in step with the
	// files they go through); logNames the files named, escaped, that the
	// log names (rewritelog.Moves.Names), found by check.
	after    *rewritelog.Grouped
	logNames map[string]bool
	// memberChecked are the WACZ members (escaped) finishWACZ checked
	// from their staged copies: checkPackagedMembers reads the others.
	memberChecked map[string]bool
	// packagesOpened counts the packages the check opened to read WACZ
	// members from (openPackage): one per package, however many members.
	packagesOpened int
	// grown are the bytes the files to restore get back, by name
	// (restoredGrowth, wacz.go): what the check of free space before the
	// WACZ members are staged counts.
	grown restoredGrowth
	// givenBack are the crawl's packages whose metadata before its first
	// run this undo gave back, kept until refreshOutside is done
	// (forgetGivenBack, waczrefresh.go).
	givenBack []string
}

// openUndo finds the work directory of the job that wrote the revisits,
// locks it and reads its job, and names the files to undo (escaped as
// manifest field 1).
func openUndo(opt Options) (*undo, []string, error) {
	if len(opt.Paths) == 0 {
		return nil, nil, errors.New("nothing named to undo")
	}
	var err error
	switch {
	case opt.WorkDir != "":
	case opt.Index != "":
		opt.WorkDir, err = dedup.FindCrawlWorkDir(opt.Index, opt.Paths[0])
	default:
		opt.WorkDir, err = dedup.FindWorkDir(opt.Paths[0])
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(opt.WorkDir, workdir.StateFile)); err != nil {
		return nil, nil, fmt.Errorf("%s is no work directory of warcdedup run (%v)", opt.WorkDir, err)
	}
	wd, err := workdir.Open(opt.WorkDir)
	if err != nil {
		return nil, nil, err
	}
	u := &undo{opt: opt, wd: wd, refused: map[string]bool{}, restoreFrom: -1, restored: map[string]restore.RestoredFile{}, memberChecked: map[string]bool{}}
	files, err := u.open()
	if err != nil {
		u.close()
		return nil, nil, err
	}
	return u, files, nil
}

// open reads the job of the work directory and names the files to undo;
// the undo's messages go to the run log from here.
func (u *undo) open() ([]string, error) {
	var err error
	if u.state, err = dedup.ReadState(u.wd); err != nil {
		return nil, err
	}
	u.stamps = u.state.Stamps
	params := u.state.Params
	u.res = &Result{WorkDir: u.wd.Path, Collections: params.Collections}
	var index *crawlindex.Index
	if params.Index != "" {
		if u.crawl, err = openCrawl(params); err != nil {
			return nil, err
		}
		u.res.Crawl = u.crawl.name
		index = u.crawl.index
	}
	// As the run read it: a job named WACZ files or a multi-WACZ JSON
	// reads only those packages.
	if u.coll, err = dedup.OpenCollection(u.wd, params, index); err != nil {
		return nil, err
	}
	files, err := filesIn(u.coll.Expand(u.opt.Paths), params.Collections)
	if err != nil {
		return nil, err
	}
	if u.locks, err = u.lockCollection(params.Collections); err != nil { // lock.go
		return nil, err
	}
	u.coll.LockListed(u.locks)
	if u.crawl != nil {
		// The crawl's files are named CRAWL/PATH in its log.
		for i, f := range files {
			files[i] = u.crawl.name + "/" + f
		}
	}
	if u.runLog, err = u.wd.OpenRunLog(u.opt.Display); err != nil {
		return nil, err
	}
	u.show = u.runLog.Display()
	return files, nil
}

// close lets the work directory go.
func (u *undo) close() {
	u.runLog.Close()
	if u.after != nil {
		u.after.Remove()
	}
	u.locks.Release()
	u.wd.Close()
}

// run restores the files named (escaped as manifest field 1), checks
// them, and brings the indexes named up to date.
func (u *undo) run(ctx context.Context, files []string) error {
	// The log first completed from its journal: that keeps, beside its
	// file, a temporary file holding a version with a writer's bytes
	// after it, which removeLeftovers would take for a partial one.
	log, err := rewritelog.Open(u.wd.File(workdir.LogFile))
	if err != nil {
		return err
	}
	if err := log.Close(); err != nil {
		return err
	}
	u.removeLeftovers(files)
	if err := u.coll.RecoverPackages(u.show); err != nil {
		return err
	}
	stopProfile := heapprof.Stage("undo-restore")
	from, todo, err := u.restoreLogged(ctx, files)
	stopProfile()
	if err != nil {
		return err
	}
	stopProfile = heapprof.Stage("undo-check")
	err = u.check(ctx, files)
	if err == nil {
		err = u.checkPackagedMembers(ctx, files)
	}
	if err == nil {
		err = u.refreshRequirers(ctx) // waczrefresh.go
	}
	stopProfile()
	if err == nil && u.opt.outsideStop != nil {
		err = u.opt.outsideStop()
	}
	if err != nil {
		return err
	}
	u.res.Unlogged = u.unloggedRevisits(ctx, files, u.stamps)
	if err := u.refreshOutside(ctx); err != nil { // wacz_outside.go
		return err
	}
	if err := u.forgetGivenBack(); err != nil {
		return err
	}
	u.exitReasons()
	if len(u.opt.CDX) > 0 {
		if len(todo) == 0 {
			// An earlier undo may have restored without its indexes:
			// they get every entry of the log they lack.
			from = -1
		}
		return updateCDX(ctx, u.wd, u.opt.CDX, u.state.Params.Collections, from, u.show, u.res)
	}
	return nil
}

// restoreLogged restores the revisits of the files named that the
// rewrite log says this toolchain wrote (every revisit of the files
// named, with --all), and records that the collection changed: the job
// starts anew, and the undo's fixity list. It returns the log's size
// before the restore and the files it restored.
func (u *undo) restoreLogged(ctx context.Context, files []string) (from int64, todo []string, err error) {
	// The log first: a run or undo killed between renaming a file and
	// logging it left the entries in the journal, which opening the log
	// adds. Only then does the log say which revisits are left.
	log, err := rewritelog.Open(u.wd.File(workdir.LogFile))
	if err != nil {
		return 0, nil, err
	}
	defer log.Close()
	// The log sorted on file: which files have revisits left (a pass
	// over it), then the restore, in step with the files (a merge join:
	// memory holds a file's entries, not the log's).
	written, err := rewritelog.SortByFile(ctx, u.wd.File(workdir.LogFile), u.sorter())
	if err != nil {
		return 0, nil, fmt.Errorf("the rewrite log says which revisits this toolchain wrote: %w", err)
	}
	defer written.Remove()
	u.grown = restoredGrowth{}
	logged, versions, err := filesWithRevisits(written, files, u.grown)
	if err != nil {
		return 0, nil, fmt.Errorf("the rewrite log says which revisits this toolchain wrote: %w", err)
	}
	todo = files
	if !u.opt.All {
		todo = intersect(logged, files)
	}
	u.res.Missing = u.missingLogged(versions, logged, files)
	u.res.Files = len(todo)
	from = log.Size()
	if len(todo) == 0 {
		u.res.NothingToDo = len(u.res.Missing) == 0
		return from, todo, log.Close()
	}
	u.restoreFrom = from
	err = u.restore(ctx, todo, written, log)
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, stage.ErrNoSpace) {
		// Refused before any member was copied or any file restored
		// (PrepareMembers): the collection did not change, nor does the
		// job (a reset one would be done again from its first stage)
		// or the last undo's fixity list.
		return from, todo, err
	}
	// The collection changed: a later run starts a new job on it, from
	// its first stage (the manifests kept describe the files before).
	if serr := dedup.ResetState(u.wd, u.state); err == nil {
		err = serr
	}
	if _, ferr := stage.WriteFixity(u.wd.File(workdir.LogFile), from, u.wd.File(workdir.UndoFixityFile)); err == nil {
		err = ferr
	}
	return from, todo, err
}

// exitReasons sets the undo's exit status and its reasons: files refused,
// files that are not what the log says once restored, and files whose
// bytes differ where this undo can account for no difference.
func (u *undo) exitReasons() {
	res := u.res
	if res.Stats.Refused > 0 {
		res.Exit = 1
		res.ExitReason = append([]string{fmt.Sprintf("%s files refused and left untouched", progress.Count(res.Stats.Refused))}, stage.First(res.Refused, 10)...)
	}
	for _, p := range []struct {
		files []string
		what  string
	}{
		{res.Unrestored, "are not what the rewrite log says they are once restored"},
		{res.Missing, "the rewrite log has revisits in are no longer in the collection: not restored"},
		{res.Unlogged, "hold revisits in the form this toolchain writes that the rewrite log does not name: not restored"},
		{res.Unexplained, "have other bytes than before the runs undone, and this undo rebuilt every gzip member of their records (or they have none)"},
		{res.StaleRequirers, "outside the job require packages it gave back and were not brought up to date, or are not what the crawl index records"},
	} {
		if len(p.files) > 0 {
			res.Exit = 1
			res.ExitReason = append(res.ExitReason, fmt.Sprintf("%s files %s", progress.Count(int64(len(p.files))), p.what))
			res.ExitReason = append(res.ExitReason, stage.First(p.files, 10)...)
		}
	}
	if len(u.leftovers) > 0 {
		res.Exit = 1
		res.ExitReason = append(res.ExitReason, fmt.Sprintf("%s partial new versions a killed run or undo left in the collection could not be removed", progress.Count(int64(len(u.leftovers)))))
		res.ExitReason = append(res.ExitReason, stage.First(u.leftovers, 10)...)
	}
}

// filesWithRevisits reads the log sorted on file (written) and returns the files
// (escaped, in byte order) in which it has revisits no run undid (see
// restore.Files), and the log's last version of those of them that are
// not among present (escaped, sorted): what missingLogged needs. The
// bytes those among present get back go to grown.
func filesWithRevisits(written *rewritelog.Grouped, present []string, grown restoredGrowth) (logged []string, versions map[string]rewritelog.Fixity, err error) {
	versions = map[string]rewritelog.Fixity{}
	err = restore.EachLogged(written, func(f string, m *rewritelog.Moves) error {
		logged = append(logged, f)
		if _, found := slices.BinarySearch(present, f); found {
			grown.add(f, m)
		} else {
			name, _ := manifest.UnescapeFile(f)
			if fx, ok := m.Version(name); ok {
				versions[name] = fx
			}
		}
		return nil
	})
	return logged, versions, err
}

// sorter is the undo's system sort, its temporary files compressed.
func (u *undo) sorter() syssort.Sorter {
	return syssort.Sorter{TempDir: u.wd.File(workdir.TmpDir), Memory: u.opt.SortMemory, Parallel: u.jobs(), Compress: syssort.Compressor()}
}

// restore restores the revisits of the files todo (escaped, in byte
// order): it lists the collection as it is now, to find each revisit's
// original, and restores, reading the log sorted on file (written) in
// step with todo.
func (u *undo) restore(ctx context.Context, todo []string, written *rewritelog.Grouped, log *rewritelog.Log) error {
	u.show.Note("warcdedup: undoing the deduplication of %d files of %s, work directory %s", len(todo), strings.Join(u.coll.Roots(), ", "), u.wd.Path)
	log.Since(log.Size()) // the listing is of the files as they are now
	byCapture, byDigest, err := u.listNow(ctx)
	// The sorted copies are the restore's only: a resumed undo lists and
	// sorts anew. The listing itself (compressed) stays, for the records
	// (undoRecords' dependencies).
	defer u.removeSorted()
	if err != nil {
		return err
	}
	captures, err := manifest.OpenTableBy(u.wd.File(byCapture), manifest.CaptureKey)
	if err != nil {
		return err
	}
	defer captures.Close()
	var tables []*manifest.Table
	if byDigest != "" {
		t, err := manifest.OpenTable(u.wd.File(byDigest))
		if err != nil {
			return err
		}
		defer t.Close()
		tables = append(tables, t)
	}
	loc := u.coll.Locator()
	wz, err := u.stageWACZ(ctx, todo) // wacz.go
	if err != nil {
		return err
	}
	originals, err := originals.New(wz.opener(loc), tables...)
	if err != nil {
		return err
	}
	logged, err := written.Open()
	if err != nil {
		return err
	}
	defer logged.Close()
	show := u.show.Start("restore", "bytes", u.coll.Size(todo))
	var prog restore.Progress
	r := restore.Restorer{Roots: loc.Roots, Prefixes: loc.Prefixes, Locations: wz.locations(), Captures: captures, Originals: originals, All: u.opt.All,
		WrittenFor: func(file string) (*rewritelog.Moves, error) { return logged.For(file, nil) },
		HardLinks:  u.opt.HardLinks, Jobs: u.jobs(), Progress: &prog,
		Refused: func(err error) {
			u.res.Refused = append(u.res.Refused, err.Error())
			var re *inplace.RefusedError
			if errors.As(err, &re) {
				u.refused[re.File] = true
			}
			u.show.Print("warcdedup: error: %v", err)
		},
		Warn: func(err error) { u.show.Note("warcdedup: warning: %v", err) },
		Restored: func(f restore.RestoredFile) {
			u.restored[f.File] = f
			if m := f.Members; m.Rebuilt+m.Recompressed() > 0 {
				u.show.Log("undo: %s: restored; gzip members: %d rebuilt bit for bit, %d compressed afresh%s", f.File, m.Rebuilt, m.Recompressed(), parenthesized(m.Reasons()))
			}
		}}
	stop := progress.Follow(&prog.Bytes, show)
	u.res.Stats, err = r.Run(ctx, todo, log)
	stop()
	st := u.res.Stats
	show.End(err, fmt.Sprintf("%s records restored in %s files", progress.Count(st.Records+st.Foreign), progress.Count(st.Restored)))
	if werr := u.finishWACZ(ctx, wz, todo); err == nil {
		err = werr
	}
	return err
}

// listNow lists the collection as it is now (the Hash stage) and sorts
// the listing on URI and date, where each revisit's original is found
// (byCapture); with --all or a crawl, also on digest (byDigest, "" for
// none), where other tools' revisits and a crawl's revisits of committed
// originals find theirs: a crawl's listing with the index's originals
// of its digests (the Join stage).
func (u *undo) listNow(ctx context.Context) (byCapture, byDigest string, err error) {
	inputs, err := u.coll.Collect()
	if err != nil {
		return "", "", fmt.Errorf("hash: %w", err)
	}
	algo, err := digest.ParseLabel(u.state.Params.Algorithm)
	if err != nil {
		algo = digest.SHA1
	}
	h := stage.Hash{Inputs: inputs, Algorithm: algo, Jobs: u.jobs(), Cache: u.wd.File(workdir.CacheDir),
		Manifest: u.wd.File(workdir.UndoManifest), Messages: dedup.Messages(u.show), Compress: true}
	if u.crawl != nil {
		// As a run on the crawl lists it: the cache keeps each file's
		// SHA-256, which the crawl's next commit records.
		h.OnFile = func(warcsum.Input, string) {}
	}
	if _, err := u.coll.Hash(ctx, u.show, stage.HashName, h); err != nil {
		return "", "", fmt.Errorf("hash: %w", err)
	}
	sorter := u.sorter()
	byCapture = workdir.UndoManifest
	if u.opt.All || u.crawl != nil {
		if err := u.wd.Sort(ctx, u.show, sorter, workdir.UndoManifest, workdir.UndoByDigest, manifest.ByDigest.Command); err != nil {
			return "", "", fmt.Errorf("sort: %w", err)
		}
		byDigest = workdir.UndoByDigest
	}
	if u.crawl != nil {
		// Its revisits' originals in the crawls committed before it are
		// found in the index.
		if err := u.joinIndex(ctx); err != nil {
			return "", "", fmt.Errorf("join the index: %w", err)
		}
		byCapture, byDigest = workdir.UndoJoined, workdir.UndoJoined
	}
	if err := u.wd.Sort(ctx, u.show, sorter, byCapture, workdir.UndoByCapture, manifest.ByCapture.Command); err != nil {
		return "", "", fmt.Errorf("sort: %w", err)
	}
	return workdir.UndoByCapture, byDigest, nil
}

// removeSorted removes the listing's sorted copies, once the restore is
// over (or stopped).
func (u *undo) removeSorted() {
	for _, name := range []string{workdir.UndoByCapture, workdir.UndoByDigest, workdir.UndoJoined} {
		os.Remove(u.wd.File(name))
	}
}

// jobs is how many files the undo reads at once.
func (u *undo) jobs() int { return max(u.opt.Jobs, 1) }

// joinIndex writes the index's originals of the crawl's digests and merges
// them with the crawl's own lines, on digest (workdir.UndoJoined).
func (u *undo) joinIndex(ctx context.Context) error {
	in, err := os.Open(u.wd.File(workdir.UndoByDigest))
	if err != nil {
		return err
	}
	defer in.Close()
	j := stage.Join{Index: u.crawl.index, In: in, Name: u.wd.File(workdir.UndoByDigest), Out: u.wd.File(workdir.UndoIndexOriginals)}
	if _, err := j.Run(ctx); err != nil {
		return err
	}
	return stage.MergeByDigest(u.wd.File(workdir.UndoByDigest), u.wd.File(workdir.UndoIndexOriginals), u.wd.File(workdir.UndoJoined))
}

// check reads again every file named that the log names (see
// restore.CheckRestored), from the log as the undo left it.
func (u *undo) check(ctx context.Context, files []string) error {
	after, err := rewritelog.SortByFile(ctx, u.wd.File(workdir.LogFile), u.sorter())
	if err != nil {
		return err
	}
	u.after = after
	b, err := after.Open()
	if err != nil {
		return err
	}
	defer b.Close()
	// The files named the log names, for unloggedRevisits: every group
	// is seen, those before, between and after the files checked.
	named := map[string]bool{}
	for _, f := range files {
		named[f] = false
	}
	u.logNames = map[string]bool{}
	seen := func(file string, m *rewritelog.Moves) {
		if _, ok := named[file]; ok {
			if name, err := manifest.UnescapeFile(file); err == nil && m.Names(name) {
				u.logNames[file] = true
			}
		}
	}
	moves := func(file string) (*rewritelog.Moves, error) { return b.For(file, seen) }
	show := u.show.Start("check", "files", int64(len(files)))
	problems, st, err := restore.CheckRestored(ctx, moves, u.coll.Locator(), notMembers(files), u.jobs())
	show.Done(fmt.Sprintf("%s files the log names read again, %s", progress.Count(st.Files), progress.Bytes(st.Bytes)))
	if err != nil {
		return err
	}
	for b.Next() {
		seen(b.File(), b.Moves())
	}
	if err := b.Err(); err != nil {
		return err
	}
	// (+=: the WACZ members were checked before their packages were
	// written anew, finishWACZ.)
	u.res.Verified, u.res.Checked, u.res.CheckedBytes = true, u.res.Checked+st.Files, u.res.CheckedBytes+st.Bytes
	for _, p := range problems {
		if u.refused[p.File] {
			continue
		}
		u.res.Unrestored = append(u.res.Unrestored, p.Error())
		u.show.Print("warcdedup: error: %v", p)
	}
	for _, v := range st.Verdicts {
		u.verdict(&v)
	}
	return nil
}

// verdict reports whether a restored file is, bit for bit, the file before
// the runs undone (restore.Verdict), and if not, why: in the run log for
// every file, in the result (and so on the terminal) for the first ten
// that are not.
func (u *undo) verdict(v *restore.Verdict) {
	name, _ := manifest.UnescapeFile(v.File)
	if v.Exact {
		u.res.BitExact++
		u.show.Log("undo: %s: restored bit for bit (%s, as before the runs undone)", name, v.Sum)
		return
	}
	u.res.BytesDiffer++
	var why string
	f, now := u.restored[v.File]
	n := f.Members.Recompressed()
	switch {
	case !v.Unbroken:
		why = "records equal, bytes differ: the file changed between the runs undone, outside the rewrite log"
	case !now:
		why = "records equal, bytes differ (restored before this undo: by an undo interrupted, or index remove --restore)"
	case n > 0 || f.Foreign > 0 || v.Restores > 1:
		u.res.Recompressed += n
		why = fmt.Sprintf("records equal, bytes differ (%s recompressed%s)", members(n), afterSemicolon(f.Members.Reasons()))
		if f.Foreign > 0 {
			why = strings.TrimSuffix(why, ")") + fmt.Sprintf("; %d other tools' revisits made whole)", f.Foreign)
		}
		if v.Restores > 1 {
			why = strings.TrimSuffix(why, ")") + "; some records restored before this undo)"
		}
	default:
		why = "records equal, yet bytes differ with every gzip member rebuilt (or none): this undo cannot account for the difference"
		u.res.Unexplained = append(u.res.Unexplained, fmt.Sprintf("%s: %s, before the runs undone %s", name, v.Sum, v.Before.OldSum))
		u.show.Print("warcdedup: error: %s: %s: %s, before the runs undone %s", name, why, v.Sum, v.Before.OldSum)
	}
	line := fmt.Sprintf("%s: %s", name, why)
	u.show.Log("undo: %s", line)
	if len(u.res.Differ) < 10 {
		u.res.Differ = append(u.res.Differ, line)
	}
}

// parenthesized is s in parentheses after a space, "" for "".
func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// members is "1 member", "2 members".
func members(n int64) string {
	if n == 1 {
		return "1 member"
	}
	return progress.Count(n) + " members"
}

// afterSemicolon is s after a semicolon, "" for "".
func afterSemicolon(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// crawl is the crawl of an index a work directory's job ran on, undone.
type crawl struct {
	index *crawlindex.Index
	name  string
}

// openCrawl is the crawl of an index a work directory's job ran on, for
// its undo. A crawl committed to the index is refused: its responses are
// originals of later crawls at the offsets the index records, and its
// files are recorded with their SHA-256; an undo would leave the index
// describing files that are no longer there. Taken out of the index
// (warcdedup index remove), it can be undone.
func openCrawl(p dedup.Params) (*crawl, error) {
	if len(p.Collections) != 1 {
		return nil, fmt.Errorf("the job of crawl %s names %d collections", p.Crawl, len(p.Collections))
	}
	ix, err := crawlindex.Open(p.Index)
	if err != nil {
		return nil, fmt.Errorf("crawl %s was run with the index %s: %w", p.Crawl, p.Index, err)
	}
	if ix.Registry.Crawl(p.Crawl) != nil {
		return nil, fmt.Errorf("crawl %s is committed to the index %s: its responses are originals of later crawls, at the offsets the index records, which an undo would move; take it out of the index first (warcdedup index remove --index %s %s, with --restore if later crawls need it), then undo it",
			p.Crawl, ix.Dir, ix.Dir, p.Crawl)
	}
	return &crawl{index: ix, name: p.Crawl}, nil
}

// filesIn lists the WARC and ARC files at the paths (collections,
// directories or files in them) by their names relative to their
// collection, escaped as manifest field 1, sorted.
func filesIn(paths, collections []string) ([]string, error) {
	var names []string
	for _, p := range paths {
		abs, err := fspath.Abs(p)
		if err != nil {
			return nil, err
		}
		var root string
		for _, c := range collections {
			if abs == c || strings.HasPrefix(abs, c+string(filepath.Separator)) {
				root = c
			}
		}
		if root == "" {
			return nil, fmt.Errorf("%s is in none of the job's collections (%s)", p, strings.Join(collections, ", "))
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			rel, _ := filepath.Rel(root, abs)
			if wacz.IsWACZ(abs) {
				members, err := memberNamesOf(abs, filepath.ToSlash(rel))
				names = append(names, members...)
				if err != nil {
					return nil, err
				}
				continue
			}
			names = append(names, manifest.EscapeFile(filepath.ToSlash(rel)))
			continue
		}
		inputs, err := warcsum.Collector{Recursive: true, Packages: packageMembers}.Collect([]string{abs})
		if err != nil {
			return nil, err
		}
		for _, in := range inputs {
			rel, _ := filepath.Rel(root, filepath.Join(abs, filepath.FromSlash(in.Name)))
			names = append(names, manifest.EscapeFile(filepath.ToSlash(rel)))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// intersect returns the names of a that are in b.
func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, n := range b {
		in[n] = true
	}
	var out []string
	for _, n := range a {
		if in[n] {
			out = append(out, n)
		}
	}
	return out
}

// Summary writes what an undo did, in human units, and what its check
// found; of an undo that stopped, only what it did.
func Summary(w io.Writer, res *Result) {
	s := &res.Stats
	switch {
	case res.NothingToDo:
		fmt.Fprintf(w, "nothing to undo: the rewrite log has no revisit left in the files named (of %s)\n", strings.Join(res.Collections, ", "))
	case s.Files > 0:
		fmt.Fprintf(w, "restored: %s records in %s files (%s this toolchain's revisits: %s by rule, %s from what the revisit kept; %s other tools' revisits made whole)\n",
			progress.Count(s.Records+s.Foreign), progress.Count(s.Restored), progress.Count(s.Records), progress.Count(s.Exact),
			progress.Count(s.Kept), progress.Count(s.Foreign))
		if s.Left > 0 {
			fmt.Fprintf(w, "left as they are: %s revisits whose original was not found or that hold no payload elsewhere (see the warnings)\n", progress.Count(s.Left))
		}
		if m := s.Members; m.Rebuilt+m.Recompressed() > 0 {
			fmt.Fprintf(w, "gzip members of those records: %s rebuilt bit for bit, %s compressed afresh%s\n", progress.Count(m.Rebuilt), progress.Count(m.Recompressed()), parenthesized(m.Reasons()))
		}
		fmt.Fprintf(w, "bytes of those files: %s before, %s after (%s more)\n", progress.Bytes(s.BytesBefore), progress.Bytes(s.BytesAfter), progress.Bytes(s.BytesAfter-s.BytesBefore))
	}
	if res.Verified {
		fmt.Fprintf(w, "checked: %s files the rewrite log names, read again (%s): %s as the log records them (no revisit of its left, its size and SHA-256), %s not\n",
			progress.Count(res.Checked), progress.Bytes(res.CheckedBytes), progress.Count(res.Checked-int64(len(res.Unrestored))-s.Refused),
			progress.Count(int64(len(res.Unrestored))+s.Refused))
		if res.BitExact+res.BytesDiffer > 0 {
			fmt.Fprintf(w, "of those restored: %s restored bit for bit (the SHA-256 they had before the runs undone), %s with records equal and bytes that differ",
				progress.Count(res.BitExact), progress.Count(res.BytesDiffer))
			if res.Recompressed > 0 {
				fmt.Fprintf(w, " (%s recompressed)", members(res.Recompressed))
			}
			fmt.Fprintln(w)
			for _, d := range res.Differ {
				fmt.Fprintf(w, "  %s\n", d)
			}
			if n := res.BytesDiffer - int64(len(res.Differ)); n > 0 {
				fmt.Fprintf(w, "  and %s more (run.log names each file)\n", progress.Count(n))
			}
		}
	}
	if !res.NothingToDo && s.Files > 0 {
		fmt.Fprintf(w, "time: %s\n", progress.Duration(res.Took))
		fmt.Fprintf(w, "work directory: %s (undo-fixity.tsv, undo.json, rewrite.log)\n", res.WorkDir)
	}
	// The exit status and its reasons are the command's to say, on
	// standard error (stage.ExitReasons).
}

package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"warcdedup/collock"
	"warcdedup/collres"
	"warcdedup/digest"
	"warcdedup/internal/fspath"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/heapprof"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/refs"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/verify"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Options of a run.
type Options struct {
	Collections []string // directories; file names are relative to each
	WorkDir     string   // "" for workdir.Default of the first collection
	DryRun      bool     // do everything but rewrite; report what would be
	// CompareInResolve makes resolve read and compare every copy, as
	// cluster, crawl-index and dry runs do; by default a run numbers
	// the copies without reading them and leaves the comparison to the
	// rewrite (see run.compareOnce). For tests and benchmarks: both give
	// the same revisits, numbering and account.
	CompareInResolve bool
	Jobs             int // files or clusters at once
	Algorithm        digest.Algorithm
	Policy           policy.Policy
	SortMemory       string // sort's buffer (sort -S), e.g. "1G" or "25%"; "" for syssort.DefaultMemory (64M)
	KeepWork         bool   // keep the intermediate work files a later stage consumed (see consumed)
	HardLinks        bool   // rewrite files with several names (see refs.Rewriter)
	// Unsign lets signed WACZ packages be rewritten, their signature
	// removed and recorded in datapackage.json (dedup/wacz.go).
	Unsign bool
	// CDX are CDX/CDXJ index files of the collection, written before the
	// job: each is brought up to date with the rewrite (see warccdx).
	CDX []string
	// Index is a crawl index (package crawlindex): the collection is one
	// crawl, deduplicated against the originals of the crawls committed
	// to it, and committed to it when verified. "" for none.
	Index string
	// Crawl names the crawl; the collection directory's name if "".
	Crawl string
	// Include and Exclude are globs on the crawl's file names (relative
	// to the collection): only files matching an Include (if any) and no
	// Exclude take part.
	Include, Exclude []string
	Display          *progress.Display
	// Files, when not nil, restricts the job to the files it names (as
	// warcsum.Collect names them, relative to their collection): warcdedup
	// assess --sample runs a dry run on a sample of the files.
	Files map[string]bool
	// Digests, when not nil, restricts the job from resolution on to a
	// slice of the digests (see DigestSlice).
	Digests *DigestSlice
	// Command is the command line that runs the job, which an
	// interrupted run names as the one that resumes it; "" for none.
	Command string
	// ConvertOptions: with --convert-arc, the ARC files are converted
	// to WARC first (convert.go).
	ConvertOptions

	// input: the collection was named as WACZ files or a multi-WACZ JSON
	// (waczinput.go); nil for directories.
	input *packageInput
	// afterHash, if set, is called once the hash stage is done (tests:
	// the collection changed under the job).
	afterHash func()
	// beforeCommit, if set, is called as a crawl's commit stage starts;
	// its error stops the run there (tests: a kill before the commit).
	beforeCommit func() error
}

// stageRewriteStarted marks in state.json a job whose rewrite began: the
// files changed from then on, and the manifests before must not be made
// again.
const stageRewriteStarted = "rewrite started"

// run is one run of the job on a collection: warcdedup run, once. The job
// (its parameters and the stages done, state.json) outlives it: a run
// resumes what an earlier one of the same job left unfinished.
type run struct {
	// ahead is the account's reading of the work files, started while
	// verify runs (readAhead), for the account stage to finish.
	ahead  *accountReading
	opt    Options
	wd     *workdir.Dir
	locks  *collock.Set // the collection's directories, locked (none for a dry run)
	state  *State
	show   *progress.Display
	runLog *workdir.RunLogFile
	inputs []warcsum.Input
	rep    *report.Report

	// What the stages found, this run or (reloaded) an earlier one.
	hashed   stage.HashResult
	resolved stage.ResolveResult
	rewrote  stage.RewriteResult
	// collided and rewroteCollisions are the collisions stages' (see
	// compareOnce).
	collided          collideState
	rewroteCollisions stage.RewriteResult
	verified          verify.Stats
	// newDamage counts the damaged records and unreadable files the hash
	// again stage found beyond the hash stage's; damagedAgain names the
	// first ones.
	newDamage    int64
	damagedAgain []string
	// changes are the files that changed since the hash stage, not by the
	// job (found by the verify stage).
	changes *changes
	// inProgress are the files a crawler is still writing (".open") that
	// the last listing of the collection passed over.
	inProgress []string
	// indexRefused says why each index --cdx named was left untouched.
	indexRefused []string
	// coll is the files the run works on; crawl its crawl index mode, nil
	// without an index.
	coll  *collection
	crawl *crawlMode
	// runDir is the directory of the run's own records, relative to the
	// work directory.
	runDir string
	// recordsProblem is why the work directory's records of the
	// collection could not be brought up to date, if they could not.
	recordsProblem string
	// uncommitted: the crawl was not committed, its files having changed
	// since the hash stage.
	uncommitted bool
	// estimated is a dry run's estimate of the conversion of its ARC
	// files (--convert-arc), which the account adds up.
	estimated *stage.EstimateResult
}

// Run runs the job, resuming what an earlier run of it left unfinished.
// The error is one that stopped it; what it did is in the Result's report
// either way, with the exit status and its reasons.
func Run(ctx context.Context, opt Options) (*stage.Result, error) {
	if err := opt.complete(); err != nil {
		return nil, err
	}
	r, err := openRun(opt)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if res, err := r.resume(); res != nil || err != nil {
		return res, err
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	err = r.runSteps(ctx)
	// A run stopped after verify, before its account: the account's
	// reading started with verify ends before the run does.
	r.stopAhead()
	r.finish(err)
	return &stage.Result{Report: r.rep, WorkDir: r.wd.Path, RunDir: r.runDir}, err
}

// complete checks the options and fills in their defaults: each
// collection a directory, named by its absolute path.
func (opt *Options) complete() error {
	if len(opt.Collections) == 0 {
		return errors.New("no collection given")
	}
	for i, c := range opt.Collections {
		fi, err := os.Stat(c)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			// WACZ files or a multi-WACZ JSON (dedup/waczinput.go).
			if opt.input, err = packageOperands(opt.Collections); err != nil {
				return err
			}
			opt.Collections = []string{opt.input.root}
			break
		}
		if opt.Collections[i], err = fspath.Abs(c); err != nil {
			return err
		}
	}
	if opt.Algorithm == 0 {
		opt.Algorithm = digest.SHA1
	}
	if opt.Index != "" && opt.Digests != nil {
		return errors.New("a slice of the digests is for assessing a collection, not a crawl of an index")
	}
	if err := opt.checkConvert(); err != nil {
		return err
	}
	opt.Jobs = max(opt.Jobs, 1)
	return nil
}

// openRun opens what a run holds while it works: with an index, its
// registration as the crawl's run; the work directory, locked; the run
// log its messages go to; and the job's state as the work directory has
// it, or a new job's.
func openRun(opt Options) (*run, error) {
	r := &run{opt: opt}
	if opt.Index != "" {
		var err error
		if r.crawl, err = openCrawlMode(&r.opt); err != nil {
			return nil, err
		}
		if r.opt.WorkDir == "" {
			// The index keeps its crawls' work directories.
			r.opt.WorkDir = filepath.Join(r.crawl.index.Dir, "work", r.crawl.name)
		}
	}
	if r.opt.WorkDir == "" {
		r.opt.WorkDir = workdir.Default(r.opt.Collections[0])
		if opt.input != nil {
			r.opt.WorkDir = workdir.Default(opt.input.source) // beside the file named
		}
	}
	r.coll = &collection{roots: r.opt.Collections, crawl: r.crawl, files: r.opt.Files, wacz: newWACZPackages(opt.Unsign)}
	if opt.input != nil {
		r.coll.packages = opt.input.selected()
	}
	if err := r.open(); err != nil {
		r.close()
		return nil, err
	}
	r.coll.wacz.store = r.wd.File(waczCheckedFile)
	return r, nil
}

func (r *run) open() error {
	var err error
	if r.wd, err = workdir.Open(r.opt.WorkDir); err != nil {
		return err
	}
	if r.locks, err = r.lockCollection(); err != nil { // lock.go
		return err
	}
	if r.runLog, err = r.wd.OpenRunLog(r.opt.Display); err != nil {
		return err
	}
	r.show = r.runLog.Display()
	if r.state, err = readState(r.wd); err != nil {
		return err
	}
	if err := r.checkLogDescribes(r.state.Params.Collections); err != nil {
		return err
	}
	if err := r.checkKeepARC(); err != nil { // dedup/convert.go
		return err
	}
	if err := r.lockKeepARC(); err != nil { // lock.go
		return err
	}
	if !r.state.Params.equal(r.params()) {
		// Another job's outputs (other collections, algorithm or policy):
		// start from the first stage; the log and the cache stay.
		r.state = &State{Params: r.params()}
	}
	if !r.state.done(stageRewriteStarted) {
		// Each listing up to the rewrite locks the directories of the
		// files it finds (collection.lockListed); rewrite stops it.
		r.coll.locks = r.locks
	}
	return nil
}

// close lets go of what openRun opened.
func (r *run) close() {
	r.runLog.Close()
	r.locks.Release()
	if r.wd != nil {
		r.wd.Close()
	}
	if r.crawl != nil {
		r.crawl.close()
	}
}

// params are what the job's outputs depend on.
func (r *run) params() Params {
	opt := &r.opt
	p := Params{Collections: opt.Collections, Algorithm: opt.Algorithm.String(), Policy: opt.Policy.String(), Files: filesKey(opt.Files),
		ConvertARC: opt.ConvertARC, KeepARC: opt.KeepARC}
	if opt.Digests != nil {
		// A job on a slice of the digests is another job too.
		p.Files += " digests " + opt.Digests.Key
	}
	if r.crawl != nil {
		p.Index, p.Crawl = r.crawl.index.Dir, r.crawl.name
	}
	if opt.input != nil {
		p.Source, p.Packages = opt.input.source, opt.input.sortedNames()
	}
	return p
}

// resume decides what is left of the job, given the collection's files
// as they are now: nothing, when the job is complete and the files
// unchanged (the Result says so); a new job, when the job is complete
// but the files changed, or when they changed since an unfinished job
// hashed them before it began its rewrite; else the stages not done.
func (r *run) resume() (*stage.Result, error) {
	// A dry run finishes no package: it writes nothing, and holds no lock
	// of the collection (assess goes on beside a run), so the members
	// staged beside the packages may be a running or killed job's new
	// versions, which its own log does not name and Recover would remove.
	if !r.opt.DryRun {
		if err := recoverPackages(r.wd, r.opt.Collections, messages{r.show}, r.coll.packages, r.crawl); err != nil { // dedup/wacz.go
			return nil, err
		}
	}
	if err := r.checkMultiWACZ(); err != nil { // dedup/waczinput.go
		return nil, err
	}
	var err error
	if r.inputs, err = r.collect(); err != nil {
		return nil, err
	}
	if r.coll.wacz != nil && !r.opt.DryRun {
		r.coll.wacz.removeLeftovers() // dedup/wacz.go
	}
	r.coll.wacz.note(messages{r.show})
	for _, p := range r.inProgress {
		r.show.Log("warcdedup: note: %s: skipped: still being written (its name ends in .open); a run after its writer has closed and renamed it takes it", p)
	}
	// opview: the other files not read, each named (notread.go).
	for _, p := range r.coll.others {
		k, _ := kindOf(p)
		r.show.Log("warcdedup: note: %s: not read: %s %s", p, k.kind, k.why)
	}
	if len(r.inputs) == 0 {
		if r.opt.input != nil {
			return nil, fmt.Errorf("no WARC member read from the WACZ files %s names (see above why)", r.opt.input.source)
		}
		return nil, fmt.Errorf("no WARC or ARC file found in %s%s", strings.Join(r.opt.Collections, ", "), r.inProgressNote())
	}
	if r.crawl != nil {
		if res, err := r.crawl.begin(r); res != nil || err != nil {
			return res, err
		}
	}
	switch {
	case r.state.Complete && r.convertToRetry() > 0:
		// dedup/convert.go: a new job, whose convert stage finishes them.
		r.show.Note("warcdedup: the job is complete but for %d ARC files whose conversion failed (see its report): converting them again", r.convertToRetry())
		r.state = &State{Params: r.params()}
	case r.state.Complete:
		if r.unchanged() && r.state.RecordsBehind {
			// Done but for the work directory's records: the account,
			// which makes them, is done again; every stage before it is
			// kept.
			r.show.Note("warcdedup: the job is complete, but the work directory's fixity.tsv and deps.tsv were not brought up to date by its last run: bringing them up to date")
			r.state.Complete = false
			return nil, nil
		}
		if r.unchanged() {
			rep, err := stage.ReadReport(r.wd.File(workdir.StatsFile))
			if err == nil {
				if err := r.finishRemoval(); err != nil {
					return nil, err
				}
				rep.Totals.FilesInProgress = int64(len(r.inProgress)) // as they are now
				rep.FilesNotDeduplicated = notReadNow(rep.FilesNotDeduplicated, r.inProgress, r.coll.others)
				return &stage.Result{Report: rep, WorkDir: r.wd.Path, NothingToDo: true}, nil
			}
		}
		// The collection changed since the job completed: a new job on it.
		r.state = &State{Params: r.params()}
	case r.state.done(stage.HashName) && !r.state.done(stageRewriteStarted):
		// Hashed by assess or an interrupted run: what changed since is
		// hashed again (the cache has the rest), and all that follows
		// done anew.
		ch, err := r.changesSinceHash(nil)
		if err != nil {
			return nil, err
		}
		if !ch.none() {
			r.show.Note("warcdedup: the collection changed since it was hashed (by assess or an interrupted run): %s; hashing again what changed", ch)
			r.state = &State{Params: r.params()}
		}
	}
	return nil, nil
}

// start begins the run's work: a run that may rewrite first checks that
// the collection can be written; the run's report and its own directory
// of records.
func (r *run) start() error {
	opt := &r.opt
	if !opt.DryRun {
		if err := r.checkWritable(); err != nil {
			return err
		}
	}
	r.show.Note("warcdedup: %s %s, work directory %s", map[bool]string{true: "dry run on", false: "deduplicating"}[opt.DryRun],
		strings.Join(opt.Collections, ", "), r.wd.Path)
	r.rep = &report.Report{Title: "Deduplication of " + strings.Join(opt.Collections, ", "), Generated: time.Now().UTC(),
		Mode: "run", Collections: opt.Collections, Policy: opt.Policy.String(), Algorithm: opt.Algorithm.String()}
	if opt.DryRun {
		r.rep.Mode = "dry run"
	}
	r.rep.FilesNotDeduplicated = notRead(r.inProgress, r.coll.others) // opview
	var err error
	r.runDir, err = newRunDir(r.wd, r.rep.Generated, r.rep.Mode)
	return err
}

// step is a stage as a run drives it: what does it, the work files it
// leaves, and whether they stay valid once it is done (keep: a resumed
// run does not run it again).
type step struct {
	name    string
	do      func(ctx context.Context) (note string, err error)
	outputs []string
	keep    bool
	when    bool // the stage is one of this run's
}

// steps are the job's stages in order, as this run runs them (see package
// stage for what each does): with --convert-arc, the conversion of the
// ARC files to WARC first, its outputs the files the hash stage lists (a
// dry run estimates it after its rewrite instead, converting nothing).
// Where each duplicate is compared once (compareOnce), resolve numbers the
// copies without reading them, and two stages after the rewrite resolve
// byte for byte the digests whose comparison in the rewrite kept
// duplicates apart from their original, and rewrite what the new
// numbering allows.
func (r *run) steps() []step {
	dry, crawl := r.opt.DryRun, r.crawl != nil
	after := []string{workdir.AfterFile}
	if crawl {
		after = append(after, workdir.AfterFilesFile)
	}
	byDigest := []string{workdir.ByDigestFile}
	if r.opt.Digests != nil {
		byDigest = append(byDigest, workdir.SliceFile)
	}
	convert := r.opt.ConvertARC
	once := r.compareOnce()
	rewritten := []string{workdir.SavedFile}
	if once && !dry {
		rewritten = append(rewritten, workdir.ApartFile)
	}
	all := []step{
		{stage.ConvertName, r.convert, []string{convertStats}, true, convert && !dry},
		{stage.HashName, r.hash, []string{workdir.BeforeFile, workdir.FactsFile}, true, true},
		{stage.SortByDigestName, r.sortByDigest, byDigest, true, true},
		{stage.JoinName, r.joinIndex, []string{workdir.JoinedFile}, true, crawl},
		{stage.ResolveName, r.resolve, []string{workdir.NumberedFile}, true, true},
		{stage.SortByFileName, r.sortByFile, []string{workdir.ByFileFile, workdir.FactsByFile}, true, true},
		{stage.RewriteName, r.rewrite, rewritten, !dry, true},
		{stage.CollideName, r.collide, []string{workdir.CollideFile, workdir.CollideOrigins, workdir.CollideByFile}, true, once && !dry},
		{stage.RewriteCollisionName, r.rewriteCollisions, []string{workdir.SavedCollisionsFile}, true, once && !dry},
		{stage.EstimateConversionName, r.estimateConversion, nil, false, convert && dry},
		{stage.HashAgainName, r.hashAgain, after, true, !dry},
		{stage.VerifyName, r.verify, []string{workdir.Violations}, true, !dry},
		{stage.CDXName, r.updateCDX, nil, true, !dry && len(r.opt.CDX) > 0},
		{stage.AccountName, r.account, nil, false, true},
		{stage.CommitName, r.commitUnchanged, nil, true, crawl && !dry},
	}
	return slices.DeleteFunc(all, func(s step) bool { return !s.when })
}

// runSteps runs the stages not done yet, each one's outputs recorded as
// done in state.json when they are complete. The display is told the
// job's stages, for its whole-job progress; the report gets each stage:
// done now, done before (and by what), the one the run stopped in, and
// those it did not reach.
func (r *run) runSteps(ctx context.Context) error {
	steps := r.steps()
	plan := make([]progress.Step, len(steps))
	for i, s := range steps {
		plan[i] = progress.Step{Name: s.name, Weight: stepWeight(s.name)}
	}
	var bytes int64
	for _, in := range r.inputs {
		bytes += in.Size
	}
	r.show.Plan(plan, bytes)
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return r.stopAt(steps, i, 0, err)
		}
		if s.keep && r.state.done(s.name) && r.outputsExist(s.name) {
			r.show.Step(i, true)
			r.rep.Stages = append(r.rep.Stages, report.Stage{Name: s.name, Skipped: true, Note: r.state.doneBy(s.name)})
			if err := r.reload(s.name); err != nil {
				return r.stopAt(steps, i, 0, err)
			}
			continue
		}
		r.show.Step(i, false)
		start := time.Now()
		stopProfile := heapprof.Stage(s.name)
		note, err := s.do(ctx)
		stopProfile()
		if err != nil {
			return r.stopAt(steps, i, time.Since(start), err)
		}
		r.rep.Stages = append(r.rep.Stages, report.Stage{Name: s.name, Took: time.Since(start), Note: note})
		if s.keep {
			r.state.markDone(s.name, r.rep.Mode, r.rep.Generated)
			if err := writeState(r.wd, r.state); err != nil {
				return r.stopAt(steps, i+1, 0, err)
			}
			if err := r.removeConsumed(s.name); err != nil {
				return r.stopAt(steps, i+1, 0, err)
			}
		}
	}
	if !r.opt.DryRun {
		r.state.Complete = true
		r.state.RecordsBehind = r.recordsProblem != ""
		r.state.Stamps = r.stamps()
		// The job's intermediates are recorded removed in the same
		// state.json that says it is complete: a run killed before it
		// removed them leaves them recorded, and the next run, which
		// has nothing to do, removes them (finishRemoval). A job with its
		// records behind keeps them: the next run does the account again
		// to bring the records up to date, and it reads them.
		var gone []string
		if !r.state.RecordsBehind {
			gone = r.recordConsumed("")
		}
		if err := writeState(r.wd, r.state); err != nil {
			return err
		}
		return r.removeFiles(gone)
	}
	return nil
}

// stopAt records that the run stopped in its i-th stage (after took; i
// may be len(steps): after the last) with err: that stage is not done,
// those after it did not run, and the report says where and why. It
// returns err, naming the stage.
func (r *run) stopAt(steps []step, i int, took time.Duration, err error) error {
	if i >= len(steps) {
		r.rep.Stopped = fmt.Sprintf("stopped after its last stage: %v", err)
		return err
	}
	name := steps[i].name
	r.rep.Stages = append(r.rep.Stages, report.Stage{Name: name, Took: took, Stopped: true, Note: err.Error()})
	for _, s := range steps[i+1:] {
		r.rep.Stages = append(r.rep.Stages, report.Stage{Name: s.name, NotRun: true})
	}
	r.rep.Stopped = stage.StoppedIn(progress.StepNumber(i, len(steps)), name, err, r.opt.Command)
	return fmt.Errorf("%s: %w", name, err)
}

// stepWeight is a stage's cost as passes over the collection's bytes
// (the hash stage's 1), for the whole job's progress and time left:
// measured CPU seconds on a generated collection of 716 MB with 40% of
// duplicates (README, Speed): hash 1.8, resolve 1.5, rewrite 4.1; the
// sorts, the hash again (of the revisits written only), the verification
// and the account a few hundredths of the hash each.
func stepWeight(name string) float64 {
	switch name {
	case stage.HashName:
		return 1
	case stage.ResolveName:
		return 0.1
	case stage.CollideName, stage.RewriteCollisionName:
		return 0.05
	case stage.RewriteName:
		return 2.3
	case stage.CDXName, stage.CommitName, stage.JoinName:
		return 0.2
	case stage.HashAgainName, stage.VerifyName:
		return 0.1
	}
	return 0.05
}

// outputsExist checks that a stage marked done left its outputs.
func (r *run) outputsExist(name string) bool {
	i := slices.IndexFunc(r.steps(), func(s step) bool { return s.name == name })
	if i < 0 {
		return false
	}
	for _, f := range r.steps()[i].outputs {
		if !r.outputPresent(f) {
			return false
		}
	}
	return true
}

// The files a run keeps each stage's figures in, for a resumed run's
// report and exit status; and hash again's and verify's findings.
const (
	hashStats      = "hash.json"
	resolveStats   = "resolve.json"
	rewriteStats   = "rewrite.json"
	refusedStats   = "rewrite-refused.json" // the files the rewrite refused, by name
	verifyStats    = "verify.json"
	hashAgainStats = "hash-again.json"
	changesStats   = "changes.json"
)

// hashAgain is what the hash again stage found that the hash stage had
// not, kept for a resumed run's exit status.
type hashAgain struct {
	NewDamage int64    `json:"new_damage"`
	Messages  []string `json:"messages,omitempty"`
}

// reload recovers the figures of a stage an earlier run did. (Of the
// messages, only hash again's are kept: those of the others were the
// earlier run's to show.)
func (r *run) reload(name string) error {
	var err error
	switch name {
	case stage.ConvertName:
		err = r.reloadConvert()
	case stage.HashName:
		r.hashed.Stats, err = workdir.ReadJSON[warcsum.Stats](r.wd.File(hashStats))
	case stage.ResolveName:
		r.resolved.Stats, err = workdir.ReadJSON[collres.Stats](r.wd.File(resolveStats))
	case stage.CollideName:
		r.collided, err = workdir.ReadJSON[collideState](r.wd.File(collideStats))
	case stage.RewriteCollisionName:
		if r.rewroteCollisions.Stats, err = workdir.ReadJSON[refs.Stats](r.wd.File(rewriteCollideStats)); err == nil {
			var c collideRefused
			if c, err = workdir.ReadJSON[collideRefused](r.wd.File(rewriteCollideRefused)); errors.Is(err, os.ErrNotExist) {
				err = nil // a stage done before it was kept
			}
			r.rewroteCollisions.Refused, r.rewroteCollisions.RefusedFiles = c.Refused, c.RefusedFiles
		}
	case stage.RewriteName:
		if r.rewrote.Stats, err = workdir.ReadJSON[refs.Stats](r.wd.File(rewriteStats)); err == nil {
			if r.rewrote.RefusedFiles, err = workdir.ReadJSON[[]string](r.wd.File(refusedStats)); errors.Is(err, os.ErrNotExist) {
				err = nil // a stage done before it was kept
			}
		}
	case stage.VerifyName:
		if r.verified, err = workdir.ReadJSON[verify.Stats](r.wd.File(verifyStats)); err == nil {
			var ch changes
			if ch, err = workdir.ReadJSON[changes](r.wd.File(changesStats)); errors.Is(err, os.ErrNotExist) {
				err = nil // a stage done before it was kept
			}
			r.changes = &ch
		}
	case stage.HashAgainName:
		var h hashAgain
		if h, err = workdir.ReadJSON[hashAgain](r.wd.File(hashAgainStats)); errors.Is(err, os.ErrNotExist) {
			err = nil // a stage done before it was kept
		}
		r.newDamage, r.damagedAgain = h.NewDamage, h.Messages
	}
	return err
}

// messages are the stages' messages on the run's display and in its log.
type messages struct{ show *progress.Display }

func (m messages) Error(err error) { m.show.Print("warcdedup: error: %v", err) }
func (m messages) Warn(err error)  { m.show.Note("warcdedup: warning: %v", err) }
func (m messages) Note(format string, args ...any) {
	m.show.Log("warcdedup: note: "+format, args...)
}

// quietErrors are messages whose errors the stage keeps for the run to
// show (hash again's damage: only what the hash stage had not found).
type quietErrors struct{ messages }

func (quietErrors) Error(error) {}

// collect lists the collection's files, and notes those still being
// written that it passes over.
func (r *run) collect() ([]warcsum.Input, error) {
	inputs, open, err := r.coll.collect()
	r.inProgress = open
	return inputs, err
}

// hash is stage 1: every candidate response and existing revisit of the
// collection, with each response's status and media type.
func (r *run) hash(ctx context.Context) (string, error) {
	// A run or undo killed between renaming a file and logging it left
	// the entries in the log's journal: the log is completed first, so
	// that the listing made now is moved only by what follows it.
	size, err := rewritelog.Recover(r.wd.File(workdir.LogFile))
	if err != nil {
		return "", err
	}
	r.state.LogSizeAtHash = size
	res, err := r.list(ctx, stage.HashName, workdir.BeforeFile, workdir.FactsFile, workdir.HashedFiles, nil, messages{r.show})
	if err != nil {
		return "", err
	}
	r.hashed = res
	if err := workdir.WriteJSON(r.wd.File(hashStats), res.Stats); err != nil {
		return "", err
	}
	if r.opt.afterHash != nil {
		r.opt.afterHash()
	}
	return res.Note(), nil
}

// list runs the Hash stage over the collection's files as they are now,
// into a manifest (and facts) of the work directory; with stamps, the
// work file of that name first gets every file's stamp (see
// writeStamps); sums, if not nil, gets each file as read.
func (r *run) list(ctx context.Context, name, manifestName, factsName, stamps string, sums *stage.FileSums, msgs stage.Messages) (stage.HashResult, error) {
	inputs, err := r.collect()
	if err != nil {
		return stage.HashResult{}, err
	}
	if stamps != "" {
		if err := writeStamps(r.wd.File(stamps), inputs); err != nil {
			return stage.HashResult{}, err
		}
	}
	h := stage.Hash{Inputs: inputs, Algorithm: r.opt.Algorithm, Jobs: r.opt.Jobs, Cache: r.wd.File(workdir.CacheDir),
		Manifest: r.wd.File(manifestName), Messages: msgs, Compress: true}
	if factsName != "" {
		h.Facts = r.wd.File(factsName)
	}
	if r.crawl != nil {
		// The cache keeps each file's SHA-256 from here, for the commit.
		h.OnFile = func(warcsum.Input, string) {}
	}
	if sums != nil {
		h.OnFile = sums.Add
	}
	if name == stage.HashName && !r.opt.DryRun {
		// The index lines of the WACZ members, for their packages'
		// rebuild (wacz.go: memberLines).
		h.MemberLines = &wacz.LineStore{Dir: r.wd.File(workdir.MemberLinesDir)}
	}
	// The WARC members of packages not compared with their
	// datapackage.json yet are, from the bytes the stage reads (wacz.go).
	return r.coll.wacz.hash(ctx, r.show, name, h, func() ([]warcsum.Input, error) {
		inputs, err := r.collect()
		if err == nil && stamps != "" {
			err = writeStamps(r.wd.File(stamps), inputs)
		}
		if err == nil && r.rep != nil {
			// The packages left out are among the files not read.
			r.rep.FilesNotDeduplicated = notReadNow(r.rep.FilesNotDeduplicated, r.inProgress, r.coll.others)
		}
		return inputs, err
	})
}

// sorter is the system sort as the run runs it: its temporary files in
// the work directory, the buffer and threads asked for.
func (r *run) sorter() syssort.Sorter {
	return syssort.Sorter{TempDir: r.wd.File(workdir.TmpDir), Memory: r.opt.SortMemory, Parallel: r.opt.Jobs, Compress: syssort.Compressor()}
}

// sortFile sorts one work file into another, which appears only when
// complete.
func (r *run) sortFile(ctx context.Context, from, to, command string) error {
	return r.wd.Sort(ctx, r.show, r.sorter(), from, to, command)
}

// sortByDigest orders the manifest for the resolution (and keeps the
// slice of its digests a job on one resolves).
func (r *run) sortByDigest(ctx context.Context) (string, error) {
	if err := r.sortFile(ctx, workdir.BeforeFile, workdir.ByDigestFile, manifest.ByDigest.Command); err != nil || r.opt.Digests == nil {
		return "", err
	}
	return "", r.writeSlice(ctx)
}

// resolve is stages 2 and 3: duplicates proved byte for byte, the copies
// numbered.
func (r *run) resolve(ctx context.Context) (string, error) {
	input := workdir.ByDigestFile
	switch {
	case r.crawl != nil:
		input = workdir.JoinedFile
	case r.opt.Digests != nil:
		input = workdir.SliceFile
	}
	in, err := os.Open(r.wd.File(input))
	if err != nil {
		return "", err
	}
	defer in.Close()
	// Nothing replaces the files while they are compared: they are kept
	// open between records.
	files := r.coll.locator().Files(source.KeptOpen)
	defer files.Close()
	show := r.show.Start(stage.ResolveName, "", 0)
	s := stage.Resolve{In: manifest.NewReader(in, r.wd.File(input)), Out: r.wd.File(workdir.NumberedFile), Source: r.coll.wacz.opener(files),
		Policy: r.opt.Policy, Jobs: r.opt.Jobs, Total: r.hashed.Stats.Listed, Messages: messages{r.show}, Meter: show,
		FromManifest: r.compareOnce()}
	if r.crawl != nil {
		s.Kept = r.crawl.committedLine
	}
	res, err := s.Run(ctx)
	show.End(err, "")
	if err != nil {
		return "", err
	}
	r.resolved = res
	if err := workdir.WriteJSON(r.wd.File(resolveStats), res.Stats); err != nil {
		return "", err
	}
	return res.Note(), nil
}

// sortByFile orders the numbered manifest, and the facts, for the rewrite
// and the account: the two sorts at once, as neither reads the other's
// file (the job waited for the second, one core idle, before the rewrite
// could start), each with half the buffer and threads of one.
func (r *run) sortByFile(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	half := r.sorter().Share(2)
	facts := make(chan error, 1)
	go func() {
		facts <- r.wd.Sort(ctx, r.show, half, workdir.FactsFile, workdir.FactsByFile, manifest.ByFile.Command)
	}()
	err := r.wd.Sort(ctx, r.show, half, workdir.NumberedFile, workdir.ByFileFile, manifest.ByFile.Command)
	if err != nil {
		cancel()
	}
	if ferr := <-facts; err == nil {
		err = ferr
	}
	return "", err
}

// rewrite is stage 4: the duplicates become revisits, in place, or what
// it would do is measured.
func (r *run) rewrite(ctx context.Context) (string, error) {
	if !r.opt.DryRun {
		// From here on the files change: the manifests before must not be
		// made again, whatever happens.
		r.state.Done = append(r.state.Done, stageRewriteStarted)
		if err := writeState(r.wd, r.state); err != nil {
			return "", err
		}
	}
	// The files it rewrites were listed, their directories locked,
	// before: a listing from here on (hash again, the commit) only reads,
	// and a directory made since is none of the job's to refuse it for.
	r.coll.locks = nil
	table, err := manifest.OpenTable(r.wd.File(workdir.NumberedFile))
	if err != nil {
		return "", err
	}
	defer table.Close()
	in, err := os.Open(r.wd.File(workdir.ByFileFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	var total int64
	for _, in := range r.inputs {
		total += in.Size
	}
	loc := r.coll.locator()
	show := r.show.Start(stage.RewriteName, "", 0)
	s := stage.Rewrite{In: manifest.NewReader(in, r.wd.File(workdir.ByFileFile)), Originals: []*manifest.Table{table}, Open: loc,
		Roots: loc.Roots, Prefixes: loc.Prefixes, Log: r.wd.File(workdir.LogFile), LogFrom: r.state.LogSizeAtHash,
		DryRun: r.opt.DryRun, HardLinks: r.opt.HardLinks, SHA256: r.crawl != nil, Policy: r.opt.Policy, Jobs: r.opt.Jobs,
		Cache: r.wd.File(workdir.CacheDir), Algorithm: r.opt.Algorithm, Saved: r.wd.File(workdir.SavedFile), Total: total,
		Messages: messages{r.show}, Meter: show}
	if r.compareOnce() {
		// Resolve read nothing: a duplicate its original does not match
		// stays as it is, for the collisions stages.
		s.Apart = r.wd.File(workdir.ApartFile)
		if r.opt.DryRun {
			s.Apart = r.wd.File(workdir.TmpDir + "/apart-dry.manifest")
		}
	}
	res, err := r.runRewrite(ctx, &s)
	show.End(err, "")
	if err != nil {
		return "", err
	}
	r.rewrote = res
	if err := workdir.WriteJSON(r.wd.File(rewriteStats), res.Stats); err != nil {
		return "", err
	}
	if err := workdir.WriteJSON(r.wd.File(refusedStats), res.RefusedFiles); err != nil {
		return "", err
	}
	return res.Note(r.opt.DryRun), nil
}

// hashAgain lists the collection again, the first half of stage 5: of
// the files the rewrite replaced, only the revisits written are read; the
// others are known unchanged. The damage and unreadable files the hash
// stage reported are not reported again (the cache gives their messages
// anew); only what it had not found is.
func (r *run) hashAgain(ctx context.Context) (string, error) {
	var sums *stage.FileSums
	if r.crawl != nil {
		// The crawl's files as committed: their SHA-256, for the commit.
		sums = &stage.FileSums{}
	}
	res, err := r.list(ctx, stage.HashAgainName, workdir.AfterFile, "", "", sums, quietErrors{messages{r.show}})
	if err != nil {
		return "", err
	}
	st, before := &res.Stats, &r.hashed.Stats
	r.newDamage = max(st.Damaged+st.FilesFailed-before.Damaged-before.FilesFailed, 0)
	if r.newDamage > 0 {
		for _, m := range res.Damaged {
			if !slices.Contains(r.hashed.Damaged, m) {
				r.damagedAgain = append(r.damagedAgain, m)
				r.show.Print("warcdedup: error: %s", m)
			}
		}
	}
	if err := workdir.WriteJSON(r.wd.File(hashAgainStats), hashAgain{NewDamage: r.newDamage, Messages: r.damagedAgain}); err != nil {
		return "", err
	}
	if sums != nil {
		if err := sums.Write(r.wd.File(workdir.AfterFilesFile)); err != nil {
			return "", err
		}
	}
	return res.AgainNote(), nil
}

// verify is the second half of stage 5: nothing was lost (warcsumcmp).
func (r *run) verify(ctx context.Context) (string, error) {
	// Files another process changed since the hash stage hold records
	// this job never listed and lost none of: they are left out.
	replaced, err := r.replacedSinceHash()
	if err != nil {
		return "", err
	}
	if r.changes, err = r.changesSinceHash(replaced); err != nil {
		return "", err
	}
	if err := workdir.WriteJSON(r.wd.File(changesStats), r.changes); err != nil {
		return "", err
	}
	beforeName := r.wd.File(workdir.BeforeFile)
	if gone := slices.Concat(r.changes.Changed, r.changes.Removed); len(gone) > 0 {
		for _, n := range gone {
			r.show.Log("warcdedup: note: %s changed or was removed since the hash stage, not by this job: its records are left out of the verification", n)
		}
		beforeName = r.wd.File(workdir.TmpDir + "/before-unchanged.manifest")
		if err := withoutFiles(r.wd.File(workdir.BeforeFile), beforeName, gone); err != nil {
			return "", err
		}
		defer os.Remove(beforeName)
	}
	for _, n := range r.changes.Added {
		r.show.Log("warcdedup: note: %s was added since the hash stage: it is not part of this job", n)
	}
	before, err := gzfile.Open(beforeName)
	if err != nil {
		return "", err
	}
	defer before.Close()
	after, err := gzfile.Open(r.wd.File(workdir.AfterFile))
	if err != nil {
		return "", err
	}
	defer after.Close()
	show := r.show.Start(stage.VerifyName, "", 0)
	v := stage.Verify{Before: manifest.NewReader(before, beforeName), After: manifest.NewReader(after, r.wd.File(workdir.AfterFile)),
		Violations: r.wd.File(workdir.Violations), Total: r.hashed.Stats.Listed, Messages: messages{r.show}, Meter: show, Sort: r.sorter()}
	// With an index, revisits may refer to the committed originals joined,
	// as the resolution found them (URI and date as their records spell
	// them).
	if r.crawl != nil {
		name, err := r.crawl.resolvedOriginals(r.wd)
		if err != nil {
			return "", err
		}
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		v.External = manifest.NewReader(f, name)
	}
	// The account reads its work files meanwhile (its own inputs are
	// ready): verify holds one core most of its time.
	if r.readAhead(ctx) {
		// Its sorts and verify's run at once: each half the job's.
		v.Sort = v.Sort.Share(2)
	}
	st, err := v.Run(ctx)
	show.End(err, "")
	if err != nil {
		r.stopAhead()
		return "", err
	}
	r.verified = st
	if err := workdir.WriteJSON(r.wd.File(verifyStats), st); err != nil {
		r.stopAhead()
		return "", err
	}
	return stage.VerifyNote(st), nil
}

// finish sets the exit status and its reasons, and writes the reports:
// the run's own, and the work directory's with every run.
func (r *run) finish(err error) {
	rep := r.rep
	stage.Finish(rep, err, r.reasons())
	// The report, also of a run that stopped, is written when it can be:
	// the run's own, and the work directory's with every run.
	if err := stage.WriteReport(r.wd.File(r.runDir), rep); err != nil {
		r.show.Print("warcdedup: error: writing the run's report: %v", err)
	}
	if err := collectionReport(context.Background(), r.wd, rep); err != nil {
		r.show.Print("warcdedup: error: writing the work directory's report: %v", err)
	}
}

// resolvedAll is what the resolution left out, with the stale lines of
// the collisions stage: the job's stale lines, in its report and exit
// reasons, as warcdedup cluster counts them.
func (r *run) resolvedAll() stage.ResolveResult {
	return r.resolved.WithCollided(&r.collided.Result)
}

// reasons are why the exit status is not 0.
func (r *run) reasons() []string {
	rep := r.rep
	var reasons []string
	reasons = append(reasons, stage.ConvertReasons(rep.Conversion)...)
	reasons = append(reasons, r.hashed.Reasons()...)
	if r.newDamage > 0 {
		reasons = append(reasons, fmt.Sprintf("%s damaged records or unreadable files that the hash stage had not found (hash again stage; see %s)", progress.Count(r.newDamage), workdir.RunLog))
		reasons = append(reasons, stage.First(r.damagedAgain, 5)...)
	}
	resolved := r.resolvedAll()
	reasons = append(reasons, resolved.Reasons()...)
	reasons = append(reasons, r.rewrote.Reasons()...)
	reasons = append(reasons, r.rewroteCollisions.Reasons()...)
	reasons = append(reasons, r.coll.wacz.reasons()...)
	if len(r.indexRefused) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d indexes left untouched (update indexes stage; see %s)", len(r.indexRefused), workdir.RunLog))
		reasons = append(reasons, stage.First(r.indexRefused, 5)...)
	}
	if c := r.changes; c != nil {
		if n := len(c.Changed); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files changed since the hash stage, not by this job: their records were not this job's and were left out of its verification; the next run takes them as they are (see %s)", n, workdir.RunLog))
			reasons = append(reasons, stage.First(c.Changed, 5)...)
		}
		if n := len(c.Removed); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files removed since the hash stage: their records were left out of the verification (see %s)", n, workdir.RunLog))
			reasons = append(reasons, stage.First(c.Removed, 5)...)
		}
		if n := len(c.Added); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files added since the hash stage: not part of this job; the next run takes them", n))
			reasons = append(reasons, stage.First(c.Added, 5)...)
		}
		if r.uncommitted {
			reasons = append(reasons, "the crawl was not committed to the index: the next run deduplicates it as it is now and commits it")
		}
	}
	reasons = append(reasons, stage.VerifyReasons(r.verified)...)
	if r.recordsProblem != "" {
		reasons = append(reasons, "the work directory's fixity.tsv and deps.tsv were not brought up to date: "+r.recordsProblem+
			" (what the run did stands; the same command again brings them up to date once that is mended)")
	}
	return reasons
}

// inProgressNote says, after a sentence, which files still being written
// were passed over, if any.
func (r *run) inProgressNote() string {
	if len(r.inProgress) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s still being written, not read: %s)", progress.Count(int64(len(r.inProgress))), inline(r.inProgress, 3))
}

// inline is the first n of s in a sentence: "a, b, c and 4 more".
func inline(s []string, n int) string {
	text := strings.Join(s[:min(n, len(s))], ", ")
	if more := len(s) - n; more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}

// commitUnchanged commits the crawl (see commit) unless its files changed
// since the hash stage, not by the job, or the rewrite left WACZ packages
// unfinished: what the job verified is then not the crawl as it is, or
// will be. The job completes without it; the next run, a new job on the
// crawl as it is now, commits it.
func (r *run) commitUnchanged(ctx context.Context) (string, error) {
	if c := r.changes; c != nil && len(c.Added)+len(c.Changed)+len(c.Removed) > 0 {
		r.uncommitted = true
		return "not committed: the crawl's files changed since the hash stage; the next run takes the crawl as it is and commits it", nil
	}
	// A package the rewrite left as it was has its members' new versions
	// beside it, which the next run puts in: committed so, the crawl
	// would change after its commit, and every run after refuse it.
	// Other refusals (a requirer left stale) change nothing the next run
	// would find: left uncommitted for them, the crawl's files unchanged,
	// every run after took the job as complete and never committed it.
	if w := r.coll.wacz; w != nil && w.rebuilt.Left > 0 {
		r.uncommitted = true
		return fmt.Sprintf("not committed: %d WACZ packages were left as they were, their members' new versions beside them; the next run finishes them and commits the crawl", w.rebuilt.Left), nil
	}
	return r.commit(ctx)
}

// checkWritable finds, before anything is read, the directories of the
// collection where no file can be replaced (a new version is written
// beside a file and renamed over it): a read-only file system, or a
// directory this user may not write. If none can be written the job
// stops; if some, it says which, and their files will be refused.
func (r *run) checkWritable() error {
	var dirs []string
	for _, in := range r.inputs {
		if d := filepath.Dir(in.Path); len(dirs) == 0 || dirs[len(dirs)-1] != d {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var refused []string
	for _, d := range dirs {
		if err := syscall.Access(d, unixWrite|unixSearch); err != nil {
			refused = append(refused, fmt.Sprintf("%s (%v)", d, err))
		}
	}
	switch {
	case len(refused) == 0:
		return nil
	case len(refused) == len(dirs):
		return fmt.Errorf("nothing in %s can be rewritten: no new version of a file can be written beside it in %s: run as a user who may write there, or see what a run would do with warcdedup assess, which writes nothing there",
			strings.Join(r.opt.Collections, ", "), inline(refused, 3))
	}
	r.show.Print("warcdedup: warning: %d of the %d directories of the collection cannot be written: their files will be refused and left untouched: %s",
		len(refused), len(dirs), inline(refused, 3))
	return nil
}

// The modes of access(2) checkWritable asks for.
const (
	unixWrite  = 0x2 // W_OK
	unixSearch = 0x1 // X_OK
)

// stamps records every input's stamp as the job completes, but those of
// the files that changed since the hash stage (not by the job) or were
// added, and of those the rewrite refused: the next run finds them
// changed, and takes them (a refusal may have passed since: the writer
// that had the file open closed it, --hard-links is given).
func (r *run) stamps() map[string]string {
	m := map[string]string{}
	inputs, err := r.collect()
	if err != nil {
		return nil
	}
	left := r.changes.excluded()
	for _, n := range slices.Concat(r.rewrote.RefusedFiles, r.rewroteCollisions.RefusedFiles) {
		left[n] = true
	}
	for _, in := range inputs {
		if left[in.Name] {
			continue
		}
		if s, ok := inputStamp(in); ok {
			m[in.Name] = s
		}
	}
	return m
}

// unchanged reports whether the collection's files are those the
// completed job left: the same names, each with the same stamp.
func (r *run) unchanged() bool {
	if len(r.state.Stamps) != len(r.inputs) {
		return false
	}
	for _, in := range r.inputs {
		s, ok := inputStamp(in)
		if !ok || r.state.Stamps[in.Name] != s {
			return false
		}
	}
	return true
}

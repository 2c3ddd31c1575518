package dedup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/collres"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/refs"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

// Options of a job.
type Options struct {
	Collections []string // directories; file names are relative to each
	WorkDir     string   // "" for DefaultWorkDir of the first collection
	DryRun      bool     // do everything but rewrite; report what would be
	Jobs        int      // files or clusters at once
	Algorithm   digest.Algorithm
	Policy      policy.Policy
	SortMemory  string // sort's buffer (sort -S), e.g. "1G" or "25%"; "" for sort's default
	HardLinks   bool   // rewrite files with several names (see refs.Rewriter)
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
}

// The stages of a job, in order.
const (
	stageHash    = "hash"
	stageSort    = "sort by digest"
	stageResolve = "resolve and number"
	stageSortF   = "sort by file"
	stageRewrite = "rewrite"
	stageAfter   = "hash again"
	stageVerify  = "verify"
	stageJoin    = "join the index"
	stageIndexes = "update indexes"
	stageCommit  = "commit"
	stageAccount = "account"
	// stageRewriteStarted marks a job whose rewrite began: the files
	// changed from then on, and the manifests before must not be made
	// again.
	stageRewriteStarted = "rewrite started"
)

// Job is one run of the job on a collection.
type Job struct {
	opt    Options
	wd     *WorkDir
	state  *State
	show   *progress.Display
	inputs []warcsum.Input
	rep    *report.Report

	hashed   warcsum.Stats
	resolved collres.Stats
	rewrote  refs.Stats
	verified verify.Stats
	refused  []string // files left untouched, and why
	stale    []string // lines left out, and why (the first ones)
	damaged  []string // damage reported, the first ones
	// newDamage counts the damaged records and unreadable files the hash
	// again stage found beyond the hash stage's; damagedAgain names the
	// first ones.
	newDamage    int64
	damagedAgain []string
	// changes are the files that changed since the hash stage, not by the
	// job (found by the verify stage).
	changes *changes
	mu      sync.Mutex // of the lists of messages
	// inProgress are the files a crawler is still writing (".open") that
	// the last listing of the collection passed over.
	inProgress []string
	// indexRefused says why each index --cdx named was left untouched.
	indexRefused []string
	// crawl is the crawl index mode; nil without an index.
	crawl *crawlMode
	// runDir is the directory of the run's own records, relative to the
	// work directory ("" for none: see runFile).
	runDir string
	// recordsProblem is why the work directory's records of the
	// collection could not be brought up to date, if they could not.
	recordsProblem string
	// uncommitted: the crawl was not committed, its files having changed
	// since the hash stage.
	uncommitted bool
}

// Result is what a job did, for the summary and the exit status.
type Result struct {
	Report      *report.Report
	WorkDir     string
	RunDir      string // the run's own records, relative to WorkDir ("" when it had nothing to do)
	NothingToDo bool   // a rerun of a complete job on unchanged files
}

// Run runs the job, resuming what an earlier run of it left unfinished.
// The error is one that stopped it; what it did is in the Result's report
// either way, with the exit status and its reasons.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if len(opt.Collections) == 0 {
		return nil, errors.New("no collection given")
	}
	for i, c := range opt.Collections {
		fi, err := os.Stat(c)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory: a collection is a directory of WARC and ARC files", c)
		}
		if opt.Collections[i], err = filepath.Abs(c); err != nil {
			return nil, err
		}
	}
	if opt.Algorithm == 0 {
		opt.Algorithm = digest.SHA1
	}
	var crawl *crawlMode
	if opt.Index != "" && opt.Digests != nil {
		return nil, errors.New("a slice of the digests is for assessing a collection, not a crawl of an index")
	}
	if opt.Index != "" {
		var err error
		if crawl, err = openCrawlMode(&opt); err != nil {
			return nil, err
		}
		defer crawl.close()
		if opt.WorkDir == "" {
			// The index keeps its crawls' work directories.
			opt.WorkDir = filepath.Join(crawl.index.Dir, "work", crawl.name)
		}
	}
	if opt.WorkDir == "" {
		opt.WorkDir = DefaultWorkDir(opt.Collections[0])
	}
	opt.Jobs = max(opt.Jobs, 1)
	wd, err := OpenWorkDir(opt.WorkDir)
	if err != nil {
		return nil, err
	}
	defer wd.Close()
	runLog, err := os.OpenFile(wd.File(RunLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer runLog.Close()
	show := opt.Display
	if show == nil {
		show = progress.NewPlain(io.Discard, "warcdedup")
	}
	show.Tee(runLog)
	defer show.Tee(nil)

	j := &Job{opt: opt, wd: wd, show: show, crawl: crawl}
	if j.state, err = wd.readState(); err != nil {
		return nil, err
	}
	params := Params{Collections: opt.Collections, Algorithm: opt.Algorithm.String(), Policy: opt.Policy.String(), Files: filesKey(opt.Files)}
	if opt.Digests != nil {
		// A job on a slice of the digests is another job too.
		params.Files += " digests " + opt.Digests.Key
	}
	if crawl != nil {
		params.Index, params.Crawl = crawl.index.Dir, crawl.name
	}
	if !j.state.Params.equal(params) {
		// Another job's outputs (other collections, algorithm or policy):
		// start from the first stage; the log and the cache stay.
		j.state = &State{Params: params}
	}

	if j.inputs, err = j.collect(); err != nil {
		return nil, err
	}
	for _, p := range j.inProgress {
		show.Log("warcdedup: note: %s: skipped: still being written (its name ends in .open); a run after its writer has closed and renamed it takes it", p)
	}
	if len(j.inputs) == 0 {
		return nil, fmt.Errorf("no WARC or ARC file found in %s%s", strings.Join(opt.Collections, ", "), j.inProgressNote())
	}
	if j.crawl != nil {
		if res, err := j.crawl.begin(j); res != nil || err != nil {
			return res, err
		}
	}
	switch {
	case j.state.Complete:
		if j.unchanged() {
			rep, err := readReport(wd.File(StatsFile))
			if err == nil {
				rep.Totals.FilesInProgress = int64(len(j.inProgress)) // as they are now
				return &Result{Report: rep, WorkDir: wd.Path, NothingToDo: true}, nil
			}
		}
		// The collection changed since the job completed: a new job on it.
		j.state = &State{Params: params}
	case j.state.done(stageHash) && !j.state.done(stageRewriteStarted):
		// Hashed by assess or an interrupted run: what changed since is
		// hashed again (the cache has the rest), and all that follows
		// done anew.
		ch, err := j.changesSinceHash(nil)
		if err != nil {
			return nil, err
		}
		if !ch.none() {
			show.Note("warcdedup: the collection changed since it was hashed (by assess or an interrupted run): %s; hashing again what changed", ch)
			j.state = &State{Params: params}
		}
	}
	if !opt.DryRun {
		if err := j.checkWritable(); err != nil {
			return nil, err
		}
	}
	show.Note("warcdedup: %s %s, work directory %s", map[bool]string{true: "dry run on", false: "deduplicating"}[opt.DryRun],
		strings.Join(opt.Collections, ", "), wd.Path)
	j.rep = &report.Report{Title: "Deduplication of " + strings.Join(opt.Collections, ", "), Generated: time.Now().UTC(),
		Mode: "run", Collections: opt.Collections, Policy: opt.Policy.String(), Algorithm: opt.Algorithm.String()}
	if opt.DryRun {
		j.rep.Mode = "dry run"
	}
	if j.runDir, err = wd.newRunDir(j.rep.Generated, j.rep.Mode); err != nil {
		return nil, err
	}
	err = j.stages(ctx)
	j.finish(err)
	return &Result{Report: j.rep, WorkDir: wd.Path, RunDir: j.runDir}, err
}

// hashAgain is what the hash again stage found that the hash stage had
// not, kept for a resumed run's exit status.
type hashAgain struct {
	NewDamage int64    `json:"new_damage"`
	Messages  []string `json:"messages,omitempty"`
}

// hashAgainStats is where it is kept; changesStats where the verify stage
// keeps the changes it found.
const (
	hashAgainStats = "hash-again.json"
	changesStats   = "changes.json"
)

// stage is one step of the job.
type stage struct {
	name string
	run  func(ctx context.Context) (note string, err error)
	// keep: the stage's outputs stay valid once it is done (a resumed job
	// does not run it again).
	keep bool
}

func (j *Job) stages(ctx context.Context) error {
	all := []stage{
		{stageHash, j.hash, true},
		{stageSort, j.sortByDigest, true},
	}
	if j.crawl != nil {
		all = append(all, stage{stageJoin, j.joinIndex, true})
	}
	all = append(all, []stage{
		{stageResolve, j.resolve, true},
		{stageSortF, j.sortByFile, true},
		{stageRewrite, j.rewrite, !j.opt.DryRun},
	}...)
	if !j.opt.DryRun {
		all = append(all, stage{stageAfter, j.hashAfter, true}, stage{stageVerify, j.verify, true})
		if len(j.opt.CDX) > 0 {
			all = append(all, stage{stageIndexes, j.updateIndexes, true})
		}
	}
	all = append(all, stage{stageAccount, j.account, false})
	if j.crawl != nil && !j.opt.DryRun {
		all = append(all, stage{stageCommit, j.commitUnchanged, true})
	}
	for _, s := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.keep && j.state.done(s.name) && j.outputsExist(s.name) {
			j.rep.Stages = append(j.rep.Stages, report.Stage{Name: s.name, Skipped: true, Note: "done by an earlier run"})
			if err := j.reload(s.name); err != nil {
				return err
			}
			continue
		}
		start := time.Now()
		note, err := s.run(ctx)
		j.rep.Stages = append(j.rep.Stages, report.Stage{Name: s.name, Took: time.Since(start), Note: note})
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if s.keep {
			j.state.Done = append(j.state.Done, s.name)
			if err := j.wd.writeState(j.state); err != nil {
				return err
			}
		}
	}
	if !j.opt.DryRun {
		j.state.Complete = true
		j.state.Stamps = j.stamps()
		return j.wd.writeState(j.state)
	}
	return nil
}

// outputsExist checks that a stage marked done left its outputs.
func (j *Job) outputsExist(stage string) bool {
	var files []string
	switch stage {
	case stageHash:
		files = []string{BeforeFile, FactsFile}
	case stageSort:
		files = []string{ByDigestFile}
		if j.opt.Digests != nil {
			files = append(files, SliceFile)
		}
	case stageJoin:
		files = []string{JoinedFile}
	case stageResolve:
		files = []string{NumberedFile}
	case stageSortF:
		files = []string{ByFileFile, FactsByFile}
	case stageRewrite:
		files = []string{SavedFile}
	case stageAfter:
		files = []string{AfterFile}
		if j.crawl != nil {
			files = append(files, afterFilesFile)
		}
	case stageVerify:
		files = []string{Violations}
	}
	for _, f := range files {
		if _, err := os.Stat(j.wd.File(f)); err != nil {
			return false
		}
	}
	return true
}

// reload recovers the figures of a stage an earlier run did.
func (j *Job) reload(stage string) error {
	var err error
	switch stage {
	case stageHash:
		j.hashed, err = readJSON[warcsum.Stats](j.wd.File("hash.json"))
	case stageResolve:
		j.resolved, err = readJSON[collres.Stats](j.wd.File("resolve.json"))
	case stageRewrite:
		j.rewrote, err = readJSON[refs.Stats](j.wd.File("rewrite.json"))
	case stageVerify:
		if j.verified, err = readJSON[verify.Stats](j.wd.File("verify.json")); err == nil {
			var ch changes
			if ch, err = readJSON[changes](j.wd.File(changesStats)); errors.Is(err, os.ErrNotExist) {
				err = nil // a stage done before it was kept
			}
			j.changes = &ch
		}
	case stageAfter:
		var h hashAgain
		if h, err = readJSON[hashAgain](j.wd.File(hashAgainStats)); errors.Is(err, os.ErrNotExist) {
			err = nil // a stage done before it was kept
		}
		j.newDamage, j.damagedAgain = h.NewDamage, h.Messages
	}
	return err
}

// locator finds the collection's files, each beneath its root; with an
// index, the files of every crawl, named CRAWL/PATH.
func (j *Job) locator() *source.Locator {
	if j.crawl != nil {
		return &source.Locator{Prefixes: j.crawl.prefixes()}
	}
	return &source.Locator{Roots: j.opt.Collections}
}

// collect lists the collection's files (see crawlMode.collect with an
// index), only those of Options.Files when it is set, and notes the files
// still being written that it passes over.
func (j *Job) collect() ([]warcsum.Input, error) {
	var inputs []warcsum.Input
	var err error
	var open []string
	col := warcsum.Collector{Recursive: true, InProgress: func(p string) { open = append(open, p) }}
	if j.crawl != nil {
		inputs, err = j.crawl.collect(col)
	} else {
		inputs, err = col.Collect(j.opt.Collections)
	}
	j.inProgress = open
	if err != nil || j.opt.Files == nil {
		return inputs, err
	}
	return slices.DeleteFunc(inputs, func(in warcsum.Input) bool { return !j.opt.Files[in.Name] }), nil
}

// hash lists every candidate response and existing revisit of the
// collection (stage 1), with each response's status and media type.
func (j *Job) hash(ctx context.Context) (string, error) {
	// A run or undo killed between renaming a file and logging it left
	// the entries in the log's journal: the log is completed first, so
	// that the listing made now is moved only by what follows it.
	size, err := rewritelog.Recover(j.wd.File(LogFile))
	if err != nil {
		return "", err
	}
	j.state.LogSizeAtHash = size
	st, err := j.sumWith(ctx, BeforeFile, FactsFile, stageHash, HashedFiles, func(err error) {
		j.keep(&j.damaged, err)
		j.show.Print("warcdedup: error: %v", err)
	})
	if err != nil {
		return "", err
	}
	j.hashed = st
	if err := writeJSON(j.wd.File("hash.json"), st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s files, %s records listed, %s damaged, %s files known unchanged",
		progress.Count(st.Files), progress.Count(st.Listed), progress.Count(st.Damaged), progress.Count(st.Cached)), nil
}

// sum runs warcsum over the collection into a manifest (and facts) of the
// work directory, through the per-file cache; the damage it finds is
// printed and the first of it kept for the exit reasons.
func (j *Job) sum(ctx context.Context, manifestName, factsName, stageName string) (warcsum.Stats, error) {
	return j.sumWith(ctx, manifestName, factsName, stageName, "", func(err error) {
		j.keep(&j.damaged, err)
		j.show.Print("warcdedup: error: %v", err)
	})
}

// keep adds a message to the first ones of a list (workers report
// damage at once).
func (j *Job) keep(list *[]string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(*list) < 100 {
		*list = append(*list, err.Error())
	}
}

// sumWith is sum, damage getting each damaged record and unreadable file;
// with stamps, the work file of that name gets every file's stamp before
// it is read (see writeStamps).
func (j *Job) sumWith(ctx context.Context, manifestName, factsName, stageName, stamps string, damage func(error)) (warcsum.Stats, error) {
	opt := j.sumOptions()
	opt.Damage = damage
	opt.Warn = func(err error) {}
	cache, err := warcsum.NewCache(j.wd.File(cacheDir), opt)
	if err != nil {
		return warcsum.Stats{}, err
	}
	inputs, err := j.collect()
	if err != nil {
		return warcsum.Stats{}, err
	}
	if stamps != "" {
		if err := writeStamps(j.wd.File(stamps), inputs); err != nil {
			return warcsum.Stats{}, err
		}
	}
	var total int64
	for _, in := range inputs {
		total += in.Size
	}
	out, err := atomicfile.Create(j.wd.File(manifestName), 0o644)
	if err != nil {
		return warcsum.Stats{}, err
	}
	defer out.Abort()
	var facts *atomicfile.File
	if factsName != "" {
		if facts, err = atomicfile.Create(j.wd.File(factsName), 0o644); err != nil {
			return warcsum.Stats{}, err
		}
		defer facts.Abort()
	}
	show := j.show.Start(stageName, "bytes", total)
	var prog warcsum.Progress
	r := warcsum.Runner{Options: opt, Jobs: j.opt.Jobs, Progress: &prog, Cache: cache,
		OnFileError: func(in warcsum.Input, err error) { damage(err) }}
	if facts != nil {
		r.Facts = facts
	}
	if j.crawl != nil {
		r.OnFile = func(in warcsum.Input, sum string) { j.crawl.sums[in.Name] = sum }
	}
	stop := follow(&prog.Bytes, show)
	st, err := r.Run(inputs, out)
	stop()
	show.Done("")
	if err != nil {
		return st, err
	}
	if err := out.CommitRenamed(); err != nil {
		return st, err
	}
	if facts != nil {
		if err := facts.CommitRenamed(); err != nil {
			return st, err
		}
	}
	if st.Records == 0 {
		return st, errors.New("the collection's files hold no record")
	}
	return st, ctx.Err()
}

// sumOptions are the options the collection is listed with, in both hash
// stages and the entries the rewrite derives.
func (j *Job) sumOptions() warcsum.Options {
	return warcsum.Options{Algorithm: j.opt.Algorithm}
}

// follow copies a counter into a stage's progress until stopped.
func follow(from interface{ Load() int64 }, s *progress.Stage) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-done:
				if n := from.Load(); n > last {
					s.Add(n - last)
				}
				return
			case <-t.C:
				if n := from.Load(); n > last {
					s.Add(n - last)
					last = n
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// sortByDigest orders the manifest for resolution (stage 2's input).
func (j *Job) sortByDigest(ctx context.Context) (string, error) {
	if err := j.sortFile(ctx, BeforeFile, ByDigestFile, manifest.ByDigest.Command); err != nil || j.opt.Digests == nil {
		return "", err
	}
	return "", j.writeSlice(ctx)
}

// sortFile runs the system sort (LC_ALL=C, temporary files in the work
// directory, the buffer size asked for) from one work file to another,
// which appears only when complete.
func (j *Job) sortFile(ctx context.Context, from, to, command string) error {
	show := j.show.Start("sort "+filepath.Base(to), "files", 1)
	defer show.Done("")
	return Sort(ctx, SortOptions{TempDir: j.wd.File(tmpDir), Memory: j.opt.SortMemory, Parallel: j.opt.Jobs},
		command, j.wd.File(from), j.wd.File(to))
}

// resolve proves duplicates byte for byte and numbers the copies (stages 2
// and 3 in one pass).
func (j *Job) resolve(ctx context.Context) (string, error) {
	input := ByDigestFile
	switch {
	case j.crawl != nil:
		input = JoinedFile
	case j.opt.Digests != nil:
		input = SliceFile
	}
	in, err := os.Open(j.wd.File(input))
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := atomicfile.Create(j.wd.File(NumberedFile), 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	show := j.show.Start(stageResolve, "lines", j.hashed.Listed)
	var prog collres.Progress
	// Nothing replaces the files while they are compared: they are kept
	// open between records.
	files := j.locator().Files(source.KeptOpen)
	defer files.Close()
	res := collres.Resolver{Source: files, Policy: j.opt.Policy, Jobs: j.opt.Jobs, Number: true, Progress: &prog,
		Stale: func(err error) {
			if len(j.stale) < 100 {
				j.stale = append(j.stale, err.Error())
			}
			j.show.Print("warcdedup: error: %v", err)
		},
		Warn: func(err error) { j.show.Note("warcdedup: warning: %v", err) }}
	if j.crawl != nil {
		res.Kept = j.crawl.committedLine
	}
	stop := follow(&prog.Lines, show)
	bw := bufio.NewWriterSize(out, 256<<10)
	st, err := res.Run(ctx, manifest.NewReader(in, j.wd.File(input)), bw)
	stop()
	show.Done("")
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", err
	}
	if err := out.CommitRenamed(); err != nil {
		return "", err
	}
	j.resolved = st
	if err := writeJSON(j.wd.File("resolve.json"), st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s clusters, %s records compared, %s stale", progress.Count(st.Clusters), progress.Count(st.Fetched), progress.Count(st.Stale)), nil
}

// sortByFile orders the numbered manifest, and the facts, for the rewrite
// and the accounting.
func (j *Job) sortByFile(ctx context.Context) (string, error) {
	if err := j.sortFile(ctx, NumberedFile, ByFileFile, manifest.ByFile.Command); err != nil {
		return "", err
	}
	return "", j.sortFile(ctx, FactsFile, FactsByFile, manifest.ByFile.Command)
}

// rewrite turns the duplicates into revisits, in place (stage 4), or
// measures what it would do.
func (j *Job) rewrite(ctx context.Context) (string, error) {
	if !j.opt.DryRun {
		// From here on the files change: the manifests before must not be
		// made again, whatever happens.
		j.state.Done = append(j.state.Done, stageRewriteStarted)
		if err := j.wd.writeState(j.state); err != nil {
			return "", err
		}
	}
	var log *rewritelog.Log
	var err error
	if j.opt.DryRun {
		log = rewritelog.NewLog(io.Discard)
	} else {
		if log, err = rewritelog.Open(j.wd.File(LogFile)); err != nil {
			return "", err
		}
		defer log.Close()
		// Earlier jobs' runs shortened the files before this job hashed
		// them: only this job's runs move the manifest's offsets.
		log.Since(j.state.LogSizeAtHash)
	}
	table, err := manifest.OpenTable(j.wd.File(NumberedFile))
	if err != nil {
		return "", err
	}
	defer table.Close()
	originals, err := originals.New(j.locator(), table)
	if err != nil {
		return "", err
	}
	in, err := os.Open(j.wd.File(ByFileFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	saved, err := atomicfile.Create(j.wd.File(SavedFile), 0o644)
	if err != nil {
		return "", err
	}
	defer saved.Abort()
	sw := bufio.NewWriter(saved)
	var total int64
	for _, in := range j.inputs {
		total += in.Size
	}
	show := j.show.Start(stageRewrite, "bytes", total)
	var prog refs.Progress
	loc := j.locator()
	rw := refs.Rewriter{Roots: loc.Roots, Prefixes: loc.Prefixes, InPlace: true, DryRun: j.opt.DryRun, Originals: originals,
		Policy: j.opt.Policy, HardLinks: j.opt.HardLinks, Jobs: j.opt.Jobs, Progress: &prog,
		Refused: func(err error) {
			j.refused = append(j.refused, err.Error())
			j.show.Print("warcdedup: error: %v", err)
		},
		Warn: func(err error) { j.show.Note("warcdedup: warning: %v", err) },
		Record: func(l *manifest.Line, revisitLength int64) {
			fmt.Fprintf(sw, "%s %d %d %d\n", l.File, l.Offset, l.Length, revisitLength)
		}}
	// Each file replaced gets its listing for the hash again stage from its
	// old one, and the new records read (warcsum.Cache.Derive); a file
	// that cannot (or all of them, without the cache) is read again there.
	var derived atomic.Int64
	if cache, err := warcsum.NewCache(j.wd.File(cacheDir), j.sumOptions()); err == nil {
		rw.Replaced = func(r rewritelog.Replacement) {
			if err := cache.Derive(r); err != nil {
				// Not an error: hash again reads the file. The run log
				// says why, for whoever wonders at its time.
				j.show.Log("warcdedup: note: %v; hash again reads the file", err)
				return
			}
			derived.Add(1)
		}
	}
	stop := follow(&prog.Bytes, show)
	st, err := rw.Run(ctx, manifest.NewReader(in, j.wd.File(ByFileFile)), log)
	stop()
	show.Done("")
	if err == nil {
		err = sw.Flush()
	}
	if err != nil {
		return "", err
	}
	if err := saved.CommitRenamed(); err != nil {
		return "", err
	}
	j.rewrote = st
	if err := writeJSON(j.wd.File("rewrite.json"), st); err != nil {
		return "", err
	}
	verb := "written"
	if j.opt.DryRun {
		verb = "that would be written"
	}
	note := fmt.Sprintf("%s revisits %s in %s files, %s refused", progress.Count(st.Revisits+st.AlreadyRevisit), verb,
		progress.Count(st.Rewritten), progress.Count(st.Refused))
	if n := derived.Load(); n > 0 {
		note += fmt.Sprintf("; %s files listed from the records written, not read again", progress.Count(n))
	}
	return note, nil
}

// hashAfter lists the collection again; only the files the rewrite
// replaced are read, the others are known unchanged. The damage and
// unreadable files the hash stage reported are not reported again (the
// cache gives their messages anew); only what it had not found is.
func (j *Job) hashAfter(ctx context.Context) (string, error) {
	var again []string
	st, err := j.sumWith(ctx, AfterFile, "", stageAfter, "", func(err error) { j.keep(&again, err) })
	if err != nil {
		return "", err
	}
	j.newDamage = max(st.Damaged+st.FilesFailed-j.hashed.Damaged-j.hashed.FilesFailed, 0)
	if j.newDamage > 0 {
		for _, m := range again {
			if !slices.Contains(j.damaged, m) {
				j.damagedAgain = append(j.damagedAgain, m)
				j.show.Print("warcdedup: error: %s", m)
			}
		}
	}
	if err := writeJSON(j.wd.File(hashAgainStats), hashAgain{NewDamage: j.newDamage, Messages: j.damagedAgain}); err != nil {
		return "", err
	}
	if j.crawl != nil {
		if err := j.saveFileSums(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s files read again, %s known unchanged", progress.Count(st.Read()), progress.Count(st.Cached)), nil
}

// verify proves that nothing was lost (warcsumcmp).
func (j *Job) verify(ctx context.Context) (string, error) {
	// Files another process changed since the hash stage hold records
	// this job never listed and lost none of: they are left out.
	replaced, err := j.replacedSinceHash()
	if err != nil {
		return "", err
	}
	if j.changes, err = j.changesSinceHash(replaced); err != nil {
		return "", err
	}
	if err := writeJSON(j.wd.File(changesStats), j.changes); err != nil {
		return "", err
	}
	beforeName := j.wd.File(BeforeFile)
	if gone := slices.Concat(j.changes.Changed, j.changes.Removed); len(gone) > 0 {
		for _, n := range gone {
			j.show.Log("warcdedup: note: %s changed or was removed since the hash stage, not by this job: its records are left out of the verification", n)
		}
		beforeName = j.wd.File(tmpDir + "/before-unchanged.manifest")
		if err := withoutFiles(j.wd.File(BeforeFile), beforeName, gone); err != nil {
			return "", err
		}
		defer os.Remove(beforeName)
	}
	for _, n := range j.changes.Added {
		j.show.Log("warcdedup: note: %s was added since the hash stage: it is not part of this job", n)
	}
	before, err := os.Open(beforeName)
	if err != nil {
		return "", err
	}
	defer before.Close()
	after, err := os.Open(j.wd.File(AfterFile))
	if err != nil {
		return "", err
	}
	defer after.Close()
	out, err := atomicfile.Create(j.wd.File(Violations), 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	show := j.show.Start(stageVerify, "records", j.hashed.Listed)
	bw := bufio.NewWriter(out)
	// With an index, revisits may refer to the committed originals joined,
	// as the resolution found them (URI and date as their records spell
	// them).
	var external *manifest.Reader
	if j.crawl != nil {
		name, err := j.crawl.resolvedOriginals(j.wd)
		if err != nil {
			return "", err
		}
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		external = manifest.NewReader(f, name)
	}
	st, err := verify.RewriteAgainst(manifest.NewReader(before, beforeName), manifest.NewReader(after, j.wd.File(AfterFile)), external,
		func(v string) {
			fmt.Fprintln(bw, v)
			j.show.Print("warcdedup: error: lost: %s", v)
		})
	show.Done("")
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", err
	}
	if err := out.CommitRenamed(); err != nil {
		return "", err
	}
	j.verified = st
	if err := writeJSON(j.wd.File("verify.json"), st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s violations", progress.Count(st.Violations)), nil
}

// finish sets the exit status and its reasons.
func (j *Job) finish(err error) {
	rep := j.rep
	var reasons []string
	if err != nil {
		rep.Exit = 2
		reasons = append(reasons, "the run stopped: "+err.Error())
	}
	if n := j.hashed.Damaged + j.hashed.FilesFailed; n > 0 {
		reasons = append(reasons, fmt.Sprintf("%s damaged records or unreadable files (hash stage; see %s)", progress.Count(n), RunLog))
		reasons = append(reasons, first(j.damaged, 5)...)
	}
	if j.newDamage > 0 {
		reasons = append(reasons, fmt.Sprintf("%s damaged records or unreadable files that the hash stage had not found (hash again stage; see %s)", progress.Count(j.newDamage), RunLog))
		reasons = append(reasons, first(j.damagedAgain, 5)...)
	}
	if j.resolved.Stale > 0 {
		reasons = append(reasons, fmt.Sprintf("%s stale manifest lines left out (resolve stage)", progress.Count(j.resolved.Stale)))
		reasons = append(reasons, first(j.stale, 5)...)
	}
	if j.rewrote.Refused > 0 {
		reasons = append(reasons, fmt.Sprintf("%s files refused and left untouched (rewrite stage)", progress.Count(j.rewrote.Refused)))
		reasons = append(reasons, first(j.refused, 10)...)
	}
	if len(j.indexRefused) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d indexes left untouched (update indexes stage; see %s)", len(j.indexRefused), RunLog))
		reasons = append(reasons, first(j.indexRefused, 5)...)
	}
	if c := j.changes; c != nil {
		if n := len(c.Changed); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files changed since the hash stage, not by this job: their records were not this job's and were left out of its verification; the next run takes them as they are (see %s)", n, RunLog))
			reasons = append(reasons, first(c.Changed, 5)...)
		}
		if n := len(c.Removed); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files removed since the hash stage: their records were left out of the verification (see %s)", n, RunLog))
			reasons = append(reasons, first(c.Removed, 5)...)
		}
		if n := len(c.Added); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d files added since the hash stage: not part of this job; the next run takes them", n))
			reasons = append(reasons, first(c.Added, 5)...)
		}
		if j.uncommitted {
			reasons = append(reasons, "the crawl was not committed to the index: the next run deduplicates it as it is now and commits it")
		}
	}
	if j.verified.Violations > 0 {
		reasons = append(reasons, fmt.Sprintf("%s violations: records lost (see %s)", progress.Count(j.verified.Violations), Violations))
	}
	if j.recordsProblem != "" {
		reasons = append(reasons, "the work directory's fixity.tsv and deps.tsv were not brought up to date: "+j.recordsProblem)
	}
	if rep.Exit == 0 && len(reasons) > 0 {
		rep.Exit = 1
	}
	rep.ExitReason = reasons
	// The report, also of a run that stopped, is written when it can be:
	// the run's own, and the work directory's with every run.
	if j.runDir == "" {
		writeReport(j.wd, rep)
		return
	}
	if err := writeReportIn(j.wd.File(j.runDir), rep); err != nil {
		j.show.Print("warcdedup: error: writing the run's report: %v", err)
	}
	if err := collectionReport(context.Background(), j.wd, rep); err != nil {
		j.show.Print("warcdedup: error: writing the work directory's report: %v", err)
	}
}

// inProgressNote says, after a sentence, which files still being written
// were passed over, if any.
func (j *Job) inProgressNote() string {
	if len(j.inProgress) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s still being written, not read: %s)", progress.Count(int64(len(j.inProgress))), inline(j.inProgress, 3))
}

// inline is the first n of s in a sentence: "a, b, c and 4 more".
func inline(s []string, n int) string {
	text := strings.Join(s[:min(n, len(s))], ", ")
	if more := len(s) - n; more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}

func first(s []string, n int) []string {
	out := slices.Clone(s[:min(n, len(s))])
	for i := range out {
		out[i] = "  " + out[i]
	}
	if len(s) > n {
		out = append(out, fmt.Sprintf("  and %d more", len(s)-n))
	}
	return out
}

// commitUnchanged commits the crawl (see commit) unless its files changed
// since the hash stage, not by the job: what the job verified is then not
// the crawl as it is. The job completes without it; the next run, a new
// job on the crawl as it is now, commits it.
func (j *Job) commitUnchanged(ctx context.Context) (string, error) {
	if c := j.changes; c != nil && len(c.Added)+len(c.Changed)+len(c.Removed) > 0 {
		j.uncommitted = true
		return "not committed: the crawl's files changed since the hash stage; the next run takes the crawl as it is and commits it", nil
	}
	return j.commit(ctx)
}

// checkWritable finds, before anything is read, the directories of the
// collection where no file can be replaced (a new version is written
// beside a file and renamed over it): a read-only file system, or a
// directory this user may not write. If none can be written the job
// stops; if some, it says which, and their files will be refused.
func (j *Job) checkWritable() error {
	var dirs []string
	for _, in := range j.inputs {
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
			strings.Join(j.opt.Collections, ", "), inline(refused, 3))
	}
	j.show.Print("warcdedup: warning: %d of the %d directories of the collection cannot be written: their files will be refused and left untouched: %s",
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
// added: the next run finds them changed, and takes them.
func (j *Job) stamps() map[string]string {
	m := map[string]string{}
	inputs, err := j.collect()
	if err != nil {
		return nil
	}
	left := j.changes.excluded()
	for _, in := range inputs {
		if left[in.Name] {
			continue
		}
		if s, ok := fileStamp(in.Path); ok {
			m[in.Name] = s
		}
	}
	return m
}

// unchanged reports whether the collection's files are those the
// completed job left: the same names, each with the same stamp.
func (j *Job) unchanged() bool {
	if len(j.state.Stamps) != len(j.inputs) {
		return false
	}
	for _, in := range j.inputs {
		s, ok := fileStamp(in.Path)
		if !ok || j.state.Stamps[in.Name] != s {
			return false
		}
	}
	return true
}

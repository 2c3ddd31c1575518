package dedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// crawlMode is a job on one crawl with a crawl index: its files are named
// CRAWL/PATH in every manifest, the index's originals of its digests join
// the resolution (as records that must stay responses), and the crawl is
// committed to the index once verified.
type crawlMode struct {
	index            *crawlindex.Index // as opened when the job started, then as joined
	name, root       string
	include, exclude []string
	committed        map[string]bool // crawls of the index
	// reg is the run's registration in the index (crawlindex.RegisterRun):
	// no other run of the crawl meanwhile, and no removal of a crawl it
	// joined until it is committed.
	reg *crawlindex.Registration
	// packages, for a crawl named as WACZ files or a multi-WACZ JSON, are
	// its packages' paths (crawlwacz.go): other crawls may share their
	// directory, not their packages.
	packages map[string]bool
}

// openCrawlMode checks the crawl against the index before anything is
// read or written: one crawl per run, a name the index can hold, an index
// that verifies (as far as it can be checked without reading its
// partitions), the index's digest algorithm, no overlap with a committed
// crawl's files (which later runs never rewrite), an index lock that can
// be taken, and no other run of the crawl in progress (it registers the
// run; close lets it go).
func openCrawlMode(opt *Options) (*crawlMode, error) {
	if len(opt.Collections) != 1 {
		return nil, fmt.Errorf("with --index, one crawl per run (%d given): run them one after another, each is committed before the next", len(opt.Collections))
	}
	root := opt.Collections[0]
	c := &crawlMode{name: opt.Crawl, root: root, include: opt.Include, exclude: opt.Exclude}
	if opt.input != nil { // WACZ files or a multi-WACZ JSON (crawlwacz.go)
		if err := c.usePackages(opt.input); err != nil {
			return nil, err
		}
	}
	if c.name == "" {
		c.name = filepath.Base(root)
	}
	if err := crawlindex.CheckName(c.name); err != nil {
		return nil, err
	}
	if opt.input != nil {
		opt.input.prefix = c.name + "/"
	}
	for _, g := range slices.Concat(c.include, c.exclude) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("glob %q: %w", g, err)
		}
	}
	ix, err := crawlindex.OpenOrCreate(opt.Index)
	if err != nil {
		return nil, err
	}
	if err := CheckCommittedCrawls(ix); err != nil {
		return nil, err
	}
	if err := c.use(ix, opt.Algorithm.String()); err != nil {
		return nil, err
	}
	if c.reg, err = crawlindex.RegisterRun(ix.Dir, c.name); err != nil {
		return nil, err
	}
	return c, nil
}

// use takes a generation of the index as the one the job reads, once it
// checked it against the crawl: the index's digest algorithm, and no
// committed crawl's files among the crawl's.
func (c *crawlMode) use(ix *crawlindex.Index, algorithm string) error {
	if a := ix.Registry.Algorithm; a != "" && a != algorithm {
		return fmt.Errorf("the index %s holds %s digests: run with --hash %s", ix.Dir, a, a)
	}
	committed := map[string]bool{}
	for _, k := range ix.Registry.Crawls {
		committed[k.Name] = true
		if k.Name == c.name {
			continue // a rerun: begin decides
		}
		if c.packages != nil {
			if err := c.sharesPackages(ix, k); err != nil {
				return err
			}
			continue
		}
		if crawlindex.Within(c.root, k.Location) || crawlindex.Within(k.Location, c.root) {
			return fmt.Errorf("%s and the committed crawl %s (%s) share files: committed crawls are never rewritten", c.root, k.Name, k.Location)
		}
	}
	if err := c.checkForcedOut(ix); err != nil {
		return err
	}
	c.index, c.committed = ix, committed
	return nil
}

// checkForcedOut refuses a crawl whose files include one of a crawl
// removed with --force (index remove) while committed crawls' revisits
// needed it, and still need it: the index no longer holds its
// originals, so a run of it (under its name or another) would take the
// responses those revisits need for duplicates of other crawls' records
// and make them revisits, and the revisits of the committed crawls
// would have no original left.
func (c *crawlMode) checkForcedOut(ix *crawlindex.Index) error {
	for _, k := range ix.Registry.Crawls {
		for _, n := range k.Requires {
			gone := ix.Registry.RemovedCrawl(n.Crawl)
			if ix.Registry.Crawl(n.Crawl) != nil || gone == nil || strings.Contains(gone.Location, "://") {
				continue
			}
			for _, f := range n.Files {
				p := filepath.Join(gone.Location, filepath.FromSlash(f.Name))
				rel, err := filepath.Rel(c.root, p)
				mine := c.packages[p]
				if c.packages == nil {
					mine = err == nil && crawlindex.Within(p, c.root) && c.takes(filepath.ToSlash(rel))
				}
				if mine {
					return fmt.Errorf("%s is a file of crawl %s, removed from the index %s with --force while %d revisits of the committed crawl %s needed it, as they still do: a run would make revisits of the records they need; keep it as it is, or first take crawl %s out of the index and undo it (warcdedup index remove, warcdedup undo)",
						p, n.Crawl, ix.Dir, n.Revisits, k.Name, k.Name)
				}
			}
		}
	}
	return nil
}

// close lets the run's registration go (its record stays until the
// crawl is committed).
func (c *crawlMode) close() { c.reg.Release() }

// collect lists the crawl's files that take part, named CRAWL/PATH, with
// col (which tells of the files still being written).
func (c *crawlMode) collect(col warcsum.Collector) ([]warcsum.Input, error) {
	all, err := col.Collect([]string{c.root})
	if err != nil {
		return nil, err
	}
	var inputs []warcsum.Input
	for _, in := range all {
		if !c.takes(in.Name) {
			continue
		}
		in.Name = c.name + "/" + in.Name
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// takes reports whether a file (its name relative to the crawl) takes
// part: it matches an Include (if any) and no Exclude, by its whole name
// or its base name.
func (c *crawlMode) takes(name string) bool {
	match := func(globs []string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
			if ok, _ := path.Match(g, path.Base(name)); ok {
				return true
			}
		}
		return false
	}
	return (len(c.include) == 0 || match(c.include)) && !match(c.exclude)
}

// prefixes are where every crawl's files are: the committed crawls' and
// this one's.
func (c *crawlMode) prefixes() map[string]string {
	m := c.index.Prefixes()
	m[c.name] = c.root
	return m
}

// committedLine reports whether a line is a committed crawl's: a record
// that stays a response.
func (c *crawlMode) committedLine(l *manifest.Line) bool {
	return c.committed[crawlindex.CrawlOf(l.File)]
}

// begin answers a run on a crawl the index holds: nothing to do when
// every file is as committed (the same names; the same stamps, or the
// same SHA-256 where a stamp differs), else a refusal,
// since committed crawls are never rewritten. A run that resumes a job
// whose join is done holds again what that join read (see
// crawlindex.Registration.Resume); when that changed since, the job
// starts again from its first stage, unless it rewrote files since, which
// is refused.
func (c *crawlMode) begin(r *run) (*stage.Result, error) {
	k := c.index.Registry.Crawl(c.name)
	if k == nil {
		return nil, c.resume(r)
	}
	// Committed: what a run killed before it dropped its registration
	// left holds nothing (the registry says what the crawl needs).
	if err := c.reg.Drop(); err != nil {
		return nil, err
	}
	files, err := c.index.Files(c.name)
	if err != nil {
		return nil, err
	}
	committed := map[string]crawlindex.FileInfo{}
	for _, f := range files {
		committed[c.name+"/"+f.Name] = f
	}
	changed := ""
	now := r.currentFiles() // a WACZ member's package (crawlwacz.go)
	if len(committed) != len(now) {
		changed = fmt.Sprintf("%d files, %d committed", len(now), len(committed))
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if changed != "" {
			break
		}
		f, ok := committed[name]
		switch {
		case !ok:
			changed = name + " is not one of its files"
		case now[name].Stamp != "" && now[name].Stamp == f.Stamp:
		default:
			// Another stamp is not other bytes: a change of owner,
			// mode or links (an extra hard link removed, as a refusal
			// for hard links asks) changes the change time alone. The
			// file is compared with its SHA-256 as committed, as a
			// run's rewrite of a committed package compares it.
			if why := crawlindex.ChangedSinceCommit(now[name].Path, f); why != "" {
				changed = name + " " + why
			}
		}
	}
	if changed != "" {
		return nil, fmt.Errorf("crawl %s is committed to the index %s and its files changed since (%s): committed crawls are never rewritten (warcdedup index verify checks them; warcdedup index remove takes a crawl out)", c.name, c.index.Dir, changed)
	}
	if r.state.Complete && r.state.RecordsBehind {
		return nil, nil // done but for the work directory's records: resume brings them up to date
	}
	if !r.state.Complete && r.state.done(stage.CommitName) {
		// Killed after its commit and before it recorded the job
		// complete: as above, the account is done again (whether it
		// brought the records up to date was not recorded), the commit
		// kept, and the job completes, its intermediates removed.
		r.show.Note("warcdedup: crawl %s is committed, but its last run stopped before it recorded the job complete: bringing the work directory's records up to date", c.name)
		return nil, nil
	}
	if r.state.Complete {
		if err := r.finishRemoval(); err != nil {
			return nil, err
		}
	}
	rep, err := stage.ReadReport(r.wd.File(workdir.StatsFile))
	if err != nil {
		rep = &report.Report{Title: "Crawl " + c.name, Mode: "run", Collections: r.opt.Collections, Generated: k.Committed}
	}
	rep.Crawls = stage.CrawlsOf(c.index.Registry)
	return &stage.Result{Report: rep, WorkDir: r.wd.Path, NothingToDo: true}, nil
}

// resume holds again what the join of an interrupted run of the job
// read, if the job is past its join.
func (c *crawlMode) resume(r *run) error {
	if !r.state.done(stage.JoinName) || !r.outputsExist(stage.JoinName) {
		return nil
	}
	err := c.reg.Resume()
	var moved *crawlindex.MovedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, crawlindex.ErrNotJoined), errors.As(err, &moved) && !moved.Rewrote:
		// What the join read may have changed, and the job rewrote
		// nothing since: it starts again.
		r.show.Note("warcdedup: the index changed since this job joined it (%v): the job starts again", err)
		r.state = &State{Params: r.state.Params}
		return nil
	}
	return err
}

// joinIndex adds to the crawl's manifest, sorted on digest, the index's
// originals of its digests: what the resolution compares the crawl with.
//
// The index is read as committed now (the hash stage may have taken
// hours). The crawls whose originals it joined are those the crawl's
// revisits may need: their lists of files are read (a list that does not
// verify stops the job here, before any rewrite, not at its commit), and
// the run holds them (crawlindex.Registration.Hold) until its commit, so
// that none is removed meanwhile. A crawl that changed between the join
// and the hold has the join done again.
func (r *run) joinIndex(ctx context.Context) (string, error) {
	c := r.crawl
	show := r.show.Start(stage.JoinName, "files", 1)
	defer show.Done("")
	for attempt := 1; ; attempt++ {
		ix, err := crawlindex.Open(c.index.Dir)
		if err != nil && !errors.Is(err, crawlindex.ErrNoIndex) {
			return "", err
		}
		if err := c.use(ix, r.opt.Algorithm.String()); err != nil {
			return "", err
		}
		note, err := r.joinOnce(ctx)
		var moved *crawlindex.MovedError
		if errors.As(err, &moved) && attempt < 3 {
			r.show.Note("warcdedup: %v: joining the index again", err)
			continue
		}
		return note, err
	}
}

// joinOnce joins the index as c.index has it, and holds what it joined.
func (r *run) joinOnce(ctx context.Context) (string, error) {
	c := r.crawl
	in, err := os.Open(r.wd.File(workdir.ByDigestFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	j := stage.Join{Index: c.index, In: in, Name: r.wd.File(workdir.ByDigestFile), Out: r.wd.File(workdir.IndexOriginalsFile)}
	st, err := j.Run(ctx)
	if err != nil {
		return "", err
	}
	crawls := slices.Sorted(maps.Keys(st.Crawls))
	for _, k := range crawls {
		if _, err := c.index.Files(k); err != nil {
			return "", fmt.Errorf("crawl %s, whose records the crawl's revisits may need: %w", k, err)
		}
	}
	if err := c.reg.Hold(c.index, crawls, r.wd.Path, r.logFiles()); err != nil {
		return "", err
	}
	if err := stage.MergeByDigest(r.wd.File(workdir.ByDigestFile), r.wd.File(workdir.IndexOriginalsFile), r.wd.File(workdir.JoinedFile)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s originals of %s crawls read, %s of the crawl's %s digests", progress.Count(st.IndexLines),
		progress.Count(int64(len(c.index.Registry.Crawls))), progress.Count(st.Matched), progress.Count(st.Digests)), nil
}

// logFiles are the files whose change tells that the job rewrote files:
// its rewrite log and the log's journal (rewritelog.Log's LOG.pending).
func (r *run) logFiles() []string {
	return []string{r.wd.File(workdir.LogFile), r.wd.File(workdir.LogFile) + ".pending"}
}

// resolvedOriginals writes the committed originals of the numbered
// manifest (those the resolution read and kept) to a work file, and
// returns its name.
func (c *crawlMode) resolvedOriginals(wd *workdir.Dir) (string, error) {
	in, err := os.Open(wd.File(workdir.NumberedFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	name := wd.File(workdir.ResolvedOriginalsFile)
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	r := manifest.NewReader(in, wd.File(workdir.NumberedFile))
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if c.committedLine(&l) {
			if err := w.Write(&l); err != nil {
				return "", err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if err := out.CommitRenamed(); err != nil {
		return "", err
	}
	return name, nil
}

// commit commits the verified crawl to the index: its responses as they
// are now become originals for later crawls, with its files (size,
// SHA-256, stamp), its figures and the crawls its revisits need.
func (r *run) commit(ctx context.Context) (string, error) {
	c := r.crawl
	if r.opt.beforeCommit != nil {
		if err := r.opt.beforeCommit(); err != nil {
			return "", err
		}
	}
	if r.verified.Violations > 0 {
		return "", fmt.Errorf("not committed: verification found %d records lost", r.verified.Violations)
	}
	files, err := r.crawlFiles()
	if err != nil {
		return "", err
	}
	// WACZ members committed as their packages (crawlwacz.go).
	if files, err = r.packageFiles(files); err != nil {
		return "", err
	}
	after, err := r.packageAfter()
	if err != nil {
		return "", err
	}
	// Committed crawls' packages the run wrote anew with their
	// requires entries up to date: recorded in the same generation.
	refile, err := r.committedRefiles()
	if err != nil {
		return "", err
	}
	var source string
	if r.opt.input != nil {
		source = r.opt.input.json
	}
	cc := &stage.Commit{Refile: refile, Index: c.index, Crawl: &crawlindex.Crawl{Name: c.name, Location: c.root, Source: source, Include: c.include, Exclude: c.exclude, Log: r.wd.File(workdir.LogFile)},
		Files: files, After: []string{after}, Logs: []stage.LogFrom{{Name: r.wd.File(workdir.LogFile), From: r.state.LogSizeAtHash}},
		Deps: r.wd.File(workdir.DepsFile), WorkDir: r.wd.Path, Sort: r.sorter()}
	ix, err := cc.Run(ctx)
	if err != nil {
		return "", err
	}
	// Committed: the registry says what the crawl needs now, and
	// records the requirers written anew.
	if err := c.reg.Drop(); err != nil {
		return "", err
	}
	if err := os.Remove(r.wd.File(crawlRefileNote)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	r.rep.Crawls = stage.CrawlsOf(ix.Registry)
	if err := stage.WriteReport(r.wd.Path, r.rep); err != nil {
		return "", err
	}
	return stage.CommitNote(ix, cc.Crawl), nil
}

// crawlFiles lists the crawl's files as committed.
func (r *run) crawlFiles() ([]crawlindex.FileInfo, error) {
	list, err := stage.ReadFileSums(r.wd.File(workdir.AfterFilesFile))
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for _, s := range list {
		sums[s.File] = s.SHA256
	}
	inputs, err := r.collect()
	if err != nil {
		return nil, err
	}
	var files []crawlindex.FileInfo
	for _, in := range inputs {
		// As they are now: the commit stage follows the verification,
		// which found no file changed by another process.
		fi, err := os.Stat(in.Path)
		if err != nil {
			return nil, err
		}
		stamp, _ := fileStamp(in.Path)
		files = append(files, crawlindex.FileInfo{Name: strings.TrimPrefix(in.Name, r.crawl.name+"/"), Size: fi.Size(), SHA256: sums[in.Name], Stamp: stamp})
	}
	return files, nil
}

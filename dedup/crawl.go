package dedup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// The files a job with an index adds to its work directory.
const (
	indexOriginalsFile = "index-originals.manifest" // the index's originals of the crawl's digests
	crawlOriginals     = "crawl-originals.manifest" // the crawl's responses after the run, for the commit
	crawlOriginalsSort = "crawl-originals-by-digest.manifest"
	afterFilesFile     = "after-files.tsv" // name size sha256 of each file after the run
	// resolvedOriginalsFile holds the committed originals the resolution
	// kept, as their records spell them: what verification checks the
	// crawl's revisits against.
	resolvedOriginalsFile = "index-originals-resolved.manifest"
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
	// sums are the files' SHA-256 from the last hash stage.
	sums map[string]string
	// reg is the run's registration in the index (crawlindex.RegisterRun):
	// no other run of the crawl meanwhile, and no removal of a crawl it
	// joined until it is committed.
	reg *crawlindex.Registration
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
	c := &crawlMode{name: opt.Crawl, root: root, include: opt.Include, exclude: opt.Exclude, sums: map[string]string{}}
	if c.name == "" {
		c.name = filepath.Base(root)
	}
	if err := crawlindex.CheckName(c.name); err != nil {
		return nil, err
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
		if within(c.root, k.Location) || within(k.Location, c.root) {
			return fmt.Errorf("%s and the committed crawl %s (%s) share files: committed crawls are never rewritten", c.root, k.Name, k.Location)
		}
	}
	c.index, c.committed = ix, committed
	return nil
}

// close lets the run's registration go (its record stays until the
// crawl is committed).
func (c *crawlMode) close() { c.reg.Release() }

// within reports whether the path a is b or beneath it.
func within(a, b string) bool {
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, string(filepath.Separator))+string(filepath.Separator))
}

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
// every file is as committed (the same names and stamps), else a refusal,
// since committed crawls are never rewritten. A run that resumes a job
// whose join is done holds again what that join read (see
// crawlindex.Registration.Resume); when that changed since, the job
// starts again from its first stage, unless it rewrote files since, which
// is refused.
func (c *crawlMode) begin(j *Job) (*Result, error) {
	k := c.index.Registry.Crawl(c.name)
	if k == nil {
		return nil, c.resume(j)
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
	stamps := map[string]string{}
	for _, f := range files {
		stamps[c.name+"/"+f.Name] = f.Stamp
	}
	changed := ""
	if len(stamps) != len(j.inputs) {
		changed = fmt.Sprintf("%d files, %d committed", len(j.inputs), len(stamps))
	}
	for _, in := range j.inputs {
		if changed != "" {
			break
		}
		if s, ok := fileStamp(in.Path); !ok || stamps[in.Name] != s {
			changed = in.Name + " changed"
		}
	}
	if changed != "" {
		return nil, fmt.Errorf("crawl %s is committed to the index %s and its files changed since (%s): committed crawls are never rewritten (warcdedup index verify checks them; warcdedup index remove takes a crawl out)", c.name, c.index.Dir, changed)
	}
	rep, err := readReport(j.wd.File(StatsFile))
	if err != nil {
		rep = &report.Report{Title: "Crawl " + c.name, Mode: "run", Collections: j.opt.Collections, Generated: k.Committed}
	}
	rep.Crawls = CrawlsOf(c.index.Registry)
	return &Result{Report: rep, WorkDir: j.wd.Path, NothingToDo: true}, nil
}

// resume holds again what the join of an interrupted run of the job
// read, if the job is past its join.
func (c *crawlMode) resume(j *Job) error {
	if !j.state.done(stageJoin) || !j.outputsExist(stageJoin) {
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
		j.show.Note("warcdedup: the index changed since this job joined it (%v): the job starts again", err)
		j.state = &State{Params: j.state.Params}
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
func (j *Job) joinIndex(ctx context.Context) (string, error) {
	c := j.crawl
	show := j.show.Start(stageJoin, "files", 1)
	defer show.Done("")
	for attempt := 1; ; attempt++ {
		ix, err := crawlindex.Open(c.index.Dir)
		if err != nil && !errors.Is(err, crawlindex.ErrNoIndex) {
			return "", err
		}
		if err := c.use(ix, j.opt.Algorithm.String()); err != nil {
			return "", err
		}
		note, err := j.joinOnce(ctx)
		var moved *crawlindex.MovedError
		if errors.As(err, &moved) && attempt < 3 {
			j.show.Note("warcdedup: %v: joining the index again", err)
			continue
		}
		return note, err
	}
}

// joinOnce joins the index as c.index has it, and holds what it joined.
func (j *Job) joinOnce(ctx context.Context) (string, error) {
	c := j.crawl
	in, err := os.Open(j.wd.File(ByDigestFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	joined, err := atomicfile.Create(j.wd.File(indexOriginalsFile), 0o644)
	if err != nil {
		return "", err
	}
	defer joined.Abort()
	bw := bufio.NewWriterSize(joined, 256<<10)
	st, err := c.index.Join(ctx, in, j.wd.File(ByDigestFile), bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", err
	}
	crawls := slices.Sorted(mapKeys(st.Crawls))
	for _, k := range crawls {
		if _, err := c.index.Files(k); err != nil {
			return "", fmt.Errorf("crawl %s, whose records the crawl's revisits may need: %w", k, err)
		}
	}
	if err := c.reg.Hold(c.index, crawls, j.wd.Path, j.logFiles()); err != nil {
		return "", err
	}
	if err := joined.CommitRenamed(); err != nil {
		return "", err
	}
	if err := mergeByDigest(j.wd.File(ByDigestFile), j.wd.File(indexOriginalsFile), j.wd.File(JoinedFile)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s originals of %s crawls read, %s of the crawl's %s digests", progress.Count(st.IndexLines),
		progress.Count(int64(len(c.index.Registry.Crawls))), progress.Count(st.Matched), progress.Count(st.Digests)), nil
}

// logFiles are the files whose change tells that the job rewrote files:
// its rewrite log and the log's journal (rewritelog.Log's LOG.pending).
func (j *Job) logFiles() []string {
	return []string{j.wd.File(LogFile), j.wd.File(LogFile) + ".pending"}
}

// mergeByDigest merges two manifests sorted on digest into a new one.
func mergeByDigest(a, b, to string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	out, err := atomicfile.Create(to, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	ra, rb := manifest.NewReader(fa, a), manifest.NewReader(fb, b)
	ra.RequireOrder(manifest.ByDigest)
	rb.RequireOrder(manifest.ByDigest)
	la, erra := ra.Next()
	lb, errb := rb.Next()
	for {
		for _, err := range []error{erra, errb} {
			if err != nil && err != io.EOF {
				return err
			}
		}
		if erra == io.EOF && errb == io.EOF {
			break
		}
		if errb == io.EOF || erra == nil && manifest.ByDigest.Compare(&la, &lb) <= 0 {
			if err := w.Write(&la); err != nil {
				return err
			}
			la, erra = ra.Next()
			continue
		}
		if err := w.Write(&lb); err != nil {
			return err
		}
		lb, errb = rb.Next()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := out.CommitRenamed(); err != nil {
		return err
	}
	return nil
}

// resolvedOriginals writes the committed originals of the numbered
// manifest (those the resolution read and kept) to a work file, and
// returns its name.
func (c *crawlMode) resolvedOriginals(wd *WorkDir) (string, error) {
	in, err := os.Open(wd.File(NumberedFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	name := wd.File(resolvedOriginalsFile)
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	r := manifest.NewReader(in, wd.File(NumberedFile))
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

// saveFileSums keeps the files' SHA-256 of the last hash stage, for the
// commit.
func (j *Job) saveFileSums() error {
	var b strings.Builder
	names := make([]string, 0, len(j.crawl.sums))
	for n := range j.crawl.sums {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", manifest.EscapeFile(n), j.crawl.sums[n])
	}
	return writeFile(j.wd.File(afterFilesFile), []byte(b.String()))
}

// commit commits the verified crawl to the index: its responses as they
// are now become originals for later crawls, with its files (size,
// SHA-256, stamp), its figures and the crawls its revisits need.
func (j *Job) commit(ctx context.Context) (string, error) {
	c := j.crawl
	if j.verified.Violations > 0 {
		return "", fmt.Errorf("not committed: verification found %d records lost", j.verified.Violations)
	}
	files, err := j.crawlFiles()
	if err != nil {
		return "", err
	}
	cc := &CrawlCommit{Index: c.index, Crawl: &crawlindex.Crawl{Name: c.name, Location: c.root, Include: c.include, Exclude: c.exclude, Log: j.wd.File(LogFile)},
		Files: files, After: []string{j.wd.File(AfterFile)}, Logs: []LogFrom{{j.wd.File(LogFile), j.state.LogSizeAtHash}},
		Deps: j.wd.File(DepsFile), WorkDir: j.wd.Path, Sort: SortOptions{TempDir: j.wd.File(tmpDir), Memory: j.opt.SortMemory, Parallel: j.opt.Jobs}}
	ix, err := CommitCrawl(ctx, cc)
	if err != nil {
		return "", err
	}
	// Committed: the registry says what the crawl needs now.
	if err := c.reg.Drop(); err != nil {
		return "", err
	}
	j.rep.Crawls = CrawlsOf(ix.Registry)
	if err := writeReport(j.wd, j.rep); err != nil {
		return "", err
	}
	return CommitNote(ix, cc.Crawl), nil
}

// CrawlCommit is what committing a verified crawl to its index takes: the
// commit stage of run, and the account of warcdedup cluster with an index.
type CrawlCommit struct {
	Index *crawlindex.Index // as opened when the job started
	// Crawl is the crawl's name, location, globs and rewrite log;
	// CommitCrawl fills in its figures and what it requires.
	Crawl *crawlindex.Crawl
	Files []crawlindex.FileInfo // its files after the run, named PATH
	// After are the crawl's manifests after the run (files named
	// CRAWL/PATH), in any order: its responses become originals.
	After []string
	// Logs are the rewrite logs of the run, each from where the job's
	// entries start (every run of the job, resumed or not): its figures.
	Logs []LogFrom
	Deps string // the job's deps.tsv: the crawls its revisits need
	// WorkDir gets the crawl's originals (crawl-originals.manifest and
	// crawl-originals-by-digest.manifest), sorted as Sort says.
	WorkDir string
	Sort    SortOptions
}

// LogFrom is a rewrite log from byte offset From.
type LogFrom struct {
	Name string
	From int64
}

// CommitCrawl commits a verified crawl to the index c.Index is a
// generation of, and returns the new generation.
func CommitCrawl(ctx context.Context, c *CrawlCommit) (*crawlindex.Index, error) {
	if err := c.originals(ctx); err != nil {
		return nil, err
	}
	if err := c.figures(); err != nil {
		return nil, err
	}
	var err error
	if c.Crawl.Requires, err = c.requires(); err != nil {
		return nil, err
	}
	return crawlindex.Commit(c.Index.Dir, crawlindex.Change{Add: c.Crawl, Files: c.Files, Originals: filepath.Join(c.WorkDir, crawlOriginalsSort)})
}

// CommitNote says what CommitCrawl committed, for the report's stage.
func CommitNote(ix *crawlindex.Index, k *crawlindex.Crawl) string {
	var needs []string
	for _, n := range k.Requires {
		needs = append(needs, n.Crawl)
	}
	note := fmt.Sprintf("crawl %s committed to %s (generation %d): %s originals", k.Name, ix.Dir, ix.Registry.Generation, progress.Count(ix.Registry.Crawl(k.Name).Originals))
	if len(needs) > 0 {
		note += "; it needs " + strings.Join(needs, ", ")
	}
	return note
}

// crawlFiles lists the crawl's files as committed.
func (j *Job) crawlFiles() ([]crawlindex.FileInfo, error) {
	sums := map[string]string{}
	data, err := os.ReadFile(j.wd.File(afterFilesFile))
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if name, sum, ok := strings.Cut(l, " "); ok {
			if n, err := manifest.UnescapeFile(name); err == nil {
				sums[n] = sum
			}
		}
	}
	inputs, err := j.collect()
	if err != nil {
		return nil, err
	}
	var files []crawlindex.FileInfo
	for _, in := range inputs {
		fi, err := os.Stat(in.Path)
		if err != nil {
			return nil, err
		}
		stamp, _ := fileStamp(in.Path)
		files = append(files, crawlindex.FileInfo{Name: strings.TrimPrefix(in.Name, j.crawl.name+"/"), Size: fi.Size(), SHA256: sums[in.Name], Stamp: stamp})
	}
	return files, nil
}

// originals writes the crawl's responses as they are after the run,
// sorted on digest, and counts its records.
func (c *CrawlCommit) originals(ctx context.Context) error {
	k := c.Crawl
	k.Records, k.Revisits = 0, 0
	out, err := atomicfile.Create(filepath.Join(c.WorkDir, crawlOriginals), 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	for _, name := range c.After {
		if err := copyResponses(name, w, k); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := out.CommitRenamed(); err != nil {
		return err
	}
	return Sort(ctx, c.Sort, manifest.ByDigest.Command, filepath.Join(c.WorkDir, crawlOriginals), filepath.Join(c.WorkDir, crawlOriginalsSort))
}

// copyResponses writes the lines of a manifest that are not revisits to
// w, counting its records and revisits in k.
func copyResponses(name string, w *manifest.Writer, k *crawlindex.Crawl) error {
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	r := manifest.NewReader(bufio.NewReaderSize(in, 256<<10), name)
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		k.Records++
		if l.IsRevisit() {
			k.Revisits++
			continue
		}
		if err := w.Write(&l); err != nil {
			return err
		}
	}
}

// figures counts the revisits the job wrote and the bytes they conserve,
// from its log entries.
func (c *CrawlCommit) figures() error {
	k := c.Crawl
	k.RevisitsWritten, k.BytesConserved = 0, 0
	for _, lf := range c.Logs {
		if err := logFigures(lf, k); err != nil {
			return err
		}
	}
	return nil
}

func logFigures(lf LogFrom, k *crawlindex.Crawl) error {
	f, err := os.Open(lf.Name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := rewritelog.NewReader(io.NewSectionReader(f, lf.From, 1<<62), lf.Name)
	for {
		e, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Kind == rewritelog.Revisit {
			k.RevisitsWritten++
			k.BytesConserved += e.OldLength - e.NewLength
		}
	}
}

// requires lists the committed crawls whose records the crawl's revisits
// need, with those files, from deps.tsv.
func (c *CrawlCommit) requires() ([]crawlindex.Need, error) {
	data, err := os.ReadFile(c.Deps)
	if err != nil {
		return nil, err
	}
	type need struct {
		revisits int64
		files    map[string]bool
	}
	needs := map[string]*need{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || strings.HasPrefix(l, "#") {
			continue
		}
		orig, err := manifest.UnescapeFile(f[1])
		if err != nil {
			return nil, err
		}
		crawl := crawlindex.CrawlOf(orig)
		if crawl == c.Crawl.Name {
			continue
		}
		n := needs[crawl]
		if n == nil {
			n = &need{files: map[string]bool{}}
			needs[crawl] = n
		}
		count, _ := strconv.ParseInt(f[2], 10, 64)
		n.revisits += count
		n.files[strings.TrimPrefix(orig, crawl+"/")] = true
	}
	var out []crawlindex.Need
	for _, crawl := range slices.Sorted(mapKeys(needs)) {
		n := needs[crawl]
		committed, err := c.Index.Files(crawl)
		if err != nil {
			return nil, fmt.Errorf("crawl %s, whose records the revisits need: %w", crawl, err)
		}
		need := crawlindex.Need{Crawl: crawl, Revisits: n.revisits}
		for _, f := range committed {
			if n.files[f.Name] {
				need.Files = append(need.Files, f)
			}
		}
		out = append(out, need)
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// CrawlsOf is the report's table of an index's crawls.
func CrawlsOf(r *crawlindex.Registry) []report.Crawl {
	var out []report.Crawl
	for _, k := range r.Crawls {
		rc := report.Crawl{Name: k.Name, Committed: true, Records: k.Records, RevisitsWritten: k.RevisitsWritten,
			BytesConserved: k.BytesConserved, Size: k.Size}
		for _, n := range k.Requires {
			rc.Requires = append(rc.Requires, n.Crawl)
		}
		out = append(out, rc)
	}
	return out
}

package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/verify"
	"warcdedup/workdir"
)

// A job with a crawl index (warcdedup cluster --index, as warcdedup run
// --index) takes the hosts' files as one crawl: they are named CRAWL/REL
// in every manifest, as the index names its crawls' files; each hash
// range joins its part of the index's originals (crawlindex.Join) and
// resolves the crawl's records with them, the committed ones kept as
// originals (copy 1) and never rewritten; the account commits the crawl
// once verified (stage.Commit), its files recorded as served at one
// URL (CrawlURL) for later runs to read.
//
// The files a job with an index adds to its work directory:
const (
	indexKeptFile   = "index-kept.manifest" // a range's committed lines as resolved, on digest: what verify checks revisits against
	indexKeptByFile = "index-kept-by-file.manifest"
)

// withIndex reports whether the job is a crawl's with an index.
func (s *Spec) withIndex() bool { return s.Index != "" }

// fileName is the manifests' name of a file with name rel beneath its
// host's root.
func (s *Spec) fileName(rel string) string {
	if !s.withIndex() {
		return rel
	}
	return s.Crawl + "/" + rel
}

// relName is the name beneath its host's root of a file the manifests
// name name.
func (s *Spec) relName(name string) string {
	if !s.withIndex() {
		return name
	}
	return strings.TrimPrefix(name, s.Crawl+"/")
}

// ours reports whether a manifest line's file is one of the job's (not a
// committed crawl's, joined from the index).
func (s *Spec) ours(file string) bool {
	return !s.withIndex() || crawlindex.CrawlOf(file) == s.Crawl
}

// openIndex opens the index as committed now; one without a generation
// yet is empty.
func (s *Spec) openIndex() (*crawlindex.Index, error) {
	ix, err := crawlindex.Open(s.Index)
	if errors.Is(err, crawlindex.ErrNoIndex) {
		return ix, nil
	}
	return ix, err
}

// CheckIndex checks a job with an index before anything is submitted: a
// crawl name the index can hold, the index's digest algorithm, a URL for
// the crawl's files, and no host root that is a committed crawl's
// location (committed crawls are never rewritten). It returns the index.
func (p *Params) CheckIndex() (*crawlindex.Index, error) {
	if err := crawlindex.CheckName(p.Crawl); err != nil {
		return nil, err
	}
	if p.CrawlURL == "" {
		return nil, fmt.Errorf("the hosts give %d URLs: with --index, name the one URL that serves every host's files (a front redirecting to the host holding each, as SWAP's hosts do) with --crawl-url, for the index to record where crawl %s is", len(p.urls()), p.Crawl)
	}
	ix, err := crawlindex.OpenOrCreate(p.Index)
	if err != nil {
		return nil, err
	}
	if a := ix.Registry.Algorithm; a != "" && a != p.Algorithm {
		return nil, fmt.Errorf("the index %s holds %s digests: run with --hash %s", ix.Dir, a, a)
	}
	for _, k := range ix.Registry.Crawls {
		if k.Name == p.Crawl {
			continue
		}
		for _, h := range p.Hosts {
			if crawlindex.Within(h.Root, k.Location) || crawlindex.Within(k.Location, h.Root) {
				return nil, fmt.Errorf("the root %s of %s and the committed crawl %s (%s) share files: committed crawls are never rewritten", h.Root, h.Name, k.Name, k.Location)
			}
		}
	}
	return ix, nil
}

// urls are the hosts' distinct URLs.
func (p *Params) urls() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range p.Hosts {
		if !seen[h.URL] {
			seen[h.URL] = true
			out = append(out, h.URL)
		}
	}
	return out
}

// DefaultCrawlURL is where a crawl's files are for later runs when the
// hosts give one URL (a front): that URL; "" otherwise.
func (p *Params) DefaultCrawlURL() string {
	if u := p.urls(); len(u) == 1 {
		return u[0]
	}
	return ""
}

// committedAlready answers a job on a crawl the index holds: nothing to
// do, with the report of the work directory's job if there is one. The
// hosts' files are not looked at (from here they cannot be: warcdedup
// index verify checks them where they are served, or on each host). The
// work directory's job that committed the crawl and was interrupted
// before its end is followed to it (nil, nil): its account finds the
// crawl committed.
func committedAlready(opt Options, ix *crawlindex.Index) (*stage.Result, error) {
	k := ix.Registry.Crawl(opt.Params.Crawl)
	if k == nil {
		return nil, nil
	}
	wd := workDir(opt.WorkDir)
	spec, serr := workdir.ReadJSON[Spec](wd.file(specFile))
	state, err := workdir.ReadJSON[State](wd.file(stateFile))
	if serr == nil && err == nil &&
		spec.Params.Equal(&opt.Params) && state.Job == spec.ID && !state.Complete && !opt.Again {
		return nil, nil
	}
	if opt.Again {
		return nil, fmt.Errorf("crawl %s is committed to the index %s: committed crawls are never rewritten (warcdedup index remove takes a crawl out)", k.Name, ix.Dir)
	}
	rep, err := stage.ReadReport(filepath.Join(opt.WorkDir, workdir.StatsFile))
	if err != nil {
		rep = &report.Report{Title: "Crawl " + k.Name, Mode: "run", Generated: k.Committed}
	}
	rep.Crawls = stage.CrawlsOf(ix.Registry)
	return &stage.Result{Report: rep, WorkDir: opt.WorkDir, NothingToDo: true}, nil
}

// joinIndex writes the index's originals of the range's digests into the
// range's directory, and returns its name: the hosts' parts of the range
// merged on digest, joined with the index, which is read from the
// partition of the range's first digest on.
func (k *task) joinIndex(ctx context.Context, ix *crawlindex.Index, parts []string, dir string) (string, crawlindex.JoinStats, error) {
	var st crawlindex.JoinStats
	m, err := k.sorter.MergeStream(ctx, manifest.ByDigest.Command, parts)
	if err != nil {
		return "", st, err
	}
	name := filepath.Join(dir, workdir.IndexOriginalsFile)
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		m.Wait()
		return "", st, err
	}
	defer out.Abort()
	bw := bufio.NewWriterSize(out, 256<<10)
	st, err = ix.Join(ctx, bufio.NewReaderSize(m, 256<<10), "range "+rangeName(k.Index, k.spec.Ranges)+" of the hosts' manifests", bw)
	// Join stops reading at the index's end: the rest of the merge is
	// read, for sort to end well.
	if _, cerr := io.Copy(io.Discard, m); err == nil {
		err = cerr
	}
	if merr := m.Wait(); err == nil {
		err = merr
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.CommitRenamed()
	}
	return name, st, err
}

// keptIndex collects a range's committed lines as resolved: in digest
// order into the range's indexKeptFile, for verify, and sorted on file
// into indexKeptByFile, for the account (run's manifests have them too).
type keptIndex struct {
	k      *task
	dir    string
	out    *atomicfile.File
	w      *bufio.Writer
	unsort *os.File
	uw     *bufio.Writer
}

func (k *task) newKeptIndex(dir string) (*keptIndex, error) {
	ki := &keptIndex{k: k, dir: dir}
	var err error
	if ki.out, err = atomicfile.Create(filepath.Join(dir, indexKeptFile), 0o644); err != nil {
		return nil, err
	}
	if ki.unsort, err = os.Create(filepath.Join(k.sorter.TempDir, "index-kept")); err != nil {
		ki.out.Abort()
		return nil, err
	}
	ki.w, ki.uw = bufio.NewWriterSize(ki.out, 64<<10), bufio.NewWriterSize(ki.unsort, 64<<10)
	return ki, nil
}

func (ki *keptIndex) add(text []byte) error {
	if _, err := ki.w.Write(text); err != nil {
		return err
	}
	_, err := ki.uw.Write(text)
	return err
}

// close writes the files out, or, with err, abandons them.
func (ki *keptIndex) close(ctx context.Context, err error) error {
	defer ki.unsort.Close()
	defer ki.out.Abort()
	if err != nil {
		return err
	}
	if err := ki.w.Flush(); err != nil {
		return err
	}
	if err := ki.out.CommitRenamed(); err != nil {
		return err
	}
	if err := ki.uw.Flush(); err != nil {
		return err
	}
	return ki.k.sorter.Sort(ctx, manifest.ByFile.Command, []string{ki.unsort.Name()}, filepath.Join(ki.dir, indexKeptByFile))
}

// keptIndexFiles are every range's files of one kind (indexKeptFile or
// indexKeptByFile), in range order; none without an index.
func (k *task) keptIndexFiles(name string) []string {
	if !k.spec.withIndex() {
		return nil
	}
	var out []string
	for r := range k.spec.Ranges {
		out = append(out, filepath.Join(k.wd.rangeDir(r, k.spec.Ranges), name))
	}
	return out
}

// crawlFiles reads every host's after-files.tsv (stage.FileSums): the
// crawl's files as the index records them (named beneath their roots).
func (k *task) crawlFiles() ([]crawlindex.FileInfo, error) {
	var files []crawlindex.FileInfo
	for i := range k.spec.Hosts {
		sums, err := stage.ReadFileSums(k.wd.host(&k.spec.Hosts[i], workdir.AfterFilesFile))
		if err != nil {
			return nil, err
		}
		for _, s := range sums {
			files = append(files, crawlindex.FileInfo{Name: k.spec.relName(s.File), Size: s.Size, SHA256: s.SHA256, Stamp: s.Stamp})
		}
	}
	return files, nil
}

// commitCrawl commits the verified crawl to the index as run does
// (stage.Commit), unless a run of this task did already (the task was run
// again after the commit), and returns the report's stage; rep gets the
// index's crawls.
func (k *task) commitCrawl(ctx context.Context, rep *report.Report, verified verify.Stats) (report.Stage, error) {
	st := report.Stage{Name: stage.CommitName}
	if v := verified.Violations; v > 0 {
		return st, fmt.Errorf("not committed: verification found %d records lost", v)
	}
	ix, err := k.spec.openIndex()
	if err != nil {
		return st, err
	}
	if c := ix.Registry.Crawl(k.spec.Crawl); c != nil {
		st.Note = stage.CommitNote(ix, c)
		rep.Crawls = stage.CrawlsOf(ix.Registry)
		return st, nil
	}
	files, err := k.crawlFiles()
	if err != nil {
		return st, err
	}
	c := &stage.Commit{Index: ix, Crawl: &crawlindex.Crawl{Name: k.spec.Crawl, Location: k.spec.CrawlURL, Log: k.wd.file(workdir.LogFile)},
		Files: files, Deps: k.wd.file(workdir.DepsFile), WorkDir: string(k.wd), Sort: k.sorter}
	hashed, err := k.hashMarkers()
	if err != nil {
		return st, err
	}
	for i := range k.spec.Hosts {
		h := &k.spec.Hosts[i]
		c.After = append(c.After, k.wd.host(h, workdir.AfterFile))
		c.Logs = append(c.Logs, stage.LogFrom{Name: k.wd.host(h, workdir.LogFile), From: hashed[i].LogSize})
	}
	if ix, err = c.Run(ctx); err != nil {
		return st, err
	}
	st.Note = stage.CommitNote(ix, c.Crawl)
	rep.Crawls = stage.CrawlsOf(ix.Registry)
	return st, nil
}

package stage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/internal/tsv"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Commit commits a verified crawl to its crawl index: its responses as
// they are after the run become originals for later crawls, with its
// files (size, SHA-256, stamp), its figures and the crawls its revisits
// need. warcdedup run --index runs it as its last stage, a cluster job
// with an index in its account.
type Commit struct {
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
	// WorkDir gets the crawl's originals (workdir.CrawlOriginalsFile and
	// workdir.CrawlOriginalsByDigest), sorted as Sort says.
	WorkDir string
	Sort    syssort.Sorter
	// Refile are committed crawls' files the run wrote anew, every
	// record where it was (crawlindex.Change.Refile): recorded in the
	// same generation as the crawl.
	Refile map[string][]crawlindex.FileInfo
}

// LogFrom is a rewrite log from byte offset From.
type LogFrom struct {
	Name string
	From int64
}

// Run commits the crawl to the index c.Index is a generation of, and
// returns the new generation.
func (c *Commit) Run(ctx context.Context) (*crawlindex.Index, error) {
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
	return crawlindex.Commit(c.Index.Dir, crawlindex.Change{Add: c.Crawl, Files: c.Files, Refile: c.Refile, Originals: filepath.Join(c.WorkDir, workdir.CrawlOriginalsByDigest)})
}

// CommitNote says what a Commit committed, for the report's stage.
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

// originals writes the crawl's responses as they are after the run,
// sorted on digest, and counts its records.
func (c *Commit) originals(ctx context.Context) error {
	k := c.Crawl
	k.Records, k.Revisits = 0, 0
	out, err := atomicfile.Create(filepath.Join(c.WorkDir, workdir.CrawlOriginalsFile), 0o644)
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
	return c.Sort.Sort(ctx, manifest.ByDigest.Command, []string{filepath.Join(c.WorkDir, workdir.CrawlOriginalsFile)}, filepath.Join(c.WorkDir, workdir.CrawlOriginalsByDigest))
}

// copyResponses writes the lines of a manifest that are not revisits to
// w, counting its records and revisits in k.
func copyResponses(name string, w *manifest.Writer, k *crawlindex.Crawl) error {
	in, err := gzfile.Open(name)
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
func (c *Commit) figures() error {
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
func (c *Commit) requires() ([]crawlindex.Need, error) {
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
	for _, crawl := range slices.Sorted(maps.Keys(needs)) {
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

// FileSums is a crawl's files after its run, as the hash again read them,
// for the commit (workdir.AfterFilesFile): a file a line,
//
//	NAME SIZE SHA256 STAMP
//
// separated by tabs (spaces in earlier work directories, which
// ReadFileSums reads too), NAME as manifest field 1, "-" for a SHA-256 or stamp not known; the
// stamp (crawlindex.Stamp) has blanks of its own and comes last. Add is
// the hash again's warcsum.Runner.OnFile: the size and stamp are the
// file's right after it was read, on the host that read it.
type FileSums struct {
	mu sync.Mutex
	b  strings.Builder
}

// Add lists a file with its SHA-256.
func (f *FileSums) Add(in warcsum.Input, sha256 string) {
	stamp, size := "-", in.Size
	if fi, err := os.Stat(in.Path); err == nil {
		if s := crawlindex.Stamp(fi); s != "" {
			stamp = s
		}
		size = fi.Size()
	}
	if sha256 == "" {
		sha256 = "-"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(&f.b, "%s\t%d\t%s\t%s\n", manifest.EscapeFile(in.Name), size, sha256, stamp)
}

// Write writes the list to the file name, whole or not at all.
func (f *FileSums) Write(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return workdir.WriteFile(name, []byte(f.b.String()))
}

// FileSum is a line of a FileSums list: the file as the manifests name
// it, with its size, SHA-256 and stamp ("" where not known).
type FileSum struct {
	File          string
	Size          int64
	SHA256, Stamp string
}

// ReadFileSums reads a FileSums list. (A list a warcdedup run wrote
// before this form, "NAME SHA256" a line, gives the SHA-256 alone, with
// size -1.)
func ReadFileSums(name string) ([]FileSum, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var out []FileSum
	for n, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "" {
			continue
		}
		f := tsv.SplitN(l, 4) // the stamp has blanks: it is last
		if len(f) != 4 && len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"NAME SIZE SHA256 STAMP\"", name, n+1)
		}
		file, err := manifest.UnescapeFile(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
		}
		s := FileSum{File: file, Size: -1}
		if len(f) == 2 {
			s.SHA256 = f[1]
		} else {
			if s.Size, err = strconv.ParseInt(f[1], 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: size: %w", name, n+1, err)
			}
			s.SHA256, s.Stamp = f[2], f[3]
		}
		if s.SHA256 == "-" {
			s.SHA256 = ""
		}
		if s.Stamp == "-" {
			s.Stamp = ""
		}
		out = append(out, s)
	}
	return out, nil
}

package dedup

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

	"warcdedup/crawlindex"
	"warcdedup/digest"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// restoreDependents makes the crawls that need a crawl being removed
// independent of it: each of their revisits that refers to one of its
// records is re-pointed to another committed copy of the payload, or made
// the whole record again from the crawl being removed (restore.Restorer), and
// their originals and figures in the index are made anew.
type restoreDependents struct {
	ix     *crawlindex.Index
	gone   *crawlindex.Crawl
	opt    RemoveOptions
	tmpDir *crawlindex.TempDir
	tmp    string // tmpDir's path
	// finder looks up the index's originals by digest.
	finder *crawlindex.Finder
	// goneCaptures are the originals of the crawl being removed, sorted
	// on URI and date: the records the revisits to restore refer to.
	goneCaptures *manifest.Table
	deps         []*crawlindex.Crawl
	// After run: per dependent, its files now and how its figures moved.
	files   map[string][]crawlindex.FileInfo
	changes map[string]*dependentChange
}

// dependentChange is how a dependent crawl's figures move.
type dependentChange struct {
	restored, grown int64            // revisits made whole, and the bytes that added
	repointed       map[string]int64 // revisits re-pointed, per crawl now needed
	repointedFiles  map[string]map[string]bool
}

func newRestoreDependents(ix *crawlindex.Index, gone *crawlindex.Crawl, opt RemoveOptions) (*restoreDependents, error) {
	td, err := crawlindex.NewTempDir(ix.Dir, "remove")
	if err != nil {
		return nil, err
	}
	r := &restoreDependents{ix: ix, gone: gone, opt: opt, tmpDir: td, tmp: td.Path,
		deps: ix.Registry.Dependents(gone.Name), files: map[string][]crawlindex.FileInfo{}, changes: map[string]*dependentChange{}}
	if err := r.open(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// open reads the partitions' runs as tables and the removed crawl's
// originals into a table on capture.
func (r *restoreDependents) open() error {
	var err error
	if r.finder, err = r.ix.Finder(); err != nil {
		return err
	}
	goneLines := filepath.Join(r.tmp, "gone.manifest")
	out, err := os.Create(goneLines)
	if err != nil {
		return err
	}
	w := manifest.NewWriter(out)
	if err := copyCrawlLines(r.ix, r.gone.Name, w); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	byCapture := goneLines + ".by-capture"
	if err := (syssort.Sorter{TempDir: r.tmp, Compress: syssort.Compressor()}).Sort(context.Background(), manifest.ByCapture.Command, []string{goneLines}, byCapture); err != nil {
		return err
	}
	r.goneCaptures, err = manifest.OpenTableBy(byCapture, manifest.CaptureKey)
	return err
}

// copyCrawlLines copies the index's originals of one crawl.
func copyCrawlLines(ix *crawlindex.Index, crawl string, w *manifest.Writer) error {
	in, err := ix.Originals()
	if err != nil {
		return err
	}
	defer in.Close()
	for {
		l, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if crawlindex.CrawlOf(l.File) == crawl {
			if err := w.Write(&l); err != nil {
				return err
			}
		}
	}
}

func (r *restoreDependents) close() {
	if r.goneCaptures != nil {
		r.goneCaptures.Close()
	}
	if r.finder != nil {
		r.finder.Close()
	}
	r.tmpDir.Remove()
}

// locations are where every committed crawl's files are.
func (r *restoreDependents) locator() *source.Locator {
	return &source.Locator{Prefixes: r.ix.Prefixes()}
}

// isGone reports whether a capture is one of the removed crawl's originals.
func (r *restoreDependents) isGone(uri, date string) bool {
	found := false
	r.goneCaptures.Find(manifest.CaptureKeyOf(uri, date), func(*manifest.Line) error {
		found = true
		return manifest.ErrStop
	})
	return found
}

// alternative is another committed copy of an original's payload: the
// earliest capture of its digest in a crawl that stays, if it is not later
// than the revisit (re-pointing a revisit forward in time would have it
// replay a capture taken after it; it is made whole instead).
func (r *restoreDependents) alternative(orig *manifest.Line, revisitDate string) (manifest.Line, bool) {
	revisit, ok := captureTime(revisitDate)
	if !ok {
		return manifest.Line{}, false
	}
	var alt manifest.Line
	found := false
	r.finder.Find(orig.Digest, func(l *manifest.Line) error {
		if crawlindex.CrawlOf(l.File) == r.gone.Name {
			return nil
		}
		if at, ok := captureTime(l.Date); ok && !at.After(revisit) {
			alt, found = *l, true
			return manifest.ErrStop
		}
		return nil
	})
	return alt, found
}

// captureTime reads a WARC-Date (W3C-ISO8601, to the second or finer, or
// less fine as WARC 1.1 allows).
func captureTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// run re-points or restores the dependents' revisits of the removed
// crawl's records, crawl by crawl, each in its own rewrite log.
func (r *restoreDependents) run(ctx context.Context, res *RemoveResult) error {
	// Before any rewrite: a dependent of WACZ packages is refused
	// (crawlwacz.go), the restore rewriting plain WARC files only.
	for _, d := range r.deps {
		if err := refuseWACZDependent(r.ix, d, r.gone.Name); err != nil {
			return err
		}
	}
	for _, d := range r.deps {
		if err := r.runOne(ctx, d, res); err != nil {
			return fmt.Errorf("crawl %s: %w", d.Name, err)
		}
	}
	return nil
}

func (r *restoreDependents) runOne(ctx context.Context, d *crawlindex.Crawl, res *RemoveResult) error {
	logName := d.Log
	if logName == "" {
		logName = filepath.Join(r.ix.Dir, "work", d.Name, workdir.LogFile)
	}
	if err := os.MkdirAll(filepath.Dir(logName), 0o755); err != nil {
		return err
	}
	log, err := rewritelog.Open(logName)
	if err != nil {
		return err
	}
	defer log.Close()
	from := log.Size()
	log.Since(from) // the index's offsets are those of the files now
	loc := r.locator()
	originals, err := originals.New(loc, r.finder.Tables()...)
	if err != nil {
		return err
	}
	committed, err := r.ix.Files(d.Name)
	if err != nil {
		return err
	}
	var files []string
	for _, f := range committed {
		files = append(files, d.Name+"/"+manifest.EscapeFile(f.Name))
	}
	ch := &dependentChange{repointed: map[string]int64{}, repointedFiles: map[string]map[string]bool{}}
	rs := restore.Restorer{Prefixes: loc.Prefixes, Captures: r.goneCaptures, Originals: originals, All: true, Only: r.isGone,
		Retarget: r.alternative, Jobs: max(r.opt.Jobs, 1),
		Refused: func(err error) {
			if r.opt.Display != nil {
				r.opt.Display.Print("warcdedup: error: %v", err)
			}
		},
		Warn: func(err error) {
			if r.opt.Display != nil {
				r.opt.Display.Note("warcdedup: warning: %v", err)
			}
		}}
	st, err := rs.Run(ctx, files, log)
	if err != nil {
		return err
	}
	if cerr := log.Close(); cerr != nil {
		return cerr
	}
	res.Repointed += st.Repointed
	res.Restored += st.Foreign
	res.Refused += st.Refused
	if st.Left > 0 {
		res.Refused += st.Left // a revisit of the removed crawl that stays would not replay
	}
	if err := r.changesOf(logName, from, d, ch); err != nil {
		return err
	}
	r.changes[d.Name] = ch
	return nil
}

// changesOf reads the dependent's log entries of this removal: the bytes
// restored records added, and which crawls re-pointed revisits need now.
func (r *restoreDependents) changesOf(logName string, from int64, d *crawlindex.Crawl, ch *dependentChange) error {
	f, err := os.Open(logName)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := rewritelog.NewReader(io.NewSectionReader(f, from, 1<<62), logName)
	for {
		e, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch e.Kind {
		case rewritelog.Restored:
			ch.restored++
			ch.grown += e.NewLength - e.OldLength
		case rewritelog.Revisit:
			// Re-pointed: the crawl of its new original.
			uri, date := e.RefersToURI, e.RefersTo
			if crawl, file, ok := r.captureOf(uri, date, e.PayloadDigest); ok {
				ch.repointed[crawl]++
				if ch.repointedFiles[crawl] == nil {
					ch.repointedFiles[crawl] = map[string]bool{}
				}
				ch.repointedFiles[crawl][file] = true
			}
		}
	}
}

// captureOf finds the committed original of a payload digest (as a
// revisit writes it) with that URI and date: its crawl and file.
func (r *restoreDependents) captureOf(uri, date, digestValue string) (string, string, bool) {
	algo, sum, err := digest.ParseHeader(digestValue)
	if err != nil {
		return "", "", false
	}
	d := algo.Format(sum)
	var crawl, file string
	r.finder.Find(d, func(l *manifest.Line) error {
		if l.URI == uri && l.Date == date {
			crawl = crawlindex.CrawlOf(l.File)
			name, _ := manifest.UnescapeFile(l.File)
			file = strings.TrimPrefix(name, crawl+"/")
			return manifest.ErrStop
		}
		return nil
	})
	return crawl, file, crawl != ""
}

// change is the index's change: the removed crawl out, its dependents'
// originals made anew from their files now, their figures moved.
func (r *restoreDependents) change(ctx context.Context) (crawlindex.Change, error) {
	all := filepath.Join(r.tmp, "dependents.manifest")
	out, err := os.Create(all)
	if err != nil {
		return crawlindex.Change{}, err
	}
	defer out.Close()
	replace := map[string][]crawlindex.FileInfo{}
	algo, err := digest.ParseLabel(r.ix.Registry.Algorithm)
	if err != nil {
		algo = digest.SHA1
	}
	for _, d := range r.deps {
		files, err := r.hash(ctx, d, algo, out)
		if err != nil {
			return crawlindex.Change{}, fmt.Errorf("crawl %s: %w", d.Name, err)
		}
		replace[d.Name] = files
	}
	r.files = replace
	if err := out.Close(); err != nil {
		return crawlindex.Change{}, err
	}
	sorted := all + ".by-digest"
	if err := (syssort.Sorter{TempDir: r.tmp, Compress: syssort.Compressor()}).Sort(ctx, manifest.ByDigest.Command, []string{all}, sorted); err != nil {
		return crawlindex.Change{}, err
	}
	return crawlindex.Change{Remove: r.gone.Name, Replace: replace, Originals: sorted, Update: r.update}, nil
}

// hash lists a dependent crawl's responses as its files are now (the
// responses it restored among them) to out, and returns its files.
func (r *restoreDependents) hash(ctx context.Context, d *crawlindex.Crawl, algo digest.Algorithm, out io.Writer) ([]crawlindex.FileInfo, error) {
	committed, err := r.ix.Files(d.Name)
	if err != nil {
		return nil, err
	}
	if strings.Contains(d.Location, "://") {
		return nil, fmt.Errorf("its files are served at %s: restore them where they are stored", d.Location)
	}
	var inputs []warcsum.Input
	for _, f := range committed {
		p := filepath.Join(d.Location, filepath.FromSlash(f.Name))
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, warcsum.Input{Path: p, Name: d.Name + "/" + f.Name, Size: fi.Size()})
	}
	sums := map[string]string{}
	var failed error
	run := warcsum.Runner{Options: warcsum.Options{Algorithm: algo, Damage: func(error) {}, Warn: func(error) {}}, Jobs: max(r.opt.Jobs, 1),
		OnFile:      func(in warcsum.Input, sum string) { sums[in.Name] = sum },
		OnFileError: func(in warcsum.Input, err error) { failed = errors.Join(failed, err) }}
	lines := filepath.Join(r.tmp, d.Name+".manifest")
	mf, err := os.Create(lines)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	if _, err := run.Run(inputs, mf); err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, failed
	}
	if _, err := mf.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	w := manifest.NewWriter(out)
	in := manifest.NewReader(mf, lines)
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if !l.IsRevisit() {
			if err := w.Write(&l); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	var files []crawlindex.FileInfo
	for _, in := range inputs {
		fi, err := os.Stat(in.Path)
		if err != nil {
			return nil, err
		}
		files = append(files, crawlindex.FileInfo{Name: strings.TrimPrefix(in.Name, d.Name+"/"), Size: fi.Size(), SHA256: sums[in.Name], Stamp: crawlindex.Stamp(fi)})
	}
	return files, ctx.Err()
}

// update moves the dependents' figures: what they need, the revisits
// they wrote and the bytes those conserve.
func (r *restoreDependents) update(reg *crawlindex.Registry) error {
	for i, k := range reg.Crawls {
		ch := r.changes[k.Name]
		if ch == nil {
			ch = &dependentChange{}
		}
		c := *k
		c.Revisits -= ch.restored
		c.RevisitsWritten = max(0, c.RevisitsWritten-ch.restored)
		c.BytesConserved -= ch.grown
		var needs []crawlindex.Need
		for _, n := range c.Requires {
			if n.Crawl != r.gone.Name {
				needs = append(needs, n)
			}
		}
		for crawl, count := range ch.repointed {
			if crawl == k.Name {
				continue // its own records: no other crawl needed
			}
			j := slices.IndexFunc(needs, func(n crawlindex.Need) bool { return n.Crawl == crawl })
			if j < 0 {
				needs = append(needs, crawlindex.Need{Crawl: crawl})
				j = len(needs) - 1
			}
			needs[j].Revisits += count
			have := map[string]bool{}
			for _, f := range needs[j].Files {
				have[f.Name] = true
			}
			files, err := r.ix.Files(crawl)
			if err != nil {
				return err
			}
			for _, f := range files {
				if ch.repointedFiles[crawl][f.Name] && !have[f.Name] {
					needs[j].Files = append(needs[j].Files, f)
				}
			}
		}
		// Files of a crawl this change rewrote are needed as they are now.
		for j := range needs {
			if now, ok := r.files[needs[j].Crawl]; ok {
				for f := range needs[j].Files {
					if k := slices.IndexFunc(now, func(n crawlindex.FileInfo) bool { return n.Name == needs[j].Files[f].Name }); k >= 0 {
						needs[j].Files[f] = now[k]
					}
				}
			}
		}
		slices.SortFunc(needs, func(a, b crawlindex.Need) int { return strings.Compare(a.Crawl, b.Crawl) })
		c.Requires = needs
		reg.Crawls[i] = &c
	}
	return nil
}

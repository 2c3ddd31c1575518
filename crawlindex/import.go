package crawlindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/cdx"
	"warcdedup/manifest"
	"warcdedup/wacz"
)

// ImportOptions say what to import and from where.
type ImportOptions struct {
	Crawl string
	// Location is where the crawl's files are: the directory the index's
	// file names are relative to, or the base URL that serves them.
	Location string
	// Sort sorts a manifest file on digest into another (the system sort,
	// as the job runs it).
	Sort func(ctx context.Context, in, out string) error
	// TempDir holds the files of the import while it runs.
	TempDir string
	// Report receives each line left out, and why.
	Report func(error)
	// SkipDamaged imports an index with damaged lines (lines that are no
	// CDX or CDXJ line), leaving them out and counting them; else the
	// first one stops the import, which commits nothing.
	SkipDamaged bool
	// Locate, if set, finds where the record a line of index i names
	// is: the crawl's file holding it (relative to Location) and where
	// the line's file starts in it. A WACZ's CDXJ names its WARC members
	// ("data.warc.gz"), stored in the package: their records are named by
	// the package and their offset in it, as a run reads them. An error
	// stops the import.
	Locate func(index int, filename string) (file string, start int64, err error)
}

// ImportStats counts what an import read.
type ImportStats struct {
	Lines    int64 // index lines read
	Records  int64 // capture lines
	Imported int64 // originals imported
	Skipped  int64 // capture lines left out (not a 200 response, no digest, no location)
	Damaged  int64 // lines that are no CDX or CDXJ line, left out (SkipDamaged)
}

// DamagedLineError stops an import at a damaged line of an index.
type DamagedLineError struct {
	Err error // a *cdx.LineError: the index and the line
}

func (e *DamagedLineError) Error() string {
	return fmt.Sprintf("%v: a damaged line; nothing imported (--skip-damaged imports the index without its damaged lines)", e.Err)
}

func (e *DamagedLineError) Unwrap() error { return e.Err }

// Import commits a crawl from CDX or CDXJ indexes alone, without reading its
// WARC files: each 200 capture of an HTTP URL (see httpCapture) with a
// SHA-1 digest, a file name, an offset and a length becomes an original
// of the index. Header digests are
// trusted only as candidates: a run compares the bytes of such an
// original with its duplicate's before it writes any revisit, and takes
// the URI and date its record spells. Nor can a line show a response its
// crawler cut short (WARC-Truncated) or a segment, which is never a copy
// of another: such a line is imported as any other; the run that reads
// it leaves it out with a warning and keeps its own copy (stage.Resolve),
// and VerifyOriginals notes it. So is a line of an http: URL naming a
// record that is no response (a resource record, to which jwarc's cdx
// gives status 200: see import_kind.go), which the run leaves out alike.
// Only the files the indexes name are listed, with their size when
// Location is a directory. The import holds the crawl's registration
// (see RegisterRun) while it works.
func Import(ctx context.Context, dir string, opt ImportOptions, indexes []io.Reader, names []string) (*Index, ImportStats, error) {
	var st ImportStats
	if err := CheckName(opt.Crawl); err != nil {
		return nil, st, err
	}
	if opt.Location == "" {
		return nil, st, errors.New("say where the crawl's files are (a directory or a base URL)")
	}
	ix, err := OpenOrCreate(dir)
	if err != nil {
		return nil, st, err
	}
	if ix.Registry.Crawl(opt.Crawl) != nil {
		return nil, st, fmt.Errorf("crawl %s is already committed to the index %s", opt.Crawl, ix.Dir)
	}
	reg, err := RegisterRun(dir, opt.Crawl)
	if err != nil {
		return nil, st, err
	}
	defer reg.Release()
	raw := filepath.Join(opt.TempDir, "import-"+opt.Crawl+".manifest")
	sorted := raw + ".by-digest"
	defer os.Remove(raw)
	defer os.Remove(sorted)
	out, err := os.Create(raw)
	if err != nil {
		return nil, st, err
	}
	w := manifest.NewWriter(out)
	files := map[string]bool{}
	revisits := map[string]int64{} // by package (opt.Locate)
	for i, in := range indexes {
		if err := importIndex(ctx, in, i, names[i], opt, w, files, revisits, &st); err != nil {
			out.Close()
			return nil, st, err
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return nil, st, err
	}
	if err := out.Close(); err != nil {
		return nil, st, err
	}
	if st.Imported == 0 {
		return nil, st, fmt.Errorf("no capture to import in %s", strings.Join(names, ", "))
	}
	if err := opt.Sort(ctx, raw, sorted); err != nil {
		return nil, st, err
	}
	var infos []FileInfo
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := FileInfo{Name: name}
		if !strings.Contains(opt.Location, "://") {
			if fi, err := os.Stat(filepath.Join(opt.Location, filepath.FromSlash(name))); err == nil {
				f.Size, f.Stamp = fi.Size(), Stamp(fi)
			}
		}
		infos = append(infos, f)
	}
	needs, err := packageNeeds(ix, opt, infos, revisits)
	if err != nil {
		return nil, st, err
	}
	ix, err = Commit(dir, Change{Add: &Crawl{Name: opt.Crawl, Location: opt.Location, Imported: true, Records: st.Records, Requires: needs},
		Files: infos, Originals: sorted})
	if err == nil {
		reg.Drop()
	}
	return ix, st, err
}

// packageNeeds are the committed crawls the imported crawl's WACZ
// packages require (datapackage.json relation.requires: a package of
// another crawl, named by its crawlId, or by a file name one committed
// crawl alone has), with those packages as the index lists them: what
// its revisits need, as a run's commit records it, so that the index
// refuses to remove those crawls (or restores first) rather than saying
// their files may be deleted. Revisits counts, for each crawl, the
// revisits of the packages requiring it (at most that many need it: the
// index lines do not say which package a revisit's original is in).
func packageNeeds(ix *Index, opt ImportOptions, infos []FileInfo, revisits map[string]int64) ([]Need, error) {
	if strings.Contains(opt.Location, "://") {
		return nil, nil
	}
	type need struct {
		revisits int64
		files    map[string]FileInfo
	}
	needs := map[string]*need{}
	listed := map[string][]FileInfo{}
	filesOf := func(crawl string) ([]FileInfo, error) {
		if f, ok := listed[crawl]; ok {
			return f, nil
		}
		f, err := ix.Files(crawl)
		listed[crawl] = f
		return f, err
	}
	for _, info := range infos {
		if !wacz.IsWACZ(info.Name) {
			continue
		}
		p, err := wacz.Open(filepath.Join(opt.Location, filepath.FromSlash(info.Name)))
		if err != nil {
			return nil, err
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", info.Name, err)
		}
		counted := map[string]bool{}
		for _, q := range reqs {
			var crawls []string
			for _, k := range ix.Registry.Crawls {
				if k.Name != opt.Crawl && (q.CrawlID == "" || q.CrawlID == k.Name) {
					crawls = append(crawls, k.Name)
				}
			}
			var found []FileInfo
			var of string
			for _, k := range crawls {
				files, err := filesOf(k)
				if err != nil {
					return nil, err
				}
				for _, f := range files {
					if path.Base(f.Name) == q.Filename && wacz.IsWACZ(f.Name) {
						found, of = append(found, f), k
					}
				}
			}
			if len(found) != 1 {
				continue // none committed, or not one known
			}
			n := needs[of]
			if n == nil {
				n = &need{files: map[string]FileInfo{}}
				needs[of] = n
			}
			n.files[found[0].Name] = found[0]
			if !counted[of] {
				counted[of] = true
				n.revisits += revisits[info.Name]
			}
		}
	}
	var out []Need
	for _, crawl := range slices.Sorted(maps.Keys(needs)) {
		n := needs[crawl]
		need := Need{Crawl: crawl, Revisits: n.revisits}
		for _, name := range slices.Sorted(maps.Keys(n.files)) {
			need.Files = append(need.Files, n.files[name])
		}
		out = append(out, need)
	}
	return out, nil
}

// importIndex reads one index into manifest lines; revisits counts the
// revisits of each file opt.Locate names.
func importIndex(ctx context.Context, in io.Reader, index int, name string, opt ImportOptions, w *manifest.Writer, files map[string]bool, revisits map[string]int64, st *ImportStats) error {
	r, err := cdx.NewReader(bufio.NewReaderSize(in, 256<<10), name, cdx.Options{})
	if err != nil {
		return err
	}
	skip := func(l *cdx.Line, why string) {
		st.Skipped++
		if opt.Report != nil {
			opt.Report(fmt.Errorf("%s: line %d: left out: %s", name, l.Number, why))
		}
	}
	for {
		if st.Lines%100000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		st.Lines++
		if err != nil {
			var le *cdx.LineError
			if !errors.As(err, &le) {
				return err
			}
			if !opt.SkipDamaged {
				return &DamagedLineError{Err: err}
			}
			if opt.Report != nil {
				opt.Report(err)
			}
			st.Damaged++
			continue
		}
		if l.Kind != cdx.Record {
			continue
		}
		st.Records++
		switch {
		case string(l.MIME) == "warc/revisit":
			skip(l, "a revisit")
			if opt.Locate != nil {
				if f, _, err := opt.Locate(index, string(l.Filename)); err == nil {
					revisits[f]++
				}
			}
			continue
		case string(l.Status) != "200":
			skip(l, fmt.Sprintf("status %q, not a 200 response", l.Status))
			continue
		case !httpCapture(l.URL):
			skip(l, fmt.Sprintf("URL %q is no HTTP URL: the record is no HTTP response", l.URL))
			continue
		case l.Offset < 0 || l.Length <= 0 || len(l.Filename) == 0:
			skip(l, "no file, offset or length")
			continue
		}
		digest, ok := sha1Digest(l.Digest)
		if !ok {
			skip(l, fmt.Sprintf("digest %q is no SHA-1", l.Digest))
			continue
		}
		date, ok := warcDate(l.Timestamp)
		if !ok {
			skip(l, fmt.Sprintf("timestamp %q", l.Timestamp))
			continue
		}
		file := path.Clean(strings.TrimPrefix(string(l.Filename), "/"))
		if file == "." || strings.HasPrefix(file, "../") || strings.Contains(string(l.Filename), "://") {
			skip(l, fmt.Sprintf("file name %q is not relative to the crawl", l.Filename))
			continue
		}
		offset := l.Offset
		if opt.Locate != nil {
			f, start, err := opt.Locate(index, string(l.Filename))
			if err != nil {
				return fmt.Errorf("%s: line %d: %w", name, l.Number, err)
			}
			file, offset = f, start+l.Offset
		}
		files[file] = true
		ml := manifest.Line{File: opt.Crawl + "/" + manifest.EscapeFile(file), Offset: offset, Length: l.Length,
			URI: manifest.EscapeField(string(l.URL)), Date: date, Digest: digest, Fields: 6}
		if err := w.Write(&ml); err != nil {
			return err
		}
		st.Imported++
	}
}

// sha1Digest is a CDX digest as the manifest writes it: "sha1:" and 32
// base32 digits (indexes write it with or without its label, some in hex).
func sha1Digest(d []byte) (string, bool) {
	v := string(bytes.TrimPrefix(bytes.TrimPrefix(d, []byte("sha1:")), []byte("SHA1:")))
	switch len(v) {
	case 32:
		b, err := base32.StdEncoding.DecodeString(strings.ToUpper(v))
		if err != nil || len(b) != 20 {
			return "", false
		}
		return "sha1:" + base32.StdEncoding.EncodeToString(b), true
	case 40:
		b, err := hex.DecodeString(v)
		if err != nil {
			return "", false
		}
		return "sha1:" + base32.StdEncoding.EncodeToString(b), true
	}
	return "", false
}

// warcDate turns a 14-digit CDX timestamp into a WARC-Date.
func warcDate(ts []byte) (string, bool) {
	t, err := time.Parse("20060102150405", string(ts))
	if err != nil {
		return "", false
	}
	return t.UTC().Format("2006-01-02T15:04:05Z"), true
}

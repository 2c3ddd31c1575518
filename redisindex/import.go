package redisindex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"warcdedup/cdx"
	"warcdedup/crawlindex"
	"warcdedup/digest"
	"warcdedup/fixity"
	"warcdedup/internal/fspath"
	"warcdedup/internal/redis"
	"warcdedup/manifest"
)

// ImportOptions say what an import takes and from where.
type ImportOptions struct {
	// Crawls limits the import to these committed crawls; empty means
	// every committed crawl.
	Crawls []string
	// Location is the directory that holds the crawls' WACZ files, by the
	// names c:CRAWL:wacz gives them. It becomes the crawls' location in
	// the index.
	Location string
	// TempDir holds the import's files while it runs.
	TempDir string
	// Sort runs the system sort command ("LC_ALL=C sort -k6,6 ...") on
	// in into out.
	Sort func(ctx context.Context, command, in, out string) error
	// Batch is the number of look-ups per round trip (1,000 if zero).
	Batch int
	// Warn receives what is left out, and why.
	Warn func(error)
	// Progress, if set, is told the bytes of WACZ files read so far (each
	// file is hashed, then its indexes read).
	Progress func(bytes int64)
}

// ImportStats are what an import did.
type ImportStats struct {
	Imported    []string // crawls committed to the index
	Present     []string // crawls the index already commits, with the same files
	Uncommitted []string // running in Browsertrix: left out
	Canceled    []string // committed but marked for removal (canceledcrawls): left out
	Originals   int64    // originals taken
	Revisits    int64    // revisit lines read
	Skipped     int64    // other lines: not 2xx, urn:, a digest the crawl's entries lack
	Files       int64    // WACZ files read (and hashed)
}

// Import commits the committed crawls of the Redis on c to the crawl
// index in dir as imported crawls: for each crawl, every 2xx response of
// its WACZ files (read from their CDXJ indexes, no WARC bytes read) whose
// digest the crawl's entries hold becomes an original, named by the WACZ
// and its offset there; its files are the WACZ files with their size and
// SHA-256; what its revisits need is found as the crawler finds it
// (alldupes, then the holder's entry). Every crawl is checked before any
// is committed; each is then committed alone (a generation each), so
// that an import stopped midway is finished by running it again.
func Import(ctx context.Context, c *redis.Conn, dir string, opt ImportOptions) (*ImportStats, error) {
	if opt.Batch <= 0 {
		opt.Batch = 1000
	}
	if opt.Warn == nil {
		opt.Warn = func(error) {}
	}
	if opt.Location == "" || strings.Contains(opt.Location, "://") {
		return nil, fmt.Errorf("say with --location which directory holds the crawls' WACZ files (an import reads their indexes)")
	}
	loc, err := fspath.Abs(opt.Location)
	if err != nil {
		return nil, err
	}
	opt.Location = loc
	ix, err := crawlindex.Open(dir)
	if err != nil && !errors.Is(err, crawlindex.ErrNoIndex) {
		return nil, err
	}
	im := &importer{c: c, ix: ix, opt: opt, st: &ImportStats{}, waczLists: map[string][]WACZFile{}}
	crawls, err := im.select_()
	if err != nil {
		return nil, err
	}
	var plans []*crawlImport
	var problems []string
	for _, name := range crawls {
		p, err := im.prepare(ctx, name)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case p != nil:
			plans = append(plans, p)
		}
	}
	if len(problems) > 0 {
		return im.st, &ConflictError{Problems: problems}
	}
	// Every crawl is read before any is committed: a damaged WACZ or an
	// entry without its record stops the import with the index as it was.
	tmp, err := os.MkdirTemp(opt.TempDir, "redis-import-")
	if err != nil {
		return im.st, err
	}
	defer os.RemoveAll(tmp)
	for _, p := range plans {
		if err := im.stage(ctx, p, tmp); err != nil {
			return im.st, fmt.Errorf("crawl %s: %w", p.name, err)
		}
	}
	for _, p := range plans {
		if p.crawl.Requires, err = im.requires(ctx, p, plans, tmp); err != nil {
			return im.st, fmt.Errorf("crawl %s: %w", p.name, err)
		}
	}
	for _, p := range plans {
		if _, err := crawlindex.Commit(im.ix.Dir, crawlindex.Change{Add: p.crawl, Files: p.files, Originals: p.originals}); err != nil {
			return im.st, fmt.Errorf("crawl %s: %w", p.name, err)
		}
		im.st.Imported = append(im.st.Imported, p.name)
	}
	return im.st, nil
}

type importer struct {
	c   *redis.Conn
	ix  *crawlindex.Index
	opt ImportOptions
	st  *ImportStats

	algorithm digest.Algorithm // of the index, or of the Redis for a new index
	waczLists map[string][]WACZFile

	read, reported int64 // bytes of WACZ files read, and last told
}

// crawlImport is a crawl checked and ready to import.
type crawlImport struct {
	name   string
	files  []crawlindex.FileInfo
	counts Counts
	hlen   int64
	// Once staged: the crawl to commit and its originals, sorted; the
	// crawls its revisits need, and the file of those references.
	crawl     *crawlindex.Crawl
	originals string
	needs     map[string]*need
	refs      string
}

// select_ lists the committed crawls to import, sorted, and names those
// left out.
func (im *importer) select_() ([]string, error) {
	set := func(key string) ([]string, error) {
		m, err := redis.Strings(im.c.Do("SMEMBERS", key))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		slices.Sort(m)
		return m, nil
	}
	committed, err := set(keyAllCrawls)
	if err != nil {
		return nil, err
	}
	uncommitted, err := set(keyUncommitted)
	if err != nil {
		return nil, err
	}
	canceled, err := set(keyCanceled)
	if err != nil {
		return nil, err
	}
	want := func(name string) bool { return len(im.opt.Crawls) == 0 || slices.Contains(im.opt.Crawls, name) }
	for _, name := range uncommitted {
		if want(name) {
			im.st.Uncommitted = append(im.st.Uncommitted, name)
			im.opt.Warn(fmt.Errorf("crawl %s left out: it is still running in Browsertrix (in %s), not committed", name, keyUncommitted))
		}
	}
	var out []string
	for _, name := range committed {
		switch {
		case !want(name):
		case slices.Contains(canceled, name):
			im.st.Canceled = append(im.st.Canceled, name)
			im.opt.Warn(fmt.Errorf("crawl %s left out: it was canceled (in %s) and is to be purged", name, keyCanceled))
		default:
			out = append(out, name)
		}
	}
	for _, name := range im.opt.Crawls {
		if !slices.Contains(committed, name) && !slices.Contains(uncommitted, name) {
			return nil, fmt.Errorf("crawl %s is not in the Redis (neither in %s nor in %s)", name, keyAllCrawls, keyUncommitted)
		}
	}
	if im.ix.Registry.Algorithm != "" {
		a, err := digest.ParseLabel(im.ix.Registry.Algorithm)
		if err != nil {
			return nil, err
		}
		im.algorithm = a
	}
	return out, nil
}

// prepare checks a crawl's keys and files before anything is written:
// its entries, its WACZ list, its files there with the size and hash the
// list gives. A crawl the index already commits with the same files is
// Present (nil, nil).
func (im *importer) prepare(ctx context.Context, name string) (*crawlImport, error) {
	if err := crawlindex.CheckName(name); err != nil {
		return nil, fmt.Errorf("crawl %s cannot be a crawl of the index: %v", name, err)
	}
	p := &crawlImport{name: name}
	var err error
	if p.hlen, err = redis.Int64(im.c.Do("HLEN", hashesKey(name))); err != nil {
		return nil, fmt.Errorf("%s: %w", hashesKey(name), err)
	}
	if p.hlen == 0 {
		return nil, fmt.Errorf("crawl %s is committed (in %s) but %s is missing or empty: a partial key set", name, keyAllCrawls, hashesKey(name))
	}
	if err := im.checkEntries(name); err != nil {
		return nil, err
	}
	list, err := im.waczList(name)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("crawl %s is committed but %s is missing or empty: a partial key set", name, waczKey(name))
	}
	kv, err := redis.Strings(im.c.Do("HGETALL", countsKey(name)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", countsKey(name), err)
	}
	if p.counts, err = parseCounts(kv); err != nil {
		return nil, fmt.Errorf("%s: %w", countsKey(name), err)
	}
	if k := im.ix.Registry.Crawl(name); k != nil {
		files, err := im.ix.Files(name)
		if err != nil {
			return nil, fmt.Errorf("crawl %s: its files in the index: %w", name, err)
		}
		if why := differ(files, list); why != "" {
			return nil, fmt.Errorf("crawl %s is in both indexes with other files (%s): a crawl name is one crawl", name, why)
		}
		im.st.Present = append(im.st.Present, name)
		return nil, nil
	}
	seen := map[string]bool{}
	for _, w := range list {
		if w.Filename != filepath.Base(w.Filename) || w.Filename == ".." || strings.ContainsAny(w.Filename, "/\\") {
			return nil, fmt.Errorf("%s lists %q, which is not a file name", waczKey(name), w.Filename)
		}
		if seen[w.Filename] {
			return nil, fmt.Errorf("%s lists %s twice", waczKey(name), w.Filename)
		}
		seen[w.Filename] = true
		f, err := im.hashFile(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("crawl %s: %w", name, err)
		}
		p.files = append(p.files, f)
	}
	return p, nil
}

// checkEntries reads a first batch of the crawl's entries: they must be
// entries, of digests of one algorithm, the index's.
func (im *importer) checkEntries(name string) error {
	v, err := im.c.Do("HSCAN", hashesKey(name), "0", "COUNT", "100")
	if err != nil {
		return fmt.Errorf("%s: %w", hashesKey(name), err)
	}
	if v.Kind != redis.Array || len(v.Array) != 2 {
		return fmt.Errorf("%s: HSCAN reply is not [cursor, elements]", hashesKey(name))
	}
	kv, err := redis.Strings(v.Array[1], nil)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		_, a, err := DigestOfKey(kv[i])
		if err != nil {
			return fmt.Errorf("%s: %w", hashesKey(name), err)
		}
		if im.algorithm == 0 {
			im.algorithm = a
		}
		if a != im.algorithm {
			return fmt.Errorf("%s holds %s digests (%s), the index %s digests: an index holds digests of one algorithm", hashesKey(name), a, kv[i], im.algorithm)
		}
		if _, err := ParseEntry(kv[i+1]); err != nil {
			return fmt.Errorf("%s: %s: %w", hashesKey(name), kv[i], err)
		}
	}
	return nil
}

// waczList is c:CRAWL:wacz, read once.
func (im *importer) waczList(crawl string) ([]WACZFile, error) {
	if l, ok := im.waczLists[crawl]; ok {
		return l, nil
	}
	raw, err := redis.Strings(im.c.Do("LRANGE", waczKey(crawl), "0", "-1"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", waczKey(crawl), err)
	}
	var list []WACZFile
	for _, s := range raw {
		w, err := ParseWACZFile(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", waczKey(crawl), err)
		}
		list = append(list, w)
	}
	im.waczLists[crawl] = list
	return list, nil
}

// differ says how the index's files of a crawl differ from its WACZ list,
// "" if they do not.
func differ(files []crawlindex.FileInfo, list []WACZFile) string {
	byName := map[string]WACZFile{}
	for _, w := range list {
		byName[w.Filename] = w
	}
	for _, f := range files {
		w, ok := byName[f.Name]
		switch {
		case !ok:
			return fmt.Sprintf("the Redis lists no %s", f.Name)
		case w.Size != 0 && w.Size != f.Size:
			return fmt.Sprintf("%s is %d bytes in the Redis, %d in the index", f.Name, w.Size, f.Size)
		case w.Hash != "" && f.SHA256 != "" && w.Hash != f.SHA256:
			return fmt.Sprintf("%s has SHA-256 %s in the Redis, %s in the index", f.Name, w.Hash, f.SHA256)
		}
		delete(byName, f.Name)
	}
	for _, w := range list {
		if _, ok := byName[w.Filename]; ok {
			return fmt.Sprintf("the index lists no %s", w.Filename)
		}
	}
	return ""
}

// hashFile reads a WACZ of the list: it must be there, with the size and
// SHA-256 the list gives.
func (im *importer) hashFile(ctx context.Context, w WACZFile) (crawlindex.FileInfo, error) {
	path := filepath.Join(im.opt.Location, w.Filename)
	f, err := os.Open(path)
	if err != nil {
		return crawlindex.FileInfo{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return crawlindex.FileInfo{}, err
	}
	if w.Size != 0 && fi.Size() != w.Size {
		return crawlindex.FileInfo{}, fmt.Errorf("%s is %d bytes, the Redis says %d", path, fi.Size(), w.Size)
	}
	// The crawl index lists a file's SHA-256 as bare hex, the form of
	// fixity.SHA256 and of the Redis's WACZ list.
	h, err := fixity.HashReader(&readerCtx{ctx: ctx, r: f, im: im}, fixity.SHA256)
	if err != nil {
		return crawlindex.FileInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	sum := h.Sum(fixity.SHA256)
	if w.Hash != "" && sum != w.Hash {
		return crawlindex.FileInfo{}, fmt.Errorf("%s has SHA-256 %s, the Redis says %s", path, sum, w.Hash)
	}
	im.st.Files++
	return crawlindex.FileInfo{Name: w.Filename, Size: fi.Size(), SHA256: sum, Stamp: crawlindex.Stamp(fi)}, nil
}

// readerCtx stops a long read when the context ends, and counts what it
// read for the progress.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
	im  *importer
}

func (r *readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	r.im.read += int64(n)
	if r.im.opt.Progress != nil && r.im.read-r.im.reported >= 16<<20 {
		r.im.reported = r.im.read
		r.im.opt.Progress(r.im.read)
	}
	return n, err
}

// stage reads a crawl's WACZ indexes into its originals, sorted, and
// what its revisits need.
func (im *importer) stage(ctx context.Context, p *crawlImport, tmp string) error {
	raw := filepath.Join(tmp, p.name+".originals")
	out, err := os.Create(raw)
	if err != nil {
		return err
	}
	defer out.Close()
	seenRaw := filepath.Join(tmp, p.name+".seen")
	seenOut, err := os.Create(seenRaw)
	if err != nil {
		return err
	}
	defer seenOut.Close()
	p.refs = filepath.Join(tmp, p.name+".refs")
	refsOut, err := os.Create(p.refs)
	if err != nil {
		return err
	}
	defer refsOut.Close()
	ci := &crawlReader{im: im, p: p, w: manifest.NewWriter(out), seen: bufio.NewWriter(seenOut), refs: bufio.NewWriter(refsOut), needs: map[string]*need{}}
	for _, f := range p.files {
		if err := ci.readWACZ(ctx, f.Name); err != nil {
			return err
		}
	}
	if err := ci.flush(); err != nil {
		return err
	}
	if err := ci.w.Flush(); err != nil {
		return err
	}
	if err := ci.seen.Flush(); err != nil {
		return err
	}
	if err := ci.refs.Flush(); err != nil {
		return err
	}
	if err := refsOut.Close(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := seenOut.Close(); err != nil {
		return err
	}
	// Every digest of the crawl's entries must have a record in its files.
	seenSorted := seenRaw + ".sorted"
	if err := im.opt.Sort(ctx, "LC_ALL=C sort -u", seenRaw, seenSorted); err != nil {
		return err
	}
	n, err := countLines(seenSorted)
	if err != nil {
		return err
	}
	if n != p.hlen {
		return fmt.Errorf("%s holds %d digests, the crawl's WACZ files (%s) have records of %d of them: a WACZ missing from %s, or the keys of another crawl",
			hashesKey(p.name), p.hlen, strings.Join(fileNames(p.files), ", "), n, waczKey(p.name))
	}
	if ci.originals == 0 {
		return fmt.Errorf("no 2xx response of its WACZ files has a digest of %s", hashesKey(p.name))
	}
	sorted := raw + ".by-digest"
	if err := im.opt.Sort(ctx, manifest.ByDigest.Command, raw, sorted); err != nil {
		return err
	}
	p.needs = ci.needs
	p.crawl = &crawlindex.Crawl{Name: p.name, Location: im.opt.Location, Imported: true,
		Records: p.counts.TotalURLs, Revisits: p.counts.DupeURLs, BytesConserved: p.counts.Conserved}
	if p.crawl.Records == 0 {
		p.crawl.Records = ci.originals + ci.revisitCount
	}
	p.originals = sorted
	im.st.Originals += ci.originals
	return os.Remove(raw)
}

func fileNames(files []crawlindex.FileInfo) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func countLines(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	return n, s.Err()
}

// errOtherAlgorithm is a CDXJ digest of another algorithm than the
// index's: the WACZ and the index cannot meet.
var errOtherAlgorithm = errors.New("a digest of another algorithm than the index's")

// crawlReader reads one crawl's WACZ indexes: responses are checked
// against the crawl's entries a batch at a time, revisits looked up as
// the crawler looks them up.
type crawlReader struct {
	im   *importer
	p    *crawlImport
	w    *manifest.Writer
	seen *bufio.Writer

	refs *bufio.Writer // "CRAWL DIGEST": a revisit's original is CRAWL's

	pending  []candidate  // responses waiting for their look-up
	revisits []revisitRef // revisit digests waiting for theirs

	originals    int64 // original lines written
	revisitCount int64 // revisit lines read
	needs        map[string]*need
}

// candidate is a response line waiting for the look-up of its digest.
type candidate struct {
	key  string // as the crawler keys it
	line manifest.Line
	url  string // as the CDXJ line has it
	ts   string // the CDXJ line's timestamp
	// original: a 2xx response, taken if the crawl holds the digest; else
	// only its digest counts as seen.
	original bool
}

// revisitRef is a revisit line waiting for the look-up of its digest.
type revisitRef struct{ key, digest string }

// need is another crawl the crawl's revisits need: how many, and the
// files the crawler's entries name for them (used only where the
// originals cannot be looked up in the index or the import).
type need struct {
	revisits int64
	named    map[string]bool
}

func (cr *crawlReader) readWACZ(ctx context.Context, filename string) error {
	name := filepath.Join(cr.im.opt.Location, filename)
	wz, err := openWACZ(name)
	if err != nil {
		return err
	}
	defer wz.Close()
	starts := map[string]int64{}
	return wz.lines(ctx, func(l *cdx.Line) error {
		url := string(l.URL)
		if strings.HasPrefix(url, "urn:") || len(l.Digest) == 0 {
			cr.im.st.Skipped++
			return nil
		}
		key, manifestDigest, err := cr.digestOf(string(l.Digest))
		if errors.Is(err, errOtherAlgorithm) {
			return fmt.Errorf("%s: line %d: %w", name, l.Number, err)
		}
		if err != nil {
			cr.im.st.Skipped++
			cr.im.opt.Warn(fmt.Errorf("%s: line %d: left out: %v", name, l.Number, err))
			return nil
		}
		if string(l.MIME) == "warc/revisit" {
			cr.revisitCount++
			cr.im.st.Revisits++
			cr.revisits = append(cr.revisits, revisitRef{key, manifestDigest})
			if len(cr.revisits) >= cr.im.opt.Batch {
				return cr.resolveRevisits()
			}
			return nil
		}
		c := candidate{key: key, url: url, ts: string(l.Timestamp)}
		status, _ := strconv.Atoi(string(l.Status))
		if status >= 200 && status <= 299 && status != 206 {
			member := string(l.Filename)
			start, ok := starts[member]
			if !ok {
				if start, err = wz.start(member); err != nil {
					return err
				}
				starts[member] = start
			}
			if l.Offset < 0 || l.Length <= 0 || l.Offset+l.Length > wz.size(member) {
				return fmt.Errorf("%s: line %d: offset %d length %d is not within archive/%s", name, l.Number, l.Offset, l.Length, member)
			}
			date, err := WARCDate(string(l.Timestamp))
			if err != nil {
				return fmt.Errorf("%s: line %d: %v", name, l.Number, err)
			}
			c.original = true
			c.line = manifest.Line{File: cr.p.name + "/" + manifest.EscapeFile(filename), Offset: start + l.Offset, Length: l.Length,
				URI: manifest.EscapeField(url), Date: date, Digest: manifestDigest, Fields: 6}
		}
		cr.pending = append(cr.pending, c)
		if len(cr.pending) >= cr.im.opt.Batch {
			return cr.resolveResponses()
		}
		return nil
	})
}

// digestOf is the crawler's key of a CDXJ digest (its value after the
// label, as the crawler strips it) and the manifest digest, which must be
// of the index's algorithm.
func (cr *crawlReader) digestOf(d string) (string, string, error) {
	key := d[strings.LastIndexByte(d, ':')+1:]
	var a digest.Algorithm
	var md string
	if strings.Contains(d, ":") {
		alg, sum, err := digest.ParseHeader(d)
		if err != nil {
			return "", "", err
		}
		a, md = alg, alg.Format(sum)
	} else {
		var err error
		if md, a, err = DigestOfKey(d); err != nil {
			return "", "", err
		}
	}
	if a != cr.im.algorithm {
		return "", "", fmt.Errorf("digest %s: %w (%s)", d, errOtherAlgorithm, cr.im.algorithm)
	}
	return key, md, nil
}

func (cr *crawlReader) flush() error {
	if err := cr.resolveResponses(); err != nil {
		return err
	}
	return cr.resolveRevisits()
}

// resolveResponses looks the pending responses' digests up in the
// crawl's entries: those it holds are seen, and the 2xx ones originals.
func (cr *crawlReader) resolveResponses() error {
	if len(cr.pending) == 0 {
		return nil
	}
	args := []string{"HMGET", hashesKey(cr.p.name)}
	for _, c := range cr.pending {
		args = append(args, c.key)
	}
	v, err := cr.im.c.Do(args...)
	if err != nil {
		return err
	}
	if v.Kind != redis.Array || len(v.Array) != len(cr.pending) {
		return fmt.Errorf("HMGET %s: %d replies for %d fields", hashesKey(cr.p.name), len(v.Array), len(cr.pending))
	}
	for i, c := range cr.pending {
		if v.Array[i].IsNil() {
			cr.im.st.Skipped++
			continue
		}
		cr.seen.WriteString(c.key)
		cr.seen.WriteByte('\n')
		if !c.original {
			cr.im.st.Skipped++
			continue
		}
		// The record the entry names gets the entry's date, which has
		// the milliseconds a CDXJ timestamp lacks.
		e, err := ParseEntry(v.Array[i].Str)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", hashesKey(cr.p.name), c.key, err)
		}
		if e.URL == c.url && e.Size == c.line.Length && len(e.Date) > len(c.ts) && strings.HasPrefix(e.Date, c.ts) {
			if c.line.Date, err = WARCDate(e.Date); err != nil {
				return err
			}
		}
		if err := cr.w.Write(&c.line); err != nil {
			return err
		}
		cr.originals++
	}
	cr.pending = cr.pending[:0]
	return nil
}

// resolveRevisits finds, for each pending revisit digest, the crawl the
// crawler would take its original from: the crawl itself if it holds the
// digest, else the crawl alldupes names; a revisit of another committed
// crawl needs that crawl, and the WACZ its entry names.
func (cr *crawlReader) resolveRevisits() error {
	if len(cr.revisits) == 0 {
		return nil
	}
	p := cr.im.c.Pipeline()
	for _, r := range cr.revisits {
		p.Send("HEXISTS", hashesKey(cr.p.name), r.key)
		p.Send("HGET", keyAllDupes, r.key)
	}
	vs, err := p.Exec()
	if err != nil {
		return err
	}
	type ref struct {
		revisitRef
		crawl string
	}
	var refs []ref
	for i, d := range cr.revisits {
		own, holder := vs[2*i], vs[2*i+1]
		if err := errors.Join(own.Err(), holder.Err()); err != nil {
			return err
		}
		if own.Int == 1 || holder.IsNil() || holder.Str == cr.p.name {
			continue
		}
		refs = append(refs, ref{d, holder.Str})
	}
	cr.revisits = cr.revisits[:0]
	if len(refs) == 0 {
		return nil
	}
	p = cr.im.c.Pipeline()
	for _, r := range refs {
		p.Send("HGET", hashesKey(r.crawl), r.key)
	}
	vs, err = p.Exec()
	if err != nil {
		return err
	}
	for i, r := range refs {
		if vs[i].IsNil() {
			continue // alldupes names a crawl without the digest: no original there
		}
		e, err := ParseEntry(vs[i].Str)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", hashesKey(r.crawl), r.key, err)
		}
		list, err := cr.im.waczList(r.crawl)
		if err != nil {
			return err
		}
		if e.WACZ >= len(list) {
			return fmt.Errorf("%s: %s names WACZ %d, %s lists %d", hashesKey(r.crawl), r.key, e.WACZ, waczKey(r.crawl), len(list))
		}
		n := cr.needs[r.crawl]
		if n == nil {
			n = &need{named: map[string]bool{}}
			cr.needs[r.crawl] = n
		}
		n.revisits++
		n.named[list[e.WACZ].Filename] = true
		cr.refs.WriteString(r.crawl + " " + r.digest + "\n")
	}
	return nil
}

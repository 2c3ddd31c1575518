package redisindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/manifest"
)

// ExportOptions say what an export writes.
type ExportOptions struct {
	// Crawls limits the export to these crawls: each is written if the
	// index commits it, removed from Redis if this index exported it and
	// no longer commits it. Empty means every crawl.
	Crawls []string
	// Withdraw removes from Redis every crawl (of Crawls) this index
	// exported, committed or not: the undoing of exports.
	Withdraw bool
	// SHA1 exports an index of SHA-1 digests: only crawls run with
	// --useSHA1 look such digests up.
	SHA1 bool
	// WARCFiles exports crawls whose files are WARC files, not WACZ
	// packages (see docs/browsertrix-redis.md for what that gives).
	WARCFiles bool
	// Batch is the number of commands per round trip (1,000 if zero).
	Batch int
	// Warn receives what is left out, and why.
	Warn func(error)
	// Progress, if set, is told the originals read of those to read.
	Progress func(done, total int64)
}

// ExportStats are what an export did.
type ExportStats struct {
	Added     []string // crawls written
	Replaced  []string // crawls written again: their files changed
	Removed   []string // crawls taken out of Redis
	Unchanged []string // crawls already there as they are
	Present   []string // crawls another writer put there, with the same files
	Entries   int64    // digests written to h:CRAWL
	LeftOut   int64    // originals left out (a date that is no date, a file of no crawl)
	NewDupes  int64    // alldupes entries the export's crawls took
	Repointed int64    // alldupes entries moved to another crawl holding the digest
	Dropped   int64    // alldupes entries deleted: no committed crawl holds the digest
	Finished  int      // key sets an interrupted export left, finished
}

// ConflictError is an export refused before anything was written.
type ConflictError struct {
	Problems []string
}

func (e *ConflictError) Error() string {
	return "nothing was written: " + strings.Join(e.Problems, "; ")
}

// Export writes the committed crawls of ix into the Redis dedup index on
// c, in the crawler's keys, as committed crawls; crawls it exported before
// and ix no longer commits are taken out as the crawler's purge takes
// crawls out. See docs/browsertrix-redis.md.
func Export(ctx context.Context, c *redis.Conn, ix *crawlindex.Index, opt ExportOptions) (*ExportStats, error) {
	if opt.Batch <= 0 {
		opt.Batch = 1000
	}
	if opt.Warn == nil {
		opt.Warn = func(error) {}
	}
	x := &exporter{c: c, ix: ix, opt: opt, st: &ExportStats{}}
	if err := x.checkAlgorithm(); err != nil {
		return nil, err
	}
	release, err := takeLock(c)
	if err != nil {
		return nil, err
	}
	defer release()
	x.refresh = func(p *redis.Pipeline) { p.Send("PEXPIRE", keyLock, strconv.Itoa(lockTTL)) }
	if err := x.readRedis(); err != nil {
		return nil, err
	}
	if err := x.plan(); err != nil {
		return nil, err
	}
	if err := x.retireStaged(); err != nil {
		return nil, err
	}
	if err := x.write(ctx); err != nil {
		return x.st, err
	}
	for _, name := range x.removes {
		if err := x.remove(name); err != nil {
			return x.st, err
		}
		x.st.Removed = append(x.st.Removed, name)
	}
	if err := hook("removed"); err != nil {
		return x.st, err
	}
	if err := x.repointRetired(ctx); err != nil {
		return x.st, err
	}
	return x.st, nil
}

// exporter is one export.
type exporter struct {
	c       *redis.Conn
	ix      *crawlindex.Index
	opt     ExportOptions
	st      *ExportStats
	refresh func(*redis.Pipeline)

	algorithm   string
	committed   map[string]bool // allcrawls
	uncommitted map[string]bool
	owners      map[string]Owner // keyExported

	writes  []*crawlWrite // in the index's commit order
	removes []string
}

// crawlWrite is a crawl being written: its staged keys and figures.
type crawlWrite struct {
	crawl   *crawlindex.Crawl
	order   int
	replace bool
	owner   Owner // the new owner record
	files   []crawlindex.FileInfo
	byName  map[string]int // file name -> index in c:CRAWL:wacz
	seq     int64
	entries int64
	last    string // the last digest key written
	counts  Counts
}

func (w *crawlWrite) stage(kind string) string {
	return stagePrefix + strconv.FormatInt(w.seq, 10) + ":" + kind + ":" + w.crawl.Name
}

// checkAlgorithm refuses an index whose digests the crawler does not look
// up.
func (x *exporter) checkAlgorithm() error {
	x.algorithm = x.ix.Registry.Algorithm
	switch x.algorithm {
	case "", "sha256":
		return nil
	case "sha1":
		if x.opt.SHA1 {
			return nil
		}
		return fmt.Errorf("the index %s holds SHA-1 digests; Browsertrix's crawler keys on SHA-256 and would never find them: "+
			"give --sha1 if every crawl that reads this Redis runs with --useSHA1, or build a SHA-256 index "+
			"(warcdedup run --hash sha256 --index NEWDIR, crawl by crawl) and export that", x.ix.Dir)
	}
	return fmt.Errorf("the index %s holds %s digests: Browsertrix's crawler keys on SHA-256 (or SHA-1 with --useSHA1)", x.ix.Dir, x.algorithm)
}

// readRedis reads the crawl sets and this package's records, and checks
// that the Redis's digests are of the index's algorithm.
func (x *exporter) readRedis() error {
	set := func(key string) (map[string]bool, error) {
		m, err := redis.Strings(x.c.Do("SMEMBERS", key))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out := map[string]bool{}
		for _, s := range m {
			out[s] = true
		}
		return out, nil
	}
	var err error
	if x.committed, err = set(keyAllCrawls); err != nil {
		return err
	}
	if x.uncommitted, err = set(keyUncommitted); err != nil {
		return err
	}
	kv, err := redis.Strings(x.c.Do("HGETALL", keyExported))
	if err != nil {
		return fmt.Errorf("%s: %w", keyExported, err)
	}
	x.owners = map[string]Owner{}
	for i := 0; i+1 < len(kv); i += 2 {
		o, err := parseOwner(kv[i+1])
		if err != nil {
			return fmt.Errorf("crawl %s: %w", kv[i], err)
		}
		x.owners[kv[i]] = o
	}
	if x.algorithm == "" {
		return nil
	}
	// A sample of alldupes says which digests the Redis holds.
	v, err := x.c.Do("HSCAN", keyAllDupes, "0", "COUNT", "50")
	if err != nil {
		return fmt.Errorf("%s: %w", keyAllDupes, err)
	}
	if v.Kind == redis.Array && len(v.Array) == 2 {
		kv, _ := redis.Strings(v.Array[1], nil)
		for i := 0; i < len(kv); i += 2 {
			_, a, err := DigestOfKey(kv[i])
			if err != nil {
				return fmt.Errorf("%s holds %w: not a Redis this export can add to", keyAllDupes, err)
			}
			if a.String() != x.algorithm {
				return fmt.Errorf("%s holds %s digests (%s, of crawl %s), the index %s holds %s digests: the two cannot meet in one Redis",
					keyAllDupes, a, kv[i], kv[i+1], x.ix.Dir, x.algorithm)
			}
		}
	}
	return nil
}

// fingerprint identifies what a crawl's keys are written from: its files
// and figures. An owner record with the same fingerprint is up to date.
func fingerprint(k *crawlindex.Crawl, files []crawlindex.FileInfo) string {
	h := sha256.New()
	type fp struct {
		Files                                   []crawlindex.FileInfo
		Originals, Records, Revisits, Conserved int64
	}
	stripped := make([]crawlindex.FileInfo, len(files))
	for i, f := range files {
		stripped[i] = crawlindex.FileInfo{Name: f.Name, Size: f.Size, SHA256: f.SHA256}
	}
	json.NewEncoder(h).Encode(fp{stripped, k.Originals, k.Records, k.Revisits, k.BytesConserved})
	return hex.EncodeToString(h.Sum(nil))
}

// plan decides, for every crawl concerned, what the export does, and
// refuses the export (writing nothing) on any conflict.
func (x *exporter) plan() error {
	var problems []string
	selected := func(name string) bool { return len(x.opt.Crawls) == 0 || slices.Contains(x.opt.Crawls, name) }
	for _, name := range x.opt.Crawls {
		_, owned := x.owners[name]
		if x.ix.Registry.Crawl(name) == nil && !owned {
			problems = append(problems, fmt.Sprintf("crawl %s is neither committed to the index %s nor exported from it", name, x.ix.Dir))
		}
	}
	for order, k := range x.ix.Registry.Crawls {
		if !selected(k.Name) || x.opt.Withdraw {
			continue
		}
		if err := checkCrawlID(k.Name); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		files, err := x.ix.Files(k.Name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("crawl %s: its list of files: %v", k.Name, err))
			continue
		}
		if !x.opt.WARCFiles {
			if bad := slices.IndexFunc(files, func(f crawlindex.FileInfo) bool { return !isWACZName(f.Name) }); bad >= 0 {
				problems = append(problems, fmt.Sprintf("crawl %s: %s is no WACZ package: Browsertrix names the WACZ holding an original "+
					"(WARC-Refers-To-Container, relation.requires) and ReplayWeb.page loads only WACZ files; give --warc-files to export it all the same",
					k.Name, files[bad].Name))
				continue
			}
		}
		w := &crawlWrite{crawl: k, order: order, files: files, byName: map[string]int{}}
		w.owner = Owner{Index: x.ix.Dir, Fingerprint: fingerprint(k, files), Counts: countsOf(k)}
		for i, f := range files {
			w.byName[f.Name] = i
			w.owner.Files = append(w.owner.Files, f.Name)
		}
		owner, owned := x.owners[k.Name]
		ours := owned && owner.Index == x.ix.Dir
		switch {
		case x.uncommitted[k.Name]:
			problems = append(problems, fmt.Sprintf("crawl %s is running in Browsertrix (it is in %s): a crawl id is one crawl", k.Name, keyUncommitted))
		case x.committed[k.Name] && ours && owner.Fingerprint == w.owner.Fingerprint:
			x.st.Unchanged = append(x.st.Unchanged, k.Name)
		case x.committed[k.Name] && ours:
			w.replace = true
			x.writes = append(x.writes, w)
		case x.committed[k.Name]:
			same, why, err := x.sameFiles(k.Name, files)
			switch {
			case err != nil:
				problems = append(problems, err.Error())
			case !same:
				from := "another writer"
				if owned {
					from = "the index " + owner.Index
				}
				problems = append(problems, fmt.Sprintf("crawl %s is committed to the Redis by %s with other files (%s): a crawl id is one crawl", k.Name, from, why))
			default:
				x.st.Present = append(x.st.Present, k.Name)
			}
		default:
			if keys := x.existing(k.Name); len(keys) > 0 {
				problems = append(problems, fmt.Sprintf("crawl %s is not committed to the Redis, but %s exist: left by a crawl that stopped? "+
					"(Browsertrix's indexer --cancelCrawlId %s deletes them)", k.Name, strings.Join(keys, ", "), k.Name))
				continue
			}
			x.writes = append(x.writes, w)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(x.owners)) {
		o := x.owners[name]
		if o.Index != x.ix.Dir || !selected(name) || (!x.opt.Withdraw && x.ix.Registry.Crawl(name) != nil) {
			continue
		}
		x.removes = append(x.removes, name)
	}
	if len(problems) > 0 {
		return &ConflictError{Problems: problems}
	}
	return nil
}

// checkCrawlID refuses a crawl name the crawler's entries cannot carry.
func checkCrawlID(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("crawl name %q cannot be a Browsertrix crawl id", name)
	}
	return nil
}

func isWACZName(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".wacz") }

func countsOf(k *crawlindex.Crawl) Counts {
	return Counts{TotalURLs: k.Records, DupeURLs: k.Revisits, Conserved: k.BytesConserved, CrawlSize: k.Size}
}

// sameFiles compares a committed crawl's c:CRAWL:wacz with the index's
// files: the same names, and the same sizes and hashes where both know
// them.
func (x *exporter) sameFiles(crawl string, files []crawlindex.FileInfo) (bool, string, error) {
	list, err := redis.Strings(x.c.Do("LRANGE", waczKey(crawl), "0", "-1"))
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", waczKey(crawl), err)
	}
	theirs := map[string]WACZFile{}
	for _, s := range list {
		w, err := ParseWACZFile(s)
		if err != nil {
			return false, "", fmt.Errorf("%s: %w", waczKey(crawl), err)
		}
		theirs[w.Filename] = w
	}
	for _, f := range files {
		w, ok := theirs[f.Name]
		switch {
		case !ok:
			return false, fmt.Sprintf("the Redis lists no %s", f.Name), nil
		case w.Size != 0 && f.Size != 0 && w.Size != f.Size:
			return false, fmt.Sprintf("%s is %d bytes in the Redis, %d in the index", f.Name, w.Size, f.Size), nil
		case w.Hash != "" && f.SHA256 != "" && w.Hash != f.SHA256:
			return false, fmt.Sprintf("%s has SHA-256 %s in the Redis, %s in the index", f.Name, w.Hash, f.SHA256), nil
		}
		delete(theirs, f.Name)
	}
	for name := range theirs {
		return false, fmt.Sprintf("the index lists no %s", name), nil
	}
	return true, "", nil
}

// existing lists the crawl's keys that exist.
func (x *exporter) existing(crawl string) []string {
	var out []string
	for _, k := range []string{hashesKey(crawl), waczKey(crawl), countsKey(crawl)} {
		if n, err := redis.Int64(x.c.Do("EXISTS", k)); err != nil || n > 0 {
			out = append(out, k)
		}
	}
	return out
}

// write stages every crawl to write in one pass over the partitions, then
// commits each.
func (x *exporter) write(ctx context.Context) error {
	if len(x.writes) == 0 {
		return nil
	}
	byName := map[string]*crawlWrite{}
	var total int64
	p := x.c.Pipeline()
	for _, w := range x.writes {
		seq, err := redis.Int64(x.c.Do("INCR", keySeq))
		if err != nil {
			return err
		}
		w.seq = seq
		byName[w.crawl.Name] = w
		total += w.crawl.Originals
		for _, f := range w.files {
			e := WACZFile{Filename: f.Name, Hash: f.SHA256, Size: f.Size}
			p.Send("RPUSH", w.stage("wacz"), e.String())
		}
		w.counts = w.owner.Counts
		if fields := w.counts.fields(1); len(fields) > 0 {
			p.Send(append([]string{"HSET", w.stage("counts")}, fields...)...)
		}
	}
	if err := x.exec(p); err != nil {
		return err
	}
	b := &batcher{x: x}
	if err := x.stream(ctx, byName, total, b); err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	if err := hook("staged"); err != nil {
		return err
	}
	for _, w := range x.writes {
		if err := x.commit(w); err != nil {
			return err
		}
		if err := hook("committed"); err != nil {
			return err
		}
		x.st.Entries += w.entries
		if w.replace {
			x.st.Replaced = append(x.st.Replaced, w.crawl.Name)
		} else {
			x.st.Added = append(x.st.Added, w.crawl.Name)
		}
	}
	return nil
}

// batcher gathers a batch of entries and alldupes claims and sends them
// in one round trip: the entries of a staged hash as one HSET of many
// fields and the claims as one script of HSETNX (claimScript), so that
// the server parses one command a batch, not one an original.
type batcher struct {
	x       *exporter
	entries map[string][]string // staged hash -> field, value, ...
	claims  []string            // digest, crawl, ...
	n       int
	// noScript: the server refused the script; claims go one by one.
	noScript bool
}

func (b *batcher) entry(hash, field, value string) error {
	if b.entries == nil {
		b.entries = map[string][]string{}
	}
	b.entries[hash] = append(b.entries[hash], field, value)
	return b.added()
}

func (b *batcher) claim(digest, crawl string) error {
	b.claims = append(b.claims, digest, crawl)
	return b.added()
}

func (b *batcher) added() error {
	b.n++
	if b.n >= b.x.opt.Batch {
		return b.flush()
	}
	return nil
}

func (b *batcher) flush() error {
	if b.n == 0 {
		return nil
	}
	p := b.x.c.Pipeline()
	for hash, kv := range b.entries {
		p.Send(append([]string{"HSET", hash}, kv...)...)
		delete(b.entries, hash)
	}
	first := p.Len()
	scripted := len(b.claims) > 0 && !b.noScript
	if scripted {
		p.Send(append([]string{"EVAL", claimScript, "1", keyAllDupes}, b.claims...)...)
	} else {
		for i := 0; i < len(b.claims); i += 2 {
			p.Send("HSETNX", keyAllDupes, b.claims[i], b.claims[i+1])
		}
	}
	b.x.refresh(p)
	vs, err := p.Exec()
	if err != nil {
		return err
	}
	for i, v := range vs {
		if i == first && scripted && v.Kind == redis.Err {
			// Scripts refused (an ACL, a server without Lua): the claims
			// go one HSETNX each, now and from now on.
			b.noScript = true
			n, err := b.claimEach()
			if err != nil {
				return err
			}
			b.x.st.NewDupes += n
			continue
		}
		if err := v.Err(); err != nil {
			return err
		}
		if i >= first && i < len(vs)-1 {
			b.x.st.NewDupes += v.Int
		}
	}
	b.claims, b.n = b.claims[:0], 0
	return nil
}

// claimEach sends the batch's claims one HSETNX each.
func (b *batcher) claimEach() (int64, error) {
	p := b.x.c.Pipeline()
	for i := 0; i < len(b.claims); i += 2 {
		p.Send("HSETNX", keyAllDupes, b.claims[i], b.claims[i+1])
	}
	vs, err := p.Exec()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, v := range vs {
		if err := v.Err(); err != nil {
			return 0, err
		}
		n += v.Int
	}
	return n, nil
}

// claimScript is HSETNX of many fields in one command: the claims of a
// batch cost the server one command, not one each (an export 1.6 times
// as fast, measured by BenchmarkExport).
const claimScript = `local n = 0
for i = 1, #ARGV, 2 do n = n + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i+1]) end
return n`

// exec runs a pipeline and fails on any error reply.
func (x *exporter) exec(p *redis.Pipeline) error {
	x.refresh(p)
	vs, err := p.Exec()
	if err != nil {
		return err
	}
	for _, v := range vs {
		if err := v.Err(); err != nil {
			return err
		}
	}
	return nil
}

// stream reads the partitions once and stages each original of a crawl
// being written: the first original of each digest of a crawl is its
// entry, and each digest goes to alldupes (if no crawl holds it yet) for
// the earliest committed of the crawls written that hold it.
func (x *exporter) stream(ctx context.Context, byName map[string]*crawlWrite, total int64, b *batcher) error {
	r, err := x.ix.Originals()
	if err != nil {
		return err
	}
	defer r.Close()
	var done int64
	var run string        // the digest key of the lines being read
	var first *crawlWrite // the earliest crawl of the run
	endRun := func() error {
		if first != nil {
			if err := b.claim(run, first.crawl.Name); err != nil {
				return err
			}
		}
		first = nil
		return nil
	}
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		w := byName[crawlindex.CrawlOf(l.File)]
		if w == nil {
			continue
		}
		done++
		if done%10000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if x.opt.Progress != nil {
				x.opt.Progress(done, total)
			}
		}
		key, err := DigestKey(l.Digest)
		if err != nil {
			return r.Errorf("%w", err)
		}
		if key != run {
			if err := endRun(); err != nil {
				return err
			}
			run = key
		}
		if key == w.last {
			continue // the crawl's entry for the digest is written
		}
		e, err := w.entry(&l)
		if err != nil {
			x.st.LeftOut++
			x.opt.Warn(r.Errorf("%s offset %d left out: %w", l.File, l.Offset, err))
			continue
		}
		w.last = key
		w.entries++
		if first == nil || w.order < first.order {
			first = w
		}
		if err := b.entry(w.stage("h"), key, e.String()); err != nil {
			return err
		}
	}
	if x.opt.Progress != nil {
		x.opt.Progress(done, total)
	}
	return endRun()
}

// entry is the crawler's entry for an original of the crawl.
func (w *crawlWrite) entry(l *manifest.Line) (Entry, error) {
	name, err := manifest.UnescapeFile(strings.TrimPrefix(l.File, w.crawl.Name+"/"))
	if err != nil {
		return Entry{}, err
	}
	i, ok := w.fileIndex(name)
	if !ok {
		return Entry{}, fmt.Errorf("no file of crawl %s holds it", w.crawl.Name)
	}
	date, err := DateDigits(l.Date)
	if err != nil {
		return Entry{}, err
	}
	if strings.ContainsAny(l.URI, " \t\r\n") {
		return Entry{}, fmt.Errorf("URI %q has a blank", l.URI)
	}
	return Entry{WACZ: i, Date: date, URL: l.URI, Size: l.Length}, nil
}

// fileIndex finds the file of the crawl that holds an original named
// PATH: the file itself (a record at its offset in the WACZ), or the WACZ
// that PATH names a member of ("x.wacz#archive/data.warc.gz" or
// "x.wacz/archive/data.warc.gz").
func (w *crawlWrite) fileIndex(name string) (int, bool) {
	if i, ok := w.byName[name]; ok {
		return i, true
	}
	for j := 0; j < len(name); j++ {
		if name[j] == '#' || name[j] == '/' {
			if i, ok := w.byName[name[:j]]; ok && isWACZName(name[:j]) {
				return i, true
			}
		}
	}
	return 0, false
}

// testHook, set by tests, is called at points of an export; an error it
// returns stops the export there, as a kill would.
var testHook func(point string) error

func hook(point string) error {
	if testHook != nil {
		return testHook(point)
	}
	return nil
}

package crawlindex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"warcdedup/fixity"
	"warcdedup/manifest"
)

// Change is what a new generation adds to the one before, or takes from it.
type Change struct {
	// Add is a crawl to commit, with its Files and its originals: a
	// manifest of its responses (6 fields, files named CRAWL/PATH), sorted
	// on digest (manifest.ByDigest).
	Add       *Crawl
	Files     []FileInfo
	Originals string
	// Replace are committed crawls whose files changed (their revisits
	// restored or re-pointed when a crawl they needed was removed), with
	// their files now: all their originals are replaced by their lines in
	// Originals.
	Replace map[string][]FileInfo
	// Refile are committed crawls some of whose files were written anew
	// with every record where it was (a WACZ package of which
	// datapackage.json alone changed: an undo brought its requires
	// entries up to date), by crawl: those files as they are now. Their
	// originals stay; the crawl's list, and the lists of the files other
	// crawls require, get their new size, SHA-256 and stamp.
	Refile map[string][]FileInfo
	// Remove is the name of a committed crawl to remove: its originals
	// leave the index and it moves to the removed crawls. It is refused
	// while other crawls' revisits need it, unless Force.
	Remove string
	Force  bool
	// Update, if set, changes the new registry's crawls last (their
	// figures, what they require).
	Update func(r *Registry) error
}

// Commit makes the next generation of the index in dir with the change,
// under the index's lock, and returns it; then, if a partition's runs
// call for it (see Policy), compacts the index (see Compact). The change
// applies to the generation committed when the lock is taken (another run
// may have committed since this one opened the index), which must verify
// as Open checks it; the crawls an added crawl requires must be committed
// then, with the files it requires as they are listed then. The change
// costs what it adds or takes: a run per partition of the added lines,
// and the runs that hold lines of a crawl it removes or replaces
// rewritten without them; every other file is linked.
//
// A compaction that fails after the change was committed gives the new
// generation and a *CompactionError: the change stands, the index is
// whole, and the next commit (or Compact) compacts it.
func Commit(dir string, ch Change) (*Index, error) {
	return CommitWith(dir, ch, CommitOptions{})
}

// CommitOptions say how Commit works.
type CommitOptions struct {
	// NoCompact leaves the compaction the runs may call for to the next
	// commit or to Compact.
	NoCompact bool
	// Policy is when partitions' runs are merged (the zero Policy: the
	// defaults).
	Policy Policy
	// step, if set, is called after each step of the commit and of the
	// compaction with its name; its error stops there (tests).
	step func(string) error
}

// CompactionError is a compaction that failed after the change it
// followed was committed.
type CompactionError struct {
	Generation int // the committed generation
	Err        error
}

func (e *CompactionError) Error() string {
	return fmt.Sprintf("committed as generation %d; then compacting the index failed: %v (the index is whole; the next commit, or warcdedup index compact, compacts it)", e.Generation, e.Err)
}

func (e *CompactionError) Unwrap() error { return e.Err }

// CommitWith is Commit with options.
func CommitWith(dir string, ch Change, opt CommitOptions) (*Index, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lk, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	base, err := Open(dir)
	if err != nil && !errors.Is(err, ErrNoIndex) {
		return nil, err
	}
	if base.gen != "" {
		// CURRENT names it: a commit killed before it marked its
		// generation, or an index of a warcdedup that did not mark them.
		if err := mark(base.gen); err != nil {
			return nil, err
		}
	}
	c := &commit{base: base, ch: ch}
	if err := c.check(); err != nil {
		return nil, err
	}
	// Open checked base against the records of commits: they now come
	// up to it, should a crash have kept one from being written.
	if err := recordBase(base); err != nil {
		return nil, err
	}
	b, err := newBuilder(base, opt.step)
	if err != nil {
		return nil, err
	}
	defer b.abort() // gone once renamed
	c.b = b
	if err := c.write(); err != nil {
		return nil, err
	}
	ix, err := b.publish()
	if err != nil {
		return nil, err
	}
	// Committed. Its record is what tells a later Open that this
	// generation's crawl is lost if CURRENT is ever set back before it
	// with the generation gone; should it fail to be written, the next
	// commit writes it (recordBase).
	recordChange(ix, ch)
	// The generation the lock found current stays, with every later
	// one: a run that opened it before this commit may still read it.
	defer cleanup(base.Dir, base.Registry.Generation)
	if opt.NoCompact {
		return ix, nil
	}
	compacted, _, err := compact(ix, opt.Policy, false, opt.step)
	if err != nil {
		return ix, &CompactionError{Generation: ix.Registry.Generation, Err: err}
	}
	return compacted, nil
}

// commit is the making of one generation with a change.
type commit struct {
	base *Index
	ch   Change
	b    *builder
}

// check refuses a change the index cannot take.
func (c *commit) check() error {
	r := c.base.Registry
	if a := c.ch.Add; a != nil {
		if err := CheckName(a.Name); err != nil {
			return err
		}
		if r.Crawl(a.Name) != nil {
			return fmt.Errorf("crawl %s is already committed to the index %s", a.Name, c.base.Dir)
		}
		if err := c.checkRequires(a); err != nil {
			return err
		}
	}
	if err := c.checkRefile(); err != nil {
		return err
	}
	if name := c.ch.Remove; name != "" {
		if r.Crawl(name) == nil {
			return fmt.Errorf("crawl %s is not committed to the index %s", name, c.base.Dir)
		}
		// Not while a run holds the crawl, or one that the change
		// rewrites.
		held := []string{name}
		for k := range c.ch.Replace {
			held = append(held, k)
		}
		if err := checkRuns(c.base, held, c.ch.Force); err != nil {
			return err
		}
		if deps := r.Dependents(name); len(deps) > 0 && !c.ch.Force {
			var names []string
			var revisits int64
			for _, d := range deps {
				names = append(names, d.Name)
				for _, n := range d.Requires {
					if n.Crawl == name {
						revisits += n.Revisits
					}
				}
			}
			return &DependentsError{Crawl: name, Dependents: names, Revisits: revisits}
		}
	}
	return nil
}

// checkRefile refuses to refile a file that is not one of a committed
// crawl, or of a crawl the change also removes or replaces.
func (c *commit) checkRefile() error {
	for crawl, files := range c.ch.Refile {
		if c.base.Registry.Crawl(crawl) == nil {
			return fmt.Errorf("crawl %s is not committed to the index %s", crawl, c.base.Dir)
		}
		if _, ok := c.ch.Replace[crawl]; ok || crawl == c.ch.Remove {
			return fmt.Errorf("crawl %s: its files refiled and replaced or removed by one change", crawl)
		}
		now, err := c.base.Files(crawl)
		if err != nil {
			return err
		}
		for _, f := range files {
			if !slices.ContainsFunc(now, func(g FileInfo) bool { return g.Name == f.Name }) {
				return fmt.Errorf("crawl %s has no file %s to refile", crawl, f.Name)
			}
		}
	}
	return nil
}

// refiled is the list files of crawl with the change's refiled files
// in place of theirs; changed reports whether any was.
func (c *commit) refiled(crawl string, files []FileInfo) (out []FileInfo, changed bool) {
	re, ok := c.ch.Refile[crawl]
	if !ok {
		return files, false
	}
	out = slices.Clone(files)
	for _, f := range re {
		if i := slices.IndexFunc(out, func(g FileInfo) bool { return g.Name == f.Name }); i >= 0 && out[i] != f {
			out[i], changed = f, true
		}
	}
	return out, changed
}

// checkRequires refuses a crawl whose revisits need a crawl that is not
// committed now, or a file of one as it is not listed now: the crawl was
// removed, or its files rewritten by a removal, while the crawl's run
// worked, and the revisits would not find their originals.
func (c *commit) checkRequires(a *Crawl) error {
	for _, n := range a.Requires {
		if c.base.Registry.Crawl(n.Crawl) == nil {
			return fmt.Errorf("crawl %s: %d of its revisits need crawl %s, which is not committed to the index %s now (removed while the run worked?)", a.Name, n.Revisits, n.Crawl, c.base.Dir)
		}
		files, err := c.base.Files(n.Crawl)
		if err != nil {
			return err
		}
		now := map[string]FileInfo{}
		for _, f := range files {
			now[f.Name] = f
		}
		for _, f := range n.Files {
			g, ok := now[f.Name]
			if !ok || g.Size != f.Size || f.SHA256 != "" && g.SHA256 != "" && f.SHA256 != g.SHA256 {
				return fmt.Errorf("crawl %s: its revisits need %s of crawl %s as the run read it, and the index lists it otherwise now (rewritten by an index remove --restore while the run worked?)", a.Name, f.Name, n.Crawl)
			}
			// The file itself, as the index lists it (or as the change
			// records it again, written anew by the run): a file another
			// tool wrote since its crawl's commit is not the one the
			// index records, and a crawl committed requiring it would
			// leave an index that does not verify.
			if re, _ := c.refiled(n.Crawl, []FileInfo{g}); len(re) == 1 {
				g = re[0]
			}
			if why := requiredFileChanged(c.base.Registry.Crawl(n.Crawl).Location, g); why != "" {
				return fmt.Errorf("crawl %s: its revisits need %s of crawl %s, which %s: not committed; warcdedup index verify --deep checks crawl %s's files (if its records are right, take it out of the index and import it again: warcdedup index remove, warcdedup index import)", a.Name, g.Name, n.Crawl, why, n.Crawl)
			}
		}
	}
	return nil
}

// checkNeeds refuses a new registry in which a crawl requires one that is
// not committed, unless it did before the change, or the change removes
// that crawl by force.
func (c *commit) checkNeeds() error {
	before := map[[2]string]bool{}
	for _, k := range c.base.Registry.Crawls {
		for _, n := range k.Requires {
			if c.base.Registry.Crawl(n.Crawl) == nil {
				before[[2]string{k.Name, n.Crawl}] = true
			}
		}
	}
	for _, k := range c.b.reg.Crawls {
		for _, n := range k.Requires {
			if c.b.reg.Crawl(n.Crawl) == nil && !before[[2]string{k.Name, n.Crawl}] && !(c.ch.Force && n.Crawl == c.ch.Remove) {
				return fmt.Errorf("crawl %s would require crawl %s, which is not committed", k.Name, n.Crawl)
			}
		}
	}
	return nil
}

// DependentsError refuses to remove a crawl that other crawls' revisits
// need.
type DependentsError struct {
	Crawl      string
	Dependents []string
	Revisits   int64
}

func (e *DependentsError) Error() string {
	return fmt.Sprintf("crawl %s is needed by %d revisits of %s: remove with --restore (each revisit re-pointed to another committed copy or made a whole record first), or with --force (they will not replay once its files are gone)",
		e.Crawl, e.Revisits, strings.Join(e.Dependents, ", "))
}

// write fills the new generation.
func (c *commit) write() error {
	added, err := c.partitions()
	if err != nil {
		return err
	}
	if err := c.crawls(added); err != nil {
		return err
	}
	if c.ch.Update != nil {
		if err := c.ch.Update(&c.b.reg); err != nil {
			return err
		}
	}
	return c.checkNeeds()
}

// crawls writes the registry's crawls and their files' lists; added
// counts the originals added per crawl.
func (c *commit) crawls(added map[string]int64) error {
	if a := c.ch.Add; a != nil {
		a := *a
		a.Committed = time.Now().UTC().Truncate(time.Second)
		a.Originals = added[a.Name]
		a.Files = int64(len(c.ch.Files))
		a.Size = 0
		for _, f := range c.ch.Files {
			a.Size += f.Size
		}
		if c.b.reg.Algorithm == "" {
			c.b.reg.Algorithm = algorithmOf(c.ch.Originals)
		}
		c.b.reg.Crawls = append(c.b.reg.Crawls, &a)
		data, err := marshalCrawlFiles(&CrawlFiles{Crawl: a.Name, Files: c.ch.Files})
		if err != nil {
			return err
		}
		if err := c.b.writeFile(listOf(a.Name), append(data, '\n')); err != nil {
			return err
		}
	}
	if name := c.ch.Remove; name != "" {
		i := slices.IndexFunc(c.b.reg.Crawls, func(k *Crawl) bool { return k.Name == name })
		gone := *c.b.reg.Crawls[i]
		gone.Removed = time.Now().UTC().Truncate(time.Second)
		c.b.reg.Crawls = slices.Delete(c.b.reg.Crawls, i, i+1)
		c.b.reg.Removed = append(c.b.reg.Removed, &gone)
	}
	for i, k := range c.b.reg.Crawls {
		if c.ch.Add != nil && k.Name == c.ch.Add.Name {
			continue
		}
		if files, ok := c.ch.Replace[k.Name]; ok {
			k := *k
			k.Originals, k.Files = added[k.Name], int64(len(files))
			if err := c.relist(i, &k, files); err != nil {
				return err
			}
			continue
		}
		if _, ok := c.ch.Refile[k.Name]; ok {
			old, err := c.base.Files(k.Name)
			if err != nil {
				return err
			}
			files, _ := c.refiled(k.Name, old)
			k := *k
			if err := c.relist(i, &k, files); err != nil {
				return err
			}
			continue
		}
		if err := c.b.link(listOf(k.Name)); err != nil {
			return err
		}
	}
	// What other crawls require of the crawls refiled: the files as
	// they now are.
	for i, k := range c.b.reg.Crawls {
		var needs []Need
		for j, n := range k.Requires {
			files, changed := c.refiled(n.Crawl, n.Files)
			if !changed {
				continue
			}
			if needs == nil {
				needs = slices.Clone(k.Requires)
			}
			needs[j].Files = files
		}
		if needs != nil {
			k := *k
			k.Requires = needs
			c.b.reg.Crawls[i] = &k
		}
	}
	return nil
}

// relist puts k, its files now files, in the new registry at i, with
// their size, and writes its list of files.
func (c *commit) relist(i int, k *Crawl, files []FileInfo) error {
	k.Size = 0
	for _, f := range files {
		k.Size += f.Size
	}
	c.b.reg.Crawls[i] = k
	data, err := marshalCrawlFiles(&CrawlFiles{Crawl: k.Name, Files: files})
	if err != nil {
		return err
	}
	return c.b.writeFile(listOf(k.Name), append(data, '\n'))
}

// listOf is the name of a crawl's list of files in a generation.
func listOf(name string) string { return crawlsDir + "/" + name + ".json" }

// algorithmOf is the label of the first digest of a manifest ("" if none).
func algorithmOf(name string) string {
	if name == "" {
		return ""
	}
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	l, err := manifest.NewReader(f, name).Next()
	if err != nil {
		return ""
	}
	label, _, _ := strings.Cut(l.Digest, ":")
	return label
}

// partitions writes the new generation's originals: in each partition,
// a run of the added lines of its digests and of the lines kept of the
// runs that hold lines of a crawl the change removes or replaces, merged;
// every other run is linked. It returns the number of lines added per
// crawl.
func (c *commit) partitions() (map[string]int64, error) {
	parts, err := c.base.partitions()
	if err != nil {
		return nil, err
	}
	var add *lineSource
	if c.ch.Originals != "" {
		f, err := os.Open(c.ch.Originals)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in := manifest.NewReader(f, c.ch.Originals)
		in.RequireFields(6)
		in.RequireOrder(manifest.ByDigest)
		add = &lineSource{in: in}
		if err := add.next(); err != nil {
			return nil, err
		}
	}
	added := map[string]int64{}
	for {
		// The next partition: the lowest of the old ones left and the
		// one the next added line goes to.
		var key string
		if add != nil && add.ok {
			k, err := partitionOf(add.line.Digest)
			if err != nil {
				return nil, add.in.Errorf("%v", err)
			}
			key = k
		}
		if len(parts) > 0 && (key == "" || parts[0].key <= key) {
			key = parts[0].key
		}
		if key == "" {
			return added, nil
		}
		var old *partition
		if len(parts) > 0 && parts[0].key == key {
			old, parts = parts[0], parts[1:]
		}
		if err := c.partition(key, old, add, added); err != nil {
			return nil, err
		}
	}
}

// dropped are the crawls whose lines leave the index: the one removed and
// those replaced.
func (c *commit) dropped() []string {
	var out []string
	if c.ch.Remove != "" {
		out = append(out, c.ch.Remove)
	}
	for k := range c.ch.Replace {
		out = append(out, k)
	}
	return out
}

// drops reports whether an old line leaves the index: its crawl is
// removed or replaced.
func (c *commit) drops(l *manifest.Line) bool {
	crawl := CrawlOf(l.File)
	_, replaced := c.ch.Replace[crawl]
	return replaced || crawl == c.ch.Remove
}

// adds reports whether a crawl's lines may be added.
func (c *commit) adds(crawl string) bool {
	_, replaced := c.ch.Replace[crawl]
	return replaced || c.ch.Add != nil && crawl == c.ch.Add.Name
}

// partition writes one partition of the new generation (old is the
// base's, nil if it has none), counting the added lines per crawl.
func (c *commit) partition(key string, old *partition, add *lineSource, added map[string]int64) error {
	var rewrite []*run
	if old != nil {
		keep := old.runs
		if drop := c.dropped(); len(drop) > 0 {
			keep = nil
			for _, r := range old.runs {
				holds, err := runHolds(r.path, drop)
				if err != nil {
					return err
				}
				if holds {
					rewrite = append(rewrite, r)
				} else {
					keep = append(keep, r)
				}
			}
		}
		if err := c.b.linkRuns(keep); err != nil {
			return err
		}
	}
	takes := add != nil && add.ok && mustPartition(add.line.Digest) == key
	if !takes && len(rewrite) == 0 {
		return nil
	}
	w, err := c.b.createRun(key)
	if err != nil {
		return err
	}
	defer w.abort()
	var prev *merger
	if len(rewrite) > 0 {
		// The old lines are checked as they are read: a run out of
		// order, or with another partition's digests, is refused, not
		// merged.
		if prev, err = openMerger(rewrite); err != nil {
			return err
		}
		defer prev.close()
	}
	var kept *manifest.Line
	next := func() error {
		l, ok, err := prev.next()
		if !ok {
			l = nil
		}
		kept = l
		return err
	}
	if prev != nil {
		if err := next(); err != nil {
			return err
		}
	}
	for {
		fromAdd := add != nil && add.ok && mustPartition(add.line.Digest) == key
		switch {
		case kept == nil && !fromAdd:
			return w.close()
		case kept != nil && (!fromAdd || manifest.ByDigest.Compare(kept, &add.line) <= 0):
			if !c.drops(kept) {
				if err := w.write(kept); err != nil {
					return err
				}
			}
			if err := next(); err != nil {
				return err
			}
		default:
			l := &add.line
			crawl := CrawlOf(l.File)
			if !c.adds(crawl) || l.IsRevisit() {
				return add.in.Errorf("%s is no response of a crawl this commit adds or replaces", l.File)
			}
			if err := w.write(l); err != nil {
				return err
			}
			added[crawl]++
			if err := add.next(); err != nil {
				return err
			}
		}
	}
}

// runHolds reports whether a run holds a line of one of the crawls: a
// line whose file is named CRAWL/... (crawl names need no escaping in a
// manifest, so the raw line starts with the name as it is).
func runHolds(path string, crawls []string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	midLine := false
	for {
		text, err := br.ReadSlice('\n')
		if !midLine {
			if i := bytes.IndexByte(text, '/'); i > 0 {
				for _, k := range crawls {
					if string(text[:i]) == k {
						return true, nil
					}
				}
			}
		}
		switch {
		case err == nil:
			midLine = false
		case errors.Is(err, bufio.ErrBufferFull):
			midLine = true
		case err == io.EOF:
			return false, nil
		default:
			return false, err
		}
	}
}

func mustPartition(digest string) string {
	k, _ := partitionOf(digest)
	return k
}

// lineSource is a manifest read one line ahead.
type lineSource struct {
	in   *manifest.Reader
	line manifest.Line
	ok   bool
}

func (s *lineSource) next() error {
	l, err := s.in.Next()
	switch {
	case err == io.EOF:
		s.ok = false
		return nil
	case err != nil:
		return err
	}
	s.line, s.ok = l, true
	return nil
}

// contentsAlgorithm is what CONTENTS and the registry list a file's sum
// in: SHA-256, as bare hex (fixity's form of it).
const contentsAlgorithm = fixity.SHA256

// hashWriter is a file written and hashed as it is.
type hashWriter struct {
	w io.Writer
	h *fixity.Hash
}

func newHashWriter(w io.Writer) *hashWriter {
	return &hashWriter{w: w, h: fixity.New(contentsAlgorithm)}
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	return n, err
}

// content is what CONTENTS lists of the bytes written.
func (hw *hashWriter) content() content {
	return content{size: hw.h.Size(), sum: hw.h.Sum(contentsAlgorithm)}
}

// writeSynced writes a new file and syncs it.
func writeSynced(name string, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// linkOrCopy gives a file of the old generation to the new one: a hard
// link (it never changes), or a copy where links cannot be made.
func linkOrCopy(from, to string) error {
	if err := os.Link(from, to); err == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

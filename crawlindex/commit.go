package crawlindex

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/atomicfile"
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
// under the index's lock, and returns it. The change applies to the
// generation committed when the lock is taken (another run may have
// committed since this one opened the index), which must verify as Open
// checks it; the crawls an added crawl requires must be committed then,
// with the files it requires as they are listed then.
func Commit(dir string, ch Change) (*Index, error) {
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
	c := &commit{base: base, ch: ch, contents: contents{}}
	if err := c.check(); err != nil {
		return nil, err
	}
	// The next number is past every generation directory there is: a
	// commit killed between renaming its generation into place and
	// renaming CURRENT left one that was never current, and this one's
	// rename would fail on it. Nothing is removed before CURRENT moves
	// (such leftovers age out through cleanup like any old generation).
	high, err := highestGeneration(base.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	next := max(base.Registry.Generation, high) + 1
	c.tmp, err = os.MkdirTemp(base.Dir, atomicfile.TempPrefix+fmt.Sprintf("%s%06d-", genPrefix, next))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(c.tmp) // gone once renamed
	if err := c.write(next); err != nil {
		return nil, err
	}
	gen := fmt.Sprintf("%s%06d", genPrefix, next)
	if err := os.Rename(c.tmp, filepath.Join(base.Dir, gen)); err != nil {
		return nil, err
	}
	if err := atomicfile.SyncDir(base.Dir); err != nil {
		return nil, err
	}
	cur, err := atomicfile.Create(filepath.Join(base.Dir, currentFile), 0o644)
	if err != nil {
		return nil, err
	}
	defer cur.Abort()
	if _, err := io.WriteString(cur, gen+"\n"); err != nil {
		return nil, err
	}
	if err := cur.Commit(); err != nil {
		return nil, err
	}
	// Committed. The mark tells a later Open that CURRENT named the
	// generation; should it fail, the next commit writes it.
	mark(filepath.Join(base.Dir, gen))
	cleanup(base.Dir, next)
	return Open(base.Dir)
}

// commit is the making of one generation.
type commit struct {
	base *Index
	ch   Change
	tmp  string
	reg  Registry
	// contents are the new generation's files, for its CONTENTS.
	contents contents
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
	for _, k := range c.reg.Crawls {
		for _, n := range k.Requires {
			if c.reg.Crawl(n.Crawl) == nil && !before[[2]string{k.Name, n.Crawl}] && !(c.ch.Force && n.Crawl == c.ch.Remove) {
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

// write fills the temporary generation directory.
func (c *commit) write(next int) error {
	for _, d := range []string{originalsDir, crawlsDir} {
		if err := os.Mkdir(filepath.Join(c.tmp, d), 0o755); err != nil {
			return err
		}
	}
	c.reg = *c.base.Registry
	c.reg.Version, c.reg.Generation = registryVersion, next
	c.reg.Crawls = slices.Clone(c.reg.Crawls)
	c.reg.Removed = slices.Clone(c.reg.Removed)
	added, err := c.partitions()
	if err != nil {
		return err
	}
	if err := c.crawls(added); err != nil {
		return err
	}
	if c.ch.Update != nil {
		if err := c.ch.Update(&c.reg); err != nil {
			return err
		}
	}
	if err := c.checkNeeds(); err != nil {
		return err
	}
	data, err := marshalRegistry(&c.reg)
	if err != nil {
		return err
	}
	if err := c.writeFile(registryFile, append(data, '\n')); err != nil {
		return err
	}
	// CONTENTS last: every file it lists is written.
	var list strings.Builder
	for _, rel := range slices.Sorted(maps.Keys(c.contents)) {
		fmt.Fprintf(&list, "%s %d %s\n", c.contents[rel].sum, c.contents[rel].size, rel)
	}
	if err := writeSynced(filepath.Join(c.tmp, contentsFile), []byte(list.String())); err != nil {
		return err
	}
	for _, d := range []string{originalsDir, crawlsDir, "."} {
		if err := atomicfile.SyncDir(filepath.Join(c.tmp, d)); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes a file of the new generation (rel is its path in it)
// and lists it.
func (c *commit) writeFile(rel string, data []byte) error {
	if err := writeSynced(filepath.Join(c.tmp, filepath.FromSlash(rel)), data); err != nil {
		return err
	}
	c.contents[rel] = content{size: int64(len(data)), sum: sha256Hex(data)}
	return nil
}

// link gives a file of the current generation to the new one, and lists
// it as the current one's CONTENTS does (a generation that has none:
// as it is).
func (c *commit) link(rel string) error {
	from, to := filepath.Join(c.base.gen, filepath.FromSlash(rel)), filepath.Join(c.tmp, filepath.FromSlash(rel))
	if err := linkOrCopy(from, to); err != nil {
		return err
	}
	if k, ok := c.base.contents[rel]; ok {
		c.contents[rel] = k
		return nil
	}
	f, err := os.Open(to)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	c.contents[rel] = content{size: n, sum: hex.EncodeToString(h.Sum(nil))}
	return nil
}

// crawls writes the registry's crawls and their files' lists; added
// counts the originals added per crawl.
func (c *commit) crawls(added map[string]int64) error {
	listOf := func(name string) string { return crawlsDir + "/" + name + ".json" }
	if a := c.ch.Add; a != nil {
		a := *a
		a.Committed = time.Now().UTC().Truncate(time.Second)
		a.Originals = added[a.Name]
		a.Files = int64(len(c.ch.Files))
		a.Size = 0
		for _, f := range c.ch.Files {
			a.Size += f.Size
		}
		if c.reg.Algorithm == "" {
			c.reg.Algorithm = algorithmOf(c.ch.Originals)
		}
		c.reg.Crawls = append(c.reg.Crawls, &a)
		data, err := marshalCrawlFiles(&CrawlFiles{Crawl: a.Name, Files: c.ch.Files})
		if err != nil {
			return err
		}
		if err := c.writeFile(listOf(a.Name), append(data, '\n')); err != nil {
			return err
		}
	}
	if name := c.ch.Remove; name != "" {
		i := slices.IndexFunc(c.reg.Crawls, func(k *Crawl) bool { return k.Name == name })
		gone := *c.reg.Crawls[i]
		gone.Removed = time.Now().UTC().Truncate(time.Second)
		c.reg.Crawls = slices.Delete(c.reg.Crawls, i, i+1)
		c.reg.Removed = append(c.reg.Removed, &gone)
	}
	for i, k := range c.reg.Crawls {
		if c.ch.Add != nil && k.Name == c.ch.Add.Name {
			continue
		}
		if files, ok := c.ch.Replace[k.Name]; ok {
			k := *k
			k.Originals, k.Files, k.Size = added[k.Name], int64(len(files)), 0
			for _, f := range files {
				k.Size += f.Size
			}
			c.reg.Crawls[i] = &k
			data, err := marshalCrawlFiles(&CrawlFiles{Crawl: k.Name, Files: files})
			if err != nil {
				return err
			}
			if err := c.writeFile(listOf(k.Name), append(data, '\n')); err != nil {
				return err
			}
			continue
		}
		if err := c.link(listOf(k.Name)); err != nil {
			return err
		}
	}
	return nil
}

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

// partitions writes the new generation's originals: each partition the
// change touches is the merge of the old one (without the lines of a
// removed or replaced crawl) and the added lines of its digests; the
// others are hard links. It returns the number of lines added per crawl.
func (c *commit) partitions() (map[string]int64, error) {
	old, err := c.base.Partitions()
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
	byKey := map[string]string{}
	var keys []string
	for _, p := range old {
		k := strings.TrimSuffix(filepath.Base(p), partitionExt)
		byKey[k] = p
		keys = append(keys, k)
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
		if len(keys) > 0 && (key == "" || keys[0] <= key) {
			key = keys[0]
		}
		if key == "" {
			return added, nil
		}
		if len(keys) > 0 && keys[0] == key {
			keys = keys[1:]
		}
		if err := c.partition(key, byKey[key], add, added); err != nil {
			return nil, err
		}
	}
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

// partition writes one partition of the new generation, counting the
// added lines per crawl.
func (c *commit) partition(key, old string, add *lineSource, added map[string]int64) error {
	rel := originalsDir + "/" + key + partitionExt
	dst := filepath.Join(c.tmp, filepath.FromSlash(rel))
	takes := add != nil && add.ok && mustPartition(add.line.Digest) == key
	if !takes && c.ch.Remove == "" && len(c.ch.Replace) == 0 {
		return c.link(rel)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	h := &hashWriter{w: out, h: sha256.New()}
	w := manifest.NewWriter(h)
	var prev *lineSource
	if old != "" {
		f, err := os.Open(old)
		if err != nil {
			return err
		}
		defer f.Close()
		// The old lines are checked as they are read: a partition out
		// of order, or with another's digests, is refused, not merged.
		in := manifest.NewReader(f, old)
		in.RequireFields(6)
		in.RequireOrder(manifest.ByDigest)
		prev = &lineSource{in: in, partition: key}
		if err := prev.next(); err != nil {
			return err
		}
	}
	for {
		fromOld := prev != nil && prev.ok
		fromAdd := add != nil && add.ok && mustPartition(add.line.Digest) == key
		switch {
		case !fromOld && !fromAdd:
			if err := w.Flush(); err != nil {
				return err
			}
			c.contents[rel] = content{size: h.n, sum: hex.EncodeToString(h.h.Sum(nil))}
			return out.Sync()
		case fromOld && (!fromAdd || manifest.ByDigest.Compare(&prev.line, &add.line) <= 0):
			if !c.drops(&prev.line) {
				if err := w.Write(&prev.line); err != nil {
					return err
				}
			}
			if err := prev.next(); err != nil {
				return err
			}
		default:
			l := &add.line
			crawl := CrawlOf(l.File)
			if !c.adds(crawl) || l.IsRevisit() {
				return add.in.Errorf("%s is no response of a crawl this commit adds or replaces", l.File)
			}
			if err := w.Write(l); err != nil {
				return err
			}
			added[crawl]++
			if err := add.next(); err != nil {
				return err
			}
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
	// partition, if set, is the partition the lines are of: a line of
	// another is refused.
	partition string
}

func (s *lineSource) next() error {
	l, err := s.in.Next()
	switch {
	case err == io.EOF:
		s.ok = false
		return nil
	case err != nil && s.partition != "":
		return fmt.Errorf("index: %w", err)
	case err != nil:
		return err
	}
	if s.partition != "" {
		if k, err := partitionOf(l.Digest); err != nil || k != s.partition {
			return s.in.Errorf("index: digest %s does not belong in partition %s", l.Digest, s.partition)
		}
	}
	s.line, s.ok = l, true
	return nil
}

// hashWriter is a file written and hashed as it is.
type hashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
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

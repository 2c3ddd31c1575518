package crawlindex

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/manifest"
)

// builder makes the next generation of an index: its files written or
// linked (from the generation before: files never change once written)
// into a temporary directory beside the current generation, listed for
// its CONTENTS, then published: synced, renamed into place, named by
// CURRENT, marked. A crash at any step leaves the generation before, or
// the new one whole. Commits and compactions are both made by one.
type builder struct {
	base *Index
	next int
	tmp  string
	reg  Registry // the new generation's, as the base's until changed
	// step, if set, is called after each step of publish (and of the
	// writing of runs) with its name: a test makes it fail or kill the
	// process there.
	step func(string) error

	mu       sync.Mutex // of contents and of step's calls: a compaction's merges run side by side
	contents contents   // the new generation's files, for its CONTENTS
}

// newBuilder starts the generation after base. The index's lock must be
// held.
func newBuilder(base *Index, step func(string) error) (*builder, error) {
	// The next number is past every generation directory there is: a
	// commit killed between renaming its generation into place and
	// renaming CURRENT left one that was never current, and this one's
	// rename would fail on it. Nothing is removed before CURRENT moves
	// (such leftovers age out through cleanup like any old generation).
	high, err := highestGeneration(base.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	b := &builder{base: base, next: max(base.Registry.Generation, high) + 1, step: step, contents: contents{}}
	b.tmp, err = os.MkdirTemp(base.Dir, atomicfile.TempPrefix+fmt.Sprintf("%s%06d-", genPrefix, b.next))
	if err != nil {
		return nil, err
	}
	for _, d := range []string{originalsDir, crawlsDir} {
		if err := os.Mkdir(filepath.Join(b.tmp, d), 0o755); err != nil {
			b.abort()
			return nil, err
		}
	}
	b.reg = *base.Registry
	b.reg.Version, b.reg.Generation = registryVersion, b.next
	b.reg.Crawls = slices.Clone(b.reg.Crawls)
	b.reg.Removed = slices.Clone(b.reg.Removed)
	return b, nil
}

// abort removes what is left of the generation if it was not published.
func (b *builder) abort() { os.RemoveAll(b.tmp) }

func (b *builder) at(step string) error {
	if b.step == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.step(step)
}

func (b *builder) list(rel string, c content) {
	b.mu.Lock()
	b.contents[rel] = c
	b.mu.Unlock()
}

// writeFile writes a file of the new generation (rel is its path in it)
// and lists it.
func (b *builder) writeFile(rel string, data []byte) error {
	if err := writeSynced(filepath.Join(b.tmp, filepath.FromSlash(rel)), data); err != nil {
		return err
	}
	b.list(rel, content{size: int64(len(data)), sum: sha256Hex(data)})
	return nil
}

// link gives a file of the base generation to the new one under the same
// name, and lists it as the base's CONTENTS does (a generation that has
// none: as it is).
func (b *builder) link(rel string) error {
	from, to := filepath.Join(b.base.gen, filepath.FromSlash(rel)), filepath.Join(b.tmp, filepath.FromSlash(rel))
	if err := linkOrCopy(from, to); err != nil {
		return err
	}
	if k, ok := b.base.contents[rel]; ok {
		b.list(rel, k)
		return nil
	}
	h, err := fixity.HashFile(to, contentsAlgorithm)
	if err != nil {
		return err
	}
	b.list(rel, content{size: h.Size(), sum: h.Sum(contentsAlgorithm)})
	return nil
}

// linkRuns links runs of the base generation.
func (b *builder) linkRuns(runs []*run) error {
	for _, r := range runs {
		if err := b.link(r.rel()); err != nil {
			return err
		}
	}
	return nil
}

// linkLists links every committed crawl's list of files but those of
// the crawls named in except.
func (b *builder) linkLists(except func(name string) bool) error {
	for _, k := range b.reg.Crawls {
		if except != nil && except(k.Name) {
			continue
		}
		if err := b.link(crawlsDir + "/" + k.Name + ".json"); err != nil {
			return err
		}
	}
	return nil
}

// publish writes the registry and CONTENTS, syncs the generation, renames
// it into place and CURRENT to it, and marks it: the generation is then
// the index's. It returns the index opened again.
func (b *builder) publish() (*Index, error) {
	data, err := marshalRegistry(&b.reg)
	if err != nil {
		return nil, err
	}
	if err := b.writeFile(registryFile, append(data, '\n')); err != nil {
		return nil, err
	}
	// CONTENTS last: every file it lists is written.
	var list strings.Builder
	for _, rel := range slices.Sorted(maps.Keys(b.contents)) {
		fmt.Fprintf(&list, "%s %d %s\n", b.contents[rel].sum, b.contents[rel].size, rel)
	}
	if err := writeSynced(filepath.Join(b.tmp, contentsFile), []byte(list.String())); err != nil {
		return nil, err
	}
	for _, d := range []string{originalsDir, crawlsDir, "."} {
		if err := atomicfile.SyncDir(filepath.Join(b.tmp, d)); err != nil {
			return nil, err
		}
	}
	if err := b.at("generation written"); err != nil {
		return nil, err
	}
	gen := fmt.Sprintf("%s%06d", genPrefix, b.next)
	if err := os.Rename(b.tmp, filepath.Join(b.base.Dir, gen)); err != nil {
		return nil, err
	}
	if err := atomicfile.SyncDir(b.base.Dir); err != nil {
		return nil, err
	}
	if err := b.at("generation renamed"); err != nil {
		return nil, err
	}
	cur, err := atomicfile.Create(filepath.Join(b.base.Dir, currentFile), 0o644)
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
	// Published: nothing fails it from here (a test's step may kill the
	// process, not fail it). The mark tells a later Open that CURRENT
	// named the generation; should it fail, the next commit writes it.
	b.at("CURRENT renamed")
	mark(filepath.Join(b.base.Dir, gen))
	b.at("marked")
	return Open(b.base.Dir)
}

// runWriter writes a run of the new generation: a partition's lines,
// sorted on digest, hashed as they are written.
type runWriter struct {
	b     *builder
	rel   string
	f     *os.File
	h     *hashWriter
	w     *bufio.Writer
	buf   []byte
	prev  manifest.Line
	lines int64
}

// createRun starts the new generation's run of a partition.
func (b *builder) createRun(key string) (*runWriter, error) {
	rel := originalsDir + "/" + runName(key, b.next)
	f, err := os.Create(filepath.Join(b.tmp, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	h := newHashWriter(f)
	return &runWriter{b: b, rel: rel, f: f, h: h, w: bufio.NewWriterSize(h, 256<<10)}, nil
}

// write writes a line; a line out of order is refused (the run would
// not be one).
func (w *runWriter) write(l *manifest.Line) error {
	if w.lines > 0 && manifest.ByDigest.Compare(&w.prev, l) > 0 {
		return fmt.Errorf("index: %s would not be sorted: %s after %s", w.rel, l.String(), w.prev.String())
	}
	w.prev = *l
	w.lines++
	w.buf = l.Append(w.buf[:0])
	_, err := w.w.Write(w.buf)
	return err
}

// writeRaw writes a line (without its line feed) as it is, from a run
// read as bytes (whose order was checked as it was read).
func (w *runWriter) writeRaw(line []byte) error {
	w.lines++
	if _, err := w.w.Write(line); err != nil {
		return err
	}
	return w.w.WriteByte('\n')
}

// close ends the run: written, synced and listed; a run of no line is no
// file.
func (w *runWriter) close() error {
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return err
	}
	if w.lines == 0 {
		w.f.Close()
		return os.Remove(w.f.Name())
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	w.b.list(w.rel, w.h.content())
	return w.b.at("run written")
}

// abort leaves the run (the builder's directory goes as a whole).
func (w *runWriter) abort() { w.f.Close() }

package crawlindex

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"warcdedup/manifest"
)

// A partition holds the originals of one digest range (the digests of one
// label whose value starts with one character) as sorted runs: files of
// warcsum lines, each sorted on digest (manifest.ByDigest), written whole
// by one generation and never changed after. A commit adds a run to each
// partition its crawl has digests in; a compaction merges a partition's
// runs into one; the join, Verify and every reader merge a partition's
// runs as they read them. The runs of a partition, merged (sort -m with
// manifest.ByDigest's keys), are its originals: every line of every run
// is an original of a committed crawl.
//
// A run is named after its partition and the generation that wrote it:
//
//	originals/sha1-A.000042.manifest
//
// A partition as a warcdedup before runs wrote it (originals/sha1-A.manifest)
// is a run too, of generation 0: an index written then is read as it is,
// each partition a single run, until a commit or a compaction writes runs
// beside or over it.

// run is one run of a partition, as a generation lists it.
type run struct {
	key  string // the partition's: "sha1-A"
	gen  int    // the generation that wrote it; 0: written before runs were
	path string // the file
	size int64  // its size as committed (-1: not known)
}

// rel is the run's path relative to its generation.
func (r *run) rel() string { return originalsDir + "/" + filepath.Base(r.path) }

// partition is a partition's key and its runs, oldest first.
type partition struct {
	key  string
	runs []*run
}

// runName is the file name of the run of a partition that generation gen
// writes.
func runName(key string, gen int) string {
	return fmt.Sprintf("%s.%06d%s", key, gen, partitionExt)
}

// parseRunName reads a run's file name: its partition and generation
// (0 for a partition written before runs were).
func parseRunName(name string) (key string, gen int, ok bool) {
	base, ok := strings.CutSuffix(name, partitionExt)
	if !ok || base == "" || strings.HasPrefix(base, ".") || strings.ContainsAny(base, "/\\") {
		return "", 0, false
	}
	key, num, dotted := strings.Cut(base, ".")
	if !dotted {
		return key, 0, validKey(key)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || num != fmt.Sprintf("%06d", n) {
		return "", 0, false
	}
	return key, n, validKey(key)
}

// validKey reports whether a partition key is one partitionOf makes.
func validKey(key string) bool {
	label, c, ok := strings.Cut(key, "-")
	return ok && label != "" && len(c) == 1 && mustPartition(label+":"+c) == key
}

// partitions lists the generation's runs by partition, in key order (the
// order of the digests), each partition's runs oldest first.
func (ix *Index) partitions() ([]*partition, error) {
	if ix.gen == "" {
		return nil, nil
	}
	var runs []*run
	add := func(name string, size int64) error {
		key, gen, ok := parseRunName(name)
		if !ok {
			return &DamageError{Dir: ix.Dir, Problems: []string{fmt.Sprintf("%s/%s/%s is no run of a partition", filepath.Base(ix.gen), originalsDir, name)}}
		}
		runs = append(runs, &run{key: key, gen: gen, path: filepath.Join(ix.gen, originalsDir, name), size: size})
		return nil
	}
	if ix.contents != nil {
		for rel, c := range ix.contents {
			if dir, name, _ := strings.Cut(rel, "/"); dir == originalsDir {
				if err := add(name, c.size); err != nil {
					return nil, err
				}
			}
		}
	} else {
		entries, err := os.ReadDir(filepath.Join(ix.gen, originalsDir))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), partitionExt) {
				fi, err := e.Info()
				if err != nil {
					return nil, err
				}
				if err := add(e.Name(), fi.Size()); err != nil {
					return nil, err
				}
			}
		}
	}
	slices.SortFunc(runs, func(a, b *run) int { return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.gen, b.gen)) })
	var out []*partition
	for _, r := range runs {
		if len(out) == 0 || out[len(out)-1].key != r.key {
			out = append(out, &partition{key: r.key})
		}
		p := out[len(out)-1]
		p.runs = append(p.runs, r)
	}
	return out, nil
}

// Runs are the files of the committed generation's originals, by
// partition in digest order, each partition's runs oldest first. Each run
// is sorted on digest; the runs of a partition are merged to read it (see
// Reader): their lines one after the other are not in order.
func (ix *Index) Runs() ([][]string, error) {
	parts, err := ix.partitions()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, p := range parts {
		var names []string
		for _, r := range p.runs {
			names = append(names, r.path)
		}
		out = append(out, names)
	}
	return out, nil
}

// runReader reads a run, checking each line as it is read: 6 fields,
// sorted on digest, of the run's partition.
type runReader struct {
	run  *run
	f    *os.File
	in   *manifest.Reader
	line manifest.Line
	ok   bool // line is the next line; false at the end
}

func openRun(r *run) (*runReader, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, err
	}
	in := manifest.NewReader(f, r.path)
	in.RequireFields(6)
	in.RequireOrder(manifest.ByDigest)
	rr := &runReader{run: r, f: f, in: in}
	if err := rr.next(); err != nil {
		f.Close()
		return nil, err
	}
	return rr, nil
}

// next reads the run's next line.
func (rr *runReader) next() error {
	l, err := rr.in.Next()
	switch {
	case err == io.EOF:
		rr.ok = false
		return nil
	case err != nil:
		rr.ok = false
		return fmt.Errorf("index: %w", err)
	}
	if k, err := partitionOf(l.Digest); err != nil || k != rr.run.key {
		rr.ok = false
		return rr.in.Errorf("index: digest %s does not belong in partition %s", l.Digest, rr.run.key)
	}
	rr.line, rr.ok = l, true
	return nil
}

func (rr *runReader) close() error { return rr.f.Close() }

// merger reads a partition's runs merged on manifest.ByDigest: a heap of
// the runs by their next line (of equal lines, the older run's first).
type merger struct {
	heap []*runReader // the runs with a line left
	all  []*runReader // every run opened, to close
	last *runReader   // the run of the line Next returned last
}

// openMerger opens each of a partition's runs.
func openMerger(runs []*run) (*merger, error) {
	m := &merger{}
	for _, r := range runs {
		rr, err := openRun(r)
		if err != nil {
			m.close()
			return nil, err
		}
		m.all = append(m.all, rr)
		if rr.ok {
			m.heap = append(m.heap, rr)
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m, nil
}

// next returns the partition's next line, or false at its end. The line
// is valid until the next call.
func (m *merger) next() (*manifest.Line, bool, error) {
	if m.last != nil {
		if err := m.last.next(); err != nil {
			return nil, false, err
		}
		if m.last.ok {
			m.down(0)
		} else {
			n := len(m.heap) - 1
			m.heap[0] = m.heap[n]
			m.heap = m.heap[:n]
			if n > 0 {
				m.down(0)
			}
		}
		m.last = nil
	}
	if len(m.heap) == 0 {
		return nil, false, nil
	}
	m.last = m.heap[0]
	return &m.last.line, true, nil
}

// errorf is an error about the line next returned last, naming its run
// and line.
func (m *merger) errorf(format string, args ...any) error {
	if m.last == nil {
		return fmt.Errorf(format, args...)
	}
	return m.last.in.Errorf(format, args...)
}

func (m *merger) less(a, b *runReader) bool {
	if c := manifest.ByDigest.Compare(&a.line, &b.line); c != 0 {
		return c < 0
	}
	return a.run.gen < b.run.gen
}

func (m *merger) down(i int) { siftDown(m.heap, i, m.less) }

func (m *merger) close() {
	for _, rr := range m.all {
		rr.close()
	}
	m.all, m.heap, m.last = nil, nil, nil
}

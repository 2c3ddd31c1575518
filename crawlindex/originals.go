package crawlindex

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"

	"warcdedup/manifest"
)

// Reader reads the originals of a generation in digest order
// (manifest.ByDigest): each partition's runs merged as they are read, one
// partition after the other, each line checked (6 fields, sorted, of its
// partition). Memory is a buffer per run of one partition.
type Reader struct {
	parts []*partition
	i     int // the next partition to open
	m     *merger
}

// Originals opens a Reader of the generation's originals. Close it when
// done.
func (ix *Index) Originals() (*Reader, error) {
	parts, err := ix.partitions()
	if err != nil {
		return nil, err
	}
	return &Reader{parts: parts}, nil
}

// Next returns the next original, or io.EOF after the last.
func (r *Reader) Next() (manifest.Line, error) {
	for {
		if r.m != nil {
			l, ok, err := r.m.next()
			if err != nil {
				return manifest.Line{}, err
			}
			if ok {
				return *l, nil
			}
			r.m.close()
			r.m = nil
		}
		if r.i == len(r.parts) {
			return manifest.Line{}, io.EOF
		}
		m, err := openMerger(r.parts[r.i].runs)
		if err != nil {
			return manifest.Line{}, err
		}
		r.m = m
		r.i++
	}
}

// Errorf is an error about the line Next returned last, naming its run
// and line.
func (r *Reader) Errorf(format string, args ...any) error {
	if r.m == nil {
		return fmt.Errorf(format, args...)
	}
	return r.m.errorf(format, args...)
}

// Close closes the runs being read.
func (r *Reader) Close() error {
	if r.m != nil {
		r.m.close()
		r.m = nil
	}
	r.i = len(r.parts)
	return nil
}

// Finder looks up the originals of a digest in a generation: each run is
// a manifest.Table (read once when the Finder opens, which checks its
// order; then searched by bisection), and a digest's lines in the runs of
// its partition are merged in manifest.ByDigest order.
type Finder struct {
	tables map[string][]*manifest.Table // by partition
}

// Finder opens every run of the generation as a table. Close it when done.
func (ix *Index) Finder() (*Finder, error) {
	parts, err := ix.partitions()
	if err != nil {
		return nil, err
	}
	f := &Finder{tables: map[string][]*manifest.Table{}}
	for _, p := range parts {
		for _, r := range p.runs {
			t, err := manifest.OpenTable(r.path)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("index: %w", err)
			}
			f.tables[p.key] = append(f.tables[p.key], t)
		}
	}
	return f, nil
}

// Find calls fn with each original of the digest, in manifest.ByDigest
// order. fn's error ends the search and is returned, except
// manifest.ErrStop, which ends it without one.
func (f *Finder) Find(digest string, fn func(*manifest.Line) error) error {
	key, err := partitionOf(digest)
	if err != nil {
		return nil // no original has it
	}
	tables := f.tables[key]
	if len(tables) == 1 {
		return tables[0].Find(digest, fn)
	}
	// Each run's lines of the digest as a sequence, pulled in turn.
	type source struct {
		next func() (manifest.Line, bool)
		stop func()
		line manifest.Line
		ok   bool
		err  error
	}
	srcs := make([]*source, len(tables))
	for i, t := range tables {
		s := &source{}
		s.next, s.stop = iter.Pull(func(yield func(manifest.Line) bool) {
			s.err = t.Find(digest, func(l *manifest.Line) error {
				if !yield(*l) {
					return manifest.ErrStop
				}
				return nil
			})
		})
		defer s.stop()
		s.line, s.ok = s.next()
		if s.err != nil {
			return s.err
		}
		srcs[i] = s
	}
	for {
		var low *source
		for _, s := range srcs {
			if s.ok && (low == nil || manifest.ByDigest.Compare(&s.line, &low.line) < 0) {
				low = s
			}
		}
		if low == nil {
			return nil
		}
		l := low.line
		if err := fn(&l); err != nil {
			if errors.Is(err, manifest.ErrStop) {
				return nil
			}
			return err
		}
		low.line, low.ok = low.next()
		if low.err != nil {
			return low.err
		}
	}
}

// Close closes the tables.
func (f *Finder) Close() error {
	for _, ts := range f.tables {
		for _, t := range ts {
			t.Close()
		}
	}
	f.tables = nil
	return nil
}

// Tables are the Finder's tables, every run's, for what searches them
// all (originals.New).
func (f *Finder) Tables() []*manifest.Table {
	var out []*manifest.Table
	for _, key := range slices.Sorted(maps.Keys(f.tables)) {
		out = append(out, f.tables[key]...)
	}
	return out
}

// Package sumproc is stage 3 of the toolchain: it numbers the copies of each
// payload class (digest and ext). Copy 1 is the earliest capture and is
// kept; every later copy becomes a revisit that names copy 1's URI and date,
// except the captures that revisits already in the collection refer to, and
// those with the original's own URI and date, which are kept as well (see
// manifest.Numberer).
package sumproc

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"warcdedup/manifest"
)

// Options of a run.
type Options struct {
	DupsOnly bool        // leave copy-1 lines out of the output
	Warn     func(error) // receives repeated records
	Largest  int         // how many of the largest classes Stats keeps (10 if 0)
}

// RevisitOverhead estimates the stored bytes of the revisit record that
// replaces a duplicate: a WARC header and the HTTP headers, gzip'd. It is an
// estimate for planning; warcrefs reports the real figure.
const RevisitOverhead = 600

// Stats describes the duplication in a manifest.
type Stats struct {
	Records        int64 `json:"records"`
	Repeated       int64 `json:"repeated_records"` // lines naming a record already listed
	UniquePayloads int64 `json:"unique_payloads"`  // (digest, ext) classes
	Duplicates     int64 `json:"duplicates"`       // lines with copy > 1
	// Kept counts later captures of a class that stay responses (copy 1
	// after the original): an existing revisit refers to them, or they
	// have the original's URI and date.
	Kept           int64   `json:"later_captures_kept"`
	Pinned         int64   `json:"referred_to_by_revisits"` // responses existing revisits refer to
	Revisits       int64   `json:"revisit_lines"`           // existing revisits, passed through
	Bytes          int64   `json:"stored_bytes"`
	DuplicateBytes int64   `json:"duplicate_stored_bytes"`
	RateByCount    float64 `json:"duplication_rate_by_count"`
	RateByBytes    float64 `json:"duplication_rate_by_bytes"`
	// SavedEstimate is what rewriting every duplicate as a revisit would
	// save: each duplicate's stored length less RevisitOverhead, never
	// below zero.
	SavedEstimate int64   `json:"bytes_saved_estimate"`
	Largest       []Class `json:"largest_classes"`

	largest classHeap
}

// Class is one (digest, ext) payload class, for the largest-classes list.
type Class struct {
	Digest string `json:"digest"`
	Ext    int    `json:"ext"`
	Copies int64  `json:"copies"`
	Bytes  int64  `json:"stored_bytes"`
	URI    string `json:"original_uri"`
	Date   string `json:"original_date"`
}

// WriteJSON writes s as indented JSON.
func (s *Stats) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "records: %d (%d repeated lines listed once)\n", s.Records, s.Repeated)
	fmt.Fprintf(w, "unique payloads: %d, duplicates: %d (%.1f%% of records, %.1f%% of stored bytes)\n",
		s.UniquePayloads, s.Duplicates, 100*s.RateByCount, 100*s.RateByBytes)
	fmt.Fprintf(w, "stored bytes: %d, held by duplicates: %d, a rewrite would save about %d\n", s.Bytes, s.DuplicateBytes, s.SavedEstimate)
}

// Deps counts, for each file, the files holding the originals that its
// revisits will depend on, so that nobody deletes a file others need.
type Deps map[string]map[string]int64

// Add records that a revisit in file depends on an original in origFile.
func (d Deps) Add(file, origFile string) {
	m := d[file]
	if m == nil {
		m = map[string]int64{}
		d[file] = m
	}
	m[origFile]++
}

// Write writes "file original-file count" lines in byte order.
func (d Deps) Write(w io.Writer) error {
	files := make([]string, 0, len(d))
	for f := range d {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		origs := make([]string, 0, len(d[f]))
		for o := range d[f] {
			origs = append(origs, o)
		}
		slices.Sort(origs)
		for _, o := range origs {
			if _, err := fmt.Fprintf(w, "%s %s %d\n", f, o, d[f][o]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Process reads a 7-field manifest sorted by manifest.ByDigest, with
// revisit lines, and writes its 10-field form; revisit lines pass through.
// deps may be nil.
func Process(in *manifest.Reader, out *manifest.Writer, opt Options, deps Deps) (*Stats, error) {
	in.RequireFields(7, 10)
	in.RequireOrder(manifest.ByDigest)
	st := &Stats{}
	keep := opt.Largest
	if keep == 0 {
		keep = 10
	}
	// global pins what digest-less revisit lines refer to (they come
	// first); pins what the current digest's revisit lines do.
	var global, pins manifest.Pins
	pinned := func(uri, date string) bool { return pins.Has(uri, date) || global.Has(uri, date) }
	n := manifest.Numberer{Pinned: pinned}
	var class Class
	var origFile, digest string
	flush := func() {
		if class.Copies > 1 {
			st.largest.offer(class, keep)
		}
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		if l.Digest != digest {
			digest = l.Digest
			pins.Reset()
		}
		if l.Fields == 10 {
			if !l.IsRevisit() {
				return st, in.Errorf("already numbered (copy %d): warcsumproc reads warccollres's 7-field manifest", l.Copy)
			}
			if l.Digest == manifest.NoDigest {
				global.Add(&l)
			} else {
				pins.Add(&l)
			}
			st.Revisits++
			if err := out.Write(&l); err != nil {
				return st, err
			}
			continue
		}
		if !n.Number(&l) {
			st.Repeated++
			if opt.Warn != nil {
				opt.Warn(fmt.Errorf("line %d: %s offset %d is listed twice; listed once", in.LineNumber(), l.File, l.Offset))
			}
			continue
		}
		st.Records++
		st.Bytes += l.Length
		switch {
		case l.RefURI == "-" && (class.Digest != l.Digest || class.Ext != l.Class || class.Copies == 0):
			// The original of a new class.
			flush()
			st.UniquePayloads++
			class = Class{Digest: l.Digest, Ext: l.Class, URI: l.URI, Date: l.Date}
			origFile = l.File
		case l.Copy == 1:
			// A later capture kept as a response.
			st.Kept++
		default:
			st.Duplicates++
			st.DuplicateBytes += l.Length
			st.SavedEstimate += max(0, l.Length-RevisitOverhead)
			if deps != nil {
				deps.Add(l.File, origFile)
			}
		}
		if pinned(l.URI, l.Date) {
			st.Pinned++
		}
		class.Copies++
		class.Bytes += l.Length
		if opt.DupsOnly && l.Copy == 1 {
			continue
		}
		if err := out.Write(&l); err != nil {
			return st, err
		}
	}
	flush()
	st.finish()
	return st, nil
}

func (s *Stats) finish() {
	if s.Records > 0 {
		s.RateByCount = float64(s.Duplicates) / float64(s.Records)
	}
	if s.Bytes > 0 {
		s.RateByBytes = float64(s.DuplicateBytes) / float64(s.Bytes)
	}
	s.Largest = s.largest.sorted()
}

// classHeap keeps the largest classes seen, smallest on top.
type classHeap []Class

func (h classHeap) Len() int { return len(h) }
func (h classHeap) Less(i, j int) bool {
	if h[i].Copies != h[j].Copies {
		return h[i].Copies < h[j].Copies
	}
	return strings.Compare(h[i].Digest, h[j].Digest) > 0
}
func (h classHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *classHeap) Push(x any)   { *h = append(*h, x.(Class)) }
func (h *classHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *classHeap) offer(c Class, keep int) {
	if h.Len() < keep {
		heap.Push(h, c)
	} else if (*h)[0].Copies < c.Copies {
		(*h)[0] = c
		heap.Fix(h, 0)
	}
}

func (h classHeap) sorted() []Class {
	out := slices.Clone(h)
	slices.SortFunc(out, func(a, b Class) int {
		if a.Copies != b.Copies {
			return cmp.Compare(b.Copies, a.Copies)
		}
		return strings.Compare(a.Digest, b.Digest)
	})
	return out
}

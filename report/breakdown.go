package report

import (
	"container/heap"
	"sort"
	"strings"
)

// Breakdown groups records by a label (a MIME type, a host, a month), in
// memory up to a number of labels; records of further labels are counted
// under Other, so that a collection of millions of hosts keeps a bounded
// account. warcdedup run and assess --cdx fill theirs alike, so that their
// reports compare.
type Breakdown struct {
	limit   int
	buckets map[string]*Bucket
	other   Bucket
}

// NewBreakdown returns a Breakdown holding up to limit labels.
func NewBreakdown(limit int) *Breakdown {
	return &Breakdown{limit: limit, buckets: map[string]*Bucket{}}
}

// Add counts x under label. The label is copied when it is new, so it may
// point into a buffer the caller reuses.
func (b *Breakdown) Add(label string, x Bucket) {
	bk, ok := b.buckets[label]
	if !ok {
		if len(b.buckets) >= b.limit {
			b.other.Add(x)
			return
		}
		bk = &Bucket{Label: strings.Clone(label)}
		b.buckets[bk.Label] = bk
	}
	bk.Add(x)
}

// Top returns the n buckets with the most duplicate bytes (ties by label),
// then Other with the rest, if any.
func (b *Breakdown) Top(n int) []Bucket {
	all := b.sorted(func(x, y *Bucket) bool {
		if x.DuplicateBytes != y.DuplicateBytes {
			return x.DuplicateBytes > y.DuplicateBytes
		}
		return x.Label < y.Label
	})
	if len(all) <= n && b.other.Records == 0 {
		return all
	}
	out := all[:min(n, len(all))]
	other := b.other
	other.Label = Other
	for _, x := range all[min(n, len(all)):] {
		other.Add(x)
	}
	return append(out, other)
}

// Ordered returns the buckets in label order (months) when labels is nil,
// else those of the labels given, in their order (size classes).
func (b *Breakdown) Ordered(labels []string) []Bucket {
	if labels == nil {
		return b.sorted(func(x, y *Bucket) bool { return x.Label < y.Label })
	}
	var out []Bucket
	for _, l := range labels {
		if bk, ok := b.buckets[l]; ok {
			out = append(out, *bk)
		}
	}
	return out
}

func (b *Breakdown) sorted(less func(x, y *Bucket) bool) []Bucket {
	out := make([]Bucket, 0, len(b.buckets))
	for _, bk := range b.buckets {
		out = append(out, *bk)
	}
	sort.Slice(out, func(i, k int) bool { return less(&out[i], &out[k]) })
	return out
}

// HostOf is the host of a URI, lower case, without port or user; a URI
// without one is "(scheme)" or "(none)".
func HostOf(uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		if scheme, _, ok := strings.Cut(uri, ":"); ok {
			return "(" + strings.ToLower(scheme) + ")"
		}
		return "(none)"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		rest = rest[:i]
	}
	return strings.ToLower(rest)
}

// sizeClasses are the ranges of the size breakdown, by a record's stored
// length.
var sizeClasses = []struct {
	limit int64
	label string
}{{1e3, "< 1 kB"}, {1e4, "1-10 kB"}, {1e5, "10-100 kB"}, {1e6, "100 kB-1 MB"}, {1e7, "1-10 MB"}, {1e8, "10-100 MB"}, {1 << 62, ">= 100 MB"}}

// SizeClass is the label of the size range n bytes fall in.
func SizeClass(n int64) string {
	for _, c := range sizeClasses {
		if n < c.limit {
			return c.label
		}
	}
	return sizeClasses[len(sizeClasses)-1].label
}

// SizeLabels are the size ranges' labels, smallest first: the order of
// the size breakdown (Breakdown.Ordered).
func SizeLabels() []string {
	out := make([]string, len(sizeClasses))
	for i, c := range sizeClasses {
		out[i] = c.label
	}
	return out
}

// Largest keeps the classes with the most duplicate bytes, up to a number,
// whatever how many are offered.
type Largest struct {
	keep int
	h    classHeap
}

// NewLargest returns a Largest keeping keep classes.
func NewLargest(keep int) *Largest { return &Largest{keep: keep} }

// Offer keeps c if it is among the largest so far.
func (l *Largest) Offer(c Class) {
	if l.h.Len() == l.keep && l.h[0].DuplicateBytes >= c.DuplicateBytes {
		return
	}
	heap.Push(&l.h, c)
	if l.h.Len() > l.keep {
		heap.Pop(&l.h)
	}
}

// Classes returns the classes kept, the most duplicate bytes first (ties
// by digest).
func (l *Largest) Classes() []Class {
	out := append([]Class(nil), l.h...)
	sort.Slice(out, func(i, k int) bool {
		if out[i].DuplicateBytes != out[k].DuplicateBytes {
			return out[i].DuplicateBytes > out[k].DuplicateBytes
		}
		return out[i].Digest < out[k].Digest
	})
	return out
}

// classHeap is a min-heap on duplicate bytes: its root is the class to
// drop first.
type classHeap []Class

func (h classHeap) Len() int           { return len(h) }
func (h classHeap) Less(i, k int) bool { return h[i].DuplicateBytes < h[k].DuplicateBytes }
func (h classHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *classHeap) Push(x any)        { *h = append(*h, x.(Class)) }
func (h *classHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

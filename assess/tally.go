package assess

import (
	"container/heap"
	"sort"
	"strings"

	"warcdedup/report"
)

// The breakdowns of an index assessment follow those warcdedup run
// writes (dedup/account.go): the same groups, labels and limits, so that
// the two reports compare.

// tally groups records by a label, in memory up to a number of labels;
// records of further labels are counted under "other" (millions of hosts
// keep a bounded account).
type tally struct {
	limit   int
	buckets map[string]*report.Bucket
	other   report.Bucket
}

func newTally(limit int) *tally {
	return &tally{limit: limit, buckets: map[string]*report.Bucket{}}
}

func (t *tally) add(label string, x report.Bucket) {
	b, ok := t.buckets[label]
	if !ok {
		if len(t.buckets) >= t.limit {
			t.other.Add(x)
			return
		}
		b = &report.Bucket{Label: strings.Clone(label)}
		t.buckets[b.Label] = b
	}
	b.Add(x)
}

// top returns the n buckets with the most duplicate bytes, then "other".
func (t *tally) top(n int) []report.Bucket {
	all := t.sorted(func(x, y *report.Bucket) bool {
		if x.DuplicateBytes != y.DuplicateBytes {
			return x.DuplicateBytes > y.DuplicateBytes
		}
		return x.Label < y.Label
	})
	if len(all) <= n && t.other.Records == 0 {
		return all
	}
	out := all[:min(n, len(all))]
	other := t.other
	other.Label = report.Other
	for _, x := range all[min(n, len(all)):] {
		other.Add(x)
	}
	return append(out, other)
}

// ordered returns the buckets in label order (months), or in the order of
// the labels given (size classes).
func (t *tally) ordered(labels []string) []report.Bucket {
	if labels == nil {
		return t.sorted(func(x, y *report.Bucket) bool { return x.Label < y.Label })
	}
	var out []report.Bucket
	for _, l := range labels {
		if b, ok := t.buckets[l]; ok {
			out = append(out, *b)
		}
	}
	return out
}

func (t *tally) sorted(less func(x, y *report.Bucket) bool) []report.Bucket {
	out := make([]report.Bucket, 0, len(t.buckets))
	for _, b := range t.buckets {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, k int) bool { return less(&out[i], &out[k]) })
	return out
}

// hostOf is the host of a URI, lower case, without port or user.
func hostOf(uri string) string {
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

// monthOf is the YYYY-MM of a CDX timestamp (YYYYMMDDhhmmss).
func monthOf(ts string) string {
	if len(ts) >= 6 && allDigits(ts[:6]) {
		return ts[:4] + "-" + ts[4:6]
	}
	return "(unknown)"
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// sizeClasses are the size ranges of the size breakdown, by the record's
// stored length.
var sizeClasses = []struct {
	limit int64
	label string
}{{1e3, "< 1 kB"}, {1e4, "1-10 kB"}, {1e5, "10-100 kB"}, {1e6, "100 kB-1 MB"}, {1e7, "1-10 MB"}, {1e8, "10-100 MB"}, {1 << 62, ">= 100 MB"}}

func sizeClass(n int64) string {
	for _, c := range sizeClasses {
		if n < c.limit {
			return c.label
		}
	}
	return sizeClasses[len(sizeClasses)-1].label
}

func sizeLabels() []string {
	var out []string
	for _, c := range sizeClasses {
		out = append(out, c.label)
	}
	return out
}

// classHeap keeps the classes with the most duplicate bytes.
type classHeap []report.Class

func (h classHeap) Len() int           { return len(h) }
func (h classHeap) Less(i, k int) bool { return h[i].DuplicateBytes < h[k].DuplicateBytes }
func (h classHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *classHeap) Push(x any)        { *h = append(*h, x.(report.Class)) }
func (h *classHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// offer keeps c if it is among the keep largest so far.
func (h *classHeap) offer(c report.Class, keep int) {
	if h.Len() == keep && (*h)[0].DuplicateBytes >= c.DuplicateBytes {
		return
	}
	heap.Push(h, c)
	if h.Len() > keep {
		heap.Pop(h)
	}
}

// largestFirst returns the classes kept, the most duplicate bytes first.
func (h classHeap) largestFirst() []report.Class {
	out := []report.Class(h)
	sort.Slice(out, func(i, k int) bool {
		if out[i].DuplicateBytes != out[k].DuplicateBytes {
			return out[i].DuplicateBytes > out[k].DuplicateBytes
		}
		return out[i].Digest < out[k].Digest
	})
	return out
}

package cdxj

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Index holds a collection's CDXJ lines for pywb's lookups: the lines of
// each urlkey in CDXJ order.
type Index struct {
	byKey map[string][]*Line
	keyOf map[string]string // URL as written -> its urlkey
}

// NewIndex indexes lines (in any order; they are sorted by Sort's order
// within each urlkey). The Index points into lines.
func NewIndex(lines []Line) *Index {
	ix := &Index{byKey: map[string][]*Line{}, keyOf: map[string]string{}}
	for i := range lines {
		l := &lines[i]
		ix.byKey[l.URLKey] = append(ix.byKey[l.URLKey], l)
		if _, ok := ix.keyOf[l.URL]; !ok {
			ix.keyOf[l.URL] = l.URLKey
		}
	}
	for _, ls := range ix.byKey {
		slices.SortStableFunc(ls, func(a, b *Line) int { return strings.Compare(a.Raw, b.Raw) })
	}
	return ix
}

// Lookup is which of pywb's lookups found a revisit's payload.
type Lookup int

// The outcomes of ResolvePywb.
const (
	// SameURL: an earlier line of the revisit's urlkey with its digest
	// (pywb's cdx_resolve_revisits, the CDX stream's own resolution).
	SameURL Lookup = iota + 1
	// RefersTo: the non-revisit line with the revisit's digest at
	// WARC-Refers-To-Target-URI closest to WARC-Refers-To-Date.
	RefersTo
	// OwnEmptyPayload: the digest is that of the empty payload; pywb
	// serves the revisit's own (empty) payload and looks nothing up.
	OwnEmptyPayload
	// Redirect: a 3xx revisit; pywb serves its headers with an empty body
	// and looks nothing up.
	Redirect
)

func (k Lookup) String() string {
	switch k {
	case SameURL:
		return "same-URL earlier capture"
	case RefersTo:
		return "Refers-To lookup"
	case OwnEmptyPayload:
		return "own empty payload"
	case Redirect:
		return "redirect, no payload"
	}
	return fmt.Sprintf("Lookup(%d)", int(k))
}

// emptySHA1 is the base32 SHA-1 of the empty payload, which pywb never
// looks up.
const emptySHA1 = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"

// ResolvePywb finds the line whose record pywb 2.x serves the payload of
// for the revisit rev (a line of the index), given the WARC-Refers-To-
// Target-URI and WARC-Refers-To-Date of its record, which pywb reads from
// the record itself (pywb/warcserver/resource/resolvingloader.py,
// pywb/warcserver/index/cdxops.py):
//
//  1. in the CDX stream of the revisit's urlkey, the first non-revisit
//     line before it with the same digest (cdx_resolve_revisits);
//  2. otherwise, if the digest is the empty payload's, the revisit itself;
//     a 3xx revisit is served with an empty body;
//  3. otherwise the lines of Refers-To-Target-URI's urlkey, filtered to
//     non-revisits with the revisit's digest, closest in time to
//     Refers-To-Date (the revisit's own timestamp without one): the
//     first. Without Refers-To-Target-URI pywb fails.
//
// Digests are compared without their algorithm label. The urlkey of
// Refers-To-Target-URI is taken from a line with exactly that URL: this
// package computes no SURT, so an original that pywb would find only
// through URL canonicalisation is reported as not found.
func (ix *Index) ResolvePywb(rev *Line, refURI, refDate string) (*Line, Lookup, error) {
	if !rev.IsRevisit() {
		return nil, 0, fmt.Errorf("%s %s: not a revisit line", rev.URL, rev.Timestamp)
	}
	digest := NormDigest(rev.Digest)
	if digest != "" {
		var first *Line
		for _, l := range ix.byKey[rev.URLKey] {
			if l == rev {
				break
			}
			if first == nil && !l.IsRevisit() && NormDigest(l.Digest) == digest {
				first = l
			}
		}
		if first != nil {
			return first, SameURL, nil
		}
	}
	if strings.HasPrefix(rev.Status, "3") {
		return rev, Redirect, nil
	}
	if digest == emptySHA1 {
		return rev, OwnEmptyPayload, nil
	}
	if refURI == "" {
		return nil, 0, fmt.Errorf("%s %s: no WARC-Refers-To-Target-URI, and no earlier capture of the URL with digest %s", rev.URL, rev.Timestamp, rev.Digest)
	}
	target := rev.Timestamp
	if refDate != "" {
		target = Timestamp(refDate)
	}
	key, ok := ix.keyOf[refURI]
	if !ok {
		return nil, 0, fmt.Errorf("%s %s: no line has the URL %q of WARC-Refers-To-Target-URI", rev.URL, rev.Timestamp, refURI)
	}
	var best *Line
	var bestDist time.Duration
	for _, l := range ix.byKey[key] {
		if l.IsRevisit() || (digest != "" && NormDigest(l.Digest) != digest) {
			continue
		}
		d := distance(l.Timestamp, target)
		if best == nil || d < bestDist {
			best, bestDist = l, d
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%s %s: no non-revisit line with digest %s at %s", rev.URL, rev.Timestamp, rev.Digest, refURI)
	}
	return best, RefersTo, nil
}

// Timestamp turns a WARC date (2024-06-01T08:00:00Z, with or without a
// fraction) into the 14 digits of a CDX timestamp.
func Timestamp(date string) string {
	var b strings.Builder
	for _, c := range date {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
			if b.Len() == 14 {
				break
			}
		}
	}
	return b.String()
}

// distance is how far apart two CDX timestamps are, as pywb sorts
// "closest" (whole seconds); an unreadable one is far.
func distance(a, b string) time.Duration {
	ta, err1 := parseTS(a)
	tb, err2 := parseTS(b)
	if err1 != nil || err2 != nil {
		return time.Duration(1<<63 - 1)
	}
	d := ta.Sub(tb)
	if d < 0 {
		d = -d
	}
	return d
}

func parseTS(ts string) (time.Time, error) {
	const layout = "20060102150405"
	const pad = "19700101000000" // a short timestamp means its earliest second
	if len(ts) < len(layout) {
		ts += pad[len(ts):]
	}
	return time.Parse(layout, ts[:len(layout)])
}

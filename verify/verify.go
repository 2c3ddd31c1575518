// Package verify proves that nothing was lost between two manifests of the
// same collection, taken before and after a rewrite (or a conversion): the
// paper's step 6.
package verify

import (
	"fmt"
	"io"

	"warcdedup/manifest"
)

// Stats counts what a comparison found.
type Stats struct {
	Before     int64 // records in the before-manifest
	After      int64 // records in the after-manifest
	Themselves int64 // before-records present after as themselves
	Revisits   int64 // before-responses now revisits that resolve
	Violations int64
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "before: %d records; after: %d records\n", s.Before, s.After)
	fmt.Fprintf(w, "present as themselves: %d; now revisits that resolve to an original with the same digest: %d\n", s.Themselves, s.Revisits)
	fmt.Fprintf(w, "violations: %d\n", s.Violations)
}

type capture struct {
	date, digest string
}

type revisit struct {
	date, digest, refURI, refDate string
}

// index holds the after-manifest: responses and revisits by URI, and how
// many responses carry each digest. It costs memory per record (about the
// length of its line); split a very large collection per host or crawl
// with warcsumsplit and compare the parts.
type index struct {
	responses map[string][]capture
	revisits  map[string][]revisit
	byDigest  map[string]int
}

func readAfter(after *manifest.Reader, st *Stats) (*index, error) {
	after.RequireFields(6, 7, 10)
	ix := &index{responses: map[string][]capture{}, revisits: map[string][]revisit{}, byDigest: map[string]int{}}
	for {
		l, err := after.Next()
		if err == io.EOF {
			return ix, nil
		}
		if err != nil {
			return nil, err
		}
		st.After++
		if isRevisit(&l) {
			ix.revisits[l.URI] = append(ix.revisits[l.URI], revisit{l.Date, l.Digest, l.RefURI, l.RefDate})
			continue
		}
		ix.responses[l.URI] = append(ix.responses[l.URI], capture{l.Date, l.Digest})
		ix.byDigest[l.Digest]++
	}
}

// isRevisit tells a revisit line (warcsum --revisits) from a response line.
func isRevisit(l *manifest.Line) bool { return l.Fields == 10 && l.Copy > 1 }

// hasResponse reports whether a response at uri and date (any date for
// "*") carries digest.
func (ix *index) hasResponse(uri, date, digest string) bool {
	for _, c := range ix.responses[uri] {
		if (date == "*" || c.date == date) && c.digest == digest {
			return true
		}
	}
	return false
}

// sameAlgorithm reports whether two digest fields use the same algorithm,
// so that their values can be compared.
func sameAlgorithm(a, b string) bool {
	la, _, _ := cut(a)
	lb, _, _ := cut(b)
	return la == lb
}

func cut(d string) (string, string, bool) {
	for i := 0; i < len(d); i++ {
		if d[i] == ':' {
			return d[:i], d[i+1:], true
		}
	}
	return d, "", false
}

// Rewrite compares the manifests of a collection before and after
// deduplication (both written by warcsum --revisits) and reports through
// violation every record that was lost: each before-record must be present
// after with the same URI, date and digest, either as itself or as a
// revisit whose Refers-To URI and date name a response present after with
// the same digest; and each digest (each ext class, when the before-manifest
// has exts) must keep at least as many responses as it had classes.
func Rewrite(before, after *manifest.Reader, violation func(string)) (Stats, error) {
	var st Stats
	ix, err := readAfter(after, &st)
	if err != nil {
		return st, err
	}
	report := func(format string, args ...any) {
		st.Violations++
		violation(fmt.Sprintf(format, args...))
	}
	before.RequireFields(6, 7, 10)
	classes := map[string]map[int]bool{}
	for {
		l, err := before.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		st.Before++
		if isRevisit(&l) {
			// A revisit before must still be there, unchanged in meaning.
			found := false
			for _, r := range ix.revisits[l.URI] {
				if r.date == l.Date && r.digest == l.Digest && r.refURI == l.RefURI && r.refDate == l.RefDate {
					found = true
					break
				}
			}
			if found {
				st.Themselves++
			} else {
				report("%s %s: a revisit before (refers to %s %s) is missing after", l.URI, l.Date, l.RefURI, l.RefDate)
			}
			continue
		}
		if classes[l.Digest] == nil {
			classes[l.Digest] = map[int]bool{}
		}
		classes[l.Digest][l.Ext] = true
		if ix.hasResponse(l.URI, l.Date, l.Digest) {
			st.Themselves++
			continue
		}
		resolved, tried := false, false
		for _, r := range ix.revisits[l.URI] {
			if r.date != l.Date {
				continue
			}
			tried = true
			if sameAlgorithm(r.digest, l.Digest) && r.digest != l.Digest {
				continue
			}
			if ix.hasResponse(r.refURI, r.refDate, l.Digest) {
				resolved = true
				break
			}
		}
		switch {
		case resolved:
			st.Revisits++
		case tried:
			report("%s %s (%s, was %s offset %d): its revisit refers to no response with digest %s", l.URI, l.Date, l.Digest, l.File, l.Offset, l.Digest)
		default:
			report("%s %s (%s, was %s offset %d): missing after, neither as itself nor as a revisit", l.URI, l.Date, l.Digest, l.File, l.Offset)
		}
	}
	for d, exts := range classes {
		if ix.byDigest[d] < len(exts) {
			report("digest %s: %d payload classes before, %d responses after: a payload was lost", d, len(exts), ix.byDigest[d])
		}
	}
	return st, nil
}

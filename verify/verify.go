// Package verify proves that nothing was lost between two manifests of the
// same collection, taken before and after a rewrite (or a conversion): the
// paper's step 6.
package verify

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

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

// key names a capture: its URI and date, as both manifests write them.
type key struct{ uri, date string }

// response is a response line of the after-manifest.
type response struct {
	digest string
	// kept is set when a before-response is present after as this very
	// record (each after-record stands for one before-record at most);
	// ext is then that before-record's payload class.
	kept bool
	ext  int
}

// revisit is a revisit line of the after-manifest.
type revisit struct {
	digest, refURI, refDate string
	used                    bool // stands for a before-record already
}

// index holds the after-manifest: responses and revisits by URI and date.
// It costs memory per record (about the length of its line); split a very
// large collection per host or crawl with warcsumsplit and compare the
// parts.
type index struct {
	responses map[key][]*response
	revisits  map[key][]*revisit
	// For Refers-To without a date ("*"), built when first needed.
	byURI       map[string][]*response
	revisitURIs map[string]bool
	// external are responses outside the collection that revisits may
	// refer to (the committed originals of a crawl index): their digests
	// by URI and date, and by URI.
	external        map[key][]string
	externalByURI   map[string][]string
	externalDigests map[string]bool
}

func readAfter(after *manifest.Reader, st *Stats) (*index, error) {
	after.RequireFields(6, 7, 10)
	ix := &index{responses: map[key][]*response{}, revisits: map[key][]*revisit{}}
	for {
		l, err := after.Next()
		if err == io.EOF {
			return ix, nil
		}
		if err != nil {
			return nil, err
		}
		st.After++
		k := key{l.URI, l.Date}
		if isRevisit(&l) {
			ix.revisits[k] = append(ix.revisits[k], &revisit{digest: l.Digest, refURI: l.RefURI, refDate: l.RefDate})
			continue
		}
		ix.responses[k] = append(ix.responses[k], &response{digest: l.Digest})
	}
}

// isRevisit tells a revisit line (ext -1) from a response line.
func isRevisit(l *manifest.Line) bool { return l.IsRevisit() }

// targets returns the responses a Refers-To URI and date name: any date
// of the URI for "*".
func (ix *index) targets(uri, date string) []*response {
	if date != "*" {
		return ix.responses[key{uri, date}]
	}
	if ix.byURI == nil {
		ix.byURI = map[string][]*response{}
		for k, rs := range ix.responses {
			ix.byURI[k.uri] = append(ix.byURI[k.uri], rs...)
		}
	}
	return ix.byURI[uri]
}

// algorithm returns the label of a digest field.
func algorithm(d string) string {
	label, _, _ := strings.Cut(d, ":")
	return label
}

// sameAlgorithm reports whether two digest fields use the same algorithm,
// so that their values can be compared.
func sameAlgorithm(a, b string) bool { return algorithm(a) == algorithm(b) }

// mayEqual reports whether two digest fields may name the same payload:
// they are equal, or in different algorithms and so cannot be compared.
func mayEqual(a, b string) bool { return a == b || !sameAlgorithm(a, b) }

// class is one payload class of the before-manifest: the responses of one
// digest and ext.
type class struct {
	digest  string
	ext     int
	records int
	first   manifest.Line // the earliest capture (date, file, offset): the original
	kept    bool          // a record of the class is present after as itself
}

// Rewrite compares the manifests of a collection before and after
// deduplication (both written by warcsum, with its revisit lines; lines in any order) and
// reports through violation every record that was lost. Each after-record
// stands for one before-record at most, and:
//
//   - each before-response is present after with the same URI, date and
//     digest, either as itself or as a revisit whose own digest is the same
//     (or in another algorithm) and whose Refers-To URI and date ("*": any
//     date) name a response after with the same digest that was a
//     before-response of the same payload class (digest and ext) kept as
//     itself;
//   - each before-revisit is present after unchanged, and if it named a
//     before-response, it still names a response after;
//   - each payload class (digest and ext, when the before-manifest has
//     field 7) keeps at least one of its records as a response.
//
// Besides the after-manifest, the before-responses that became revisits are
// held in memory until the end.
func Rewrite(before, after *manifest.Reader, violation func(string)) (Stats, error) {
	return RewriteAgainst(before, after, nil, violation)
}

// RewriteAgainst is Rewrite for a collection deduplicated against records
// outside it (the committed crawls of a crawl index): a revisit may also
// refer to a response of external (a manifest, nil for none) with its
// digest. Those records are taken to exist as the manifest says; that the
// index's crawls are unchanged is checked apart (warcdedup index verify).
func RewriteAgainst(before, after, external *manifest.Reader, violation func(string)) (Stats, error) {
	var st Stats
	ix, err := readAfter(after, &st)
	if err != nil {
		return st, err
	}
	if external != nil {
		if err := ix.readExternal(external); err != nil {
			return st, err
		}
	}
	report := func(format string, args ...any) {
		st.Violations++
		violation(fmt.Sprintf(format, args...))
	}
	before.RequireFields(6, 7, 10)
	type classKey struct {
		digest string
		ext    int
	}
	classes := map[classKey]*class{}
	// The before-responses not present after as themselves must be there
	// as revisits. They are resolved once the whole before-manifest has
	// been read, so that before-revisits, which must be found unchanged,
	// claim their after-lines first whatever the order of lines.
	var pending []manifest.Line
	// The before-revisits found unchanged after.
	var revisitsBefore []manifest.Line
	for {
		l, err := before.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		st.Before++
		k := key{l.URI, l.Date}
		if isRevisit(&l) {
			// A revisit before must still be there, unchanged in meaning.
			found := false
			for _, r := range ix.revisits[k] {
				if !r.used && r.digest == l.Digest && r.refURI == l.RefURI && r.refDate == l.RefDate {
					r.used, found = true, true
					break
				}
			}
			if found {
				st.Themselves++
				revisitsBefore = append(revisitsBefore, l)
			} else {
				report("%s %s (revisit %s, was %s offset %d): a revisit before (refers to %s %s) is missing after",
					l.URI, l.Date, l.Digest, l.File, l.Offset, l.RefURI, l.RefDate)
			}
			continue
		}
		ck := classKey{l.Digest, l.Ext}
		c := classes[ck]
		if c == nil {
			c = &class{digest: l.Digest, ext: l.Ext, first: l}
			classes[ck] = c
		} else if earlier(&l, &c.first) {
			c.first = l
		}
		c.records++
		if r := unkept(ix.responses[k], l.Digest); r != nil {
			r.kept, r.ext = true, l.Ext
			c.kept = true
			st.Themselves++
			continue
		}
		pending = append(pending, l)
	}

	// How many classes each digest had, and how many responses after that
	// stand for no before-record (their class is unknown).
	classesOf := map[string]int{}
	for ck := range classes {
		classesOf[ck.digest]++
	}
	unclaimed := map[string]int{}
	for _, rs := range ix.responses {
		for _, r := range rs {
			if !r.kept {
				unclaimed[r.digest]++
			}
		}
	}

	// The before-responses that are not present as themselves must be
	// revisits that resolve to a kept original of their class.
	for i := range pending {
		l := &pending[i]
		candidates := ix.revisits[key{l.URI, l.Date}]
		var chosen *revisit
		why := ""
		// Prefer a revisit with the very digest over one in another
		// algorithm, so that the latter stays for a record it alone fits.
		for _, exact := range []bool{true, false} {
			for _, r := range candidates {
				if r.used || (r.digest == l.Digest) != exact {
					continue
				}
				if reason := ix.resolve(r, l, classesOf[l.Digest]); reason != "" {
					if why == "" {
						why = reason
					}
					continue
				}
				chosen = r
				break
			}
			if chosen != nil {
				break
			}
		}
		switch {
		case chosen != nil:
			chosen.used = true
			st.Revisits++
		case why != "":
			report("%s %s (%s, was %s offset %d): %s", l.URI, l.Date, l.Digest, l.File, l.Offset, why)
		default:
			report("%s %s (%s, was %s offset %d): missing after, neither as itself nor as a revisit", l.URI, l.Date, l.Digest, l.File, l.Offset)
		}
	}

	// A before-revisit that named a before-response must still name a
	// response: the rewrite must not have turned its original into a
	// revisit (a chain that replay does not follow) or removed it.
	pendingAt := map[key][]*manifest.Line{}
	pendingByURI := map[string][]*manifest.Line{}
	for i := range pending {
		l := &pending[i]
		pendingAt[key{l.URI, l.Date}] = append(pendingAt[key{l.URI, l.Date}], l)
		pendingByURI[l.URI] = append(pendingByURI[l.URI], l)
	}
	for i := range revisitsBefore {
		v := &revisitsBefore[i]
		isResponse := false
		for _, r := range ix.targets(v.RefURI, v.RefDate) {
			isResponse = isResponse || mayEqual(r.digest, v.Digest)
		}
		// A before-response at the target is either present as itself
		// (then isResponse) or pending.
		wasResponse := false
		gone := pendingAt[key{v.RefURI, v.RefDate}]
		if v.RefDate == "*" {
			gone = pendingByURI[v.RefURI]
		}
		for _, p := range gone {
			wasResponse = wasResponse || mayEqual(p.Digest, v.Digest)
		}
		if wasResponse && !isResponse {
			report("%s %s (revisit %s, was %s offset %d): refers to %s %s, a response before that is no longer one after",
				v.URI, v.Date, v.Digest, v.File, v.Offset, v.RefURI, v.RefDate)
		}
	}

	// Every payload class keeps a response.
	lost := []*class{}
	for _, c := range classes {
		if !c.kept && (classesOf[c.digest] > 1 || unclaimed[c.digest] == 0) && !ix.externalDigests[c.digest] {
			lost = append(lost, c)
		}
	}
	slices.SortFunc(lost, func(a, b *class) int { return cmp.Or(strings.Compare(a.digest, b.digest), cmp.Compare(a.ext, b.ext)) })
	for _, c := range lost {
		name := "digest " + c.digest
		if classesOf[c.digest] > 1 {
			name += fmt.Sprintf(" ext %d (one of %d payload classes of the digest)", c.ext, classesOf[c.digest])
		}
		report("%s %s (%s, was %s offset %d): %s: none of its %d records before is a response after: the payload is lost",
			c.first.URI, c.first.Date, c.digest, c.first.File, c.first.Offset, name, c.records)
	}
	return st, nil
}

// unkept returns a response of rs with digest d that stands for no
// before-record yet, or nil.
func unkept(rs []*response, d string) *response {
	for _, r := range rs {
		if !r.kept && r.digest == d {
			return r
		}
	}
	return nil
}

// earlier reports whether a sorts before b as the spec chooses originals:
// by date, then file, then offset.
func earlier(a, b *manifest.Line) bool {
	return cmp.Or(strings.Compare(a.Date, b.Date), strings.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset)) < 0
}

// resolve tells why revisit r after does not stand for before-response l,
// or "" if it does. classes is how many payload classes l's digest had
// before.
func (ix *index) resolve(r *revisit, l *manifest.Line, classes int) string {
	if !mayEqual(r.digest, l.Digest) {
		return fmt.Sprintf("now a revisit with another digest, %s", r.digest)
	}
	targets := ix.targets(r.refURI, r.refDate)
	otherDigest, otherClass, notBefore := "", -1, false
	for _, t := range targets {
		switch {
		case t.digest != l.Digest:
			otherDigest = t.digest
		case t.kept && t.ext == l.Ext:
			return ""
		case t.kept:
			otherClass = t.ext
		case classes == 1:
			// A response that stands for no before-record: its payload
			// is there, and the digest had one class only.
			return ""
		default:
			notBefore = true
		}
	}
	ref := r.refURI + " " + r.refDate
	if ix.externalHas(r.refURI, r.refDate, l.Digest) {
		return ""
	}
	switch {
	case otherClass >= 0:
		return fmt.Sprintf("its revisit refers to %s, a response of another payload class of the digest (ext %d, not %d)", ref, otherClass, l.Ext)
	case notBefore:
		return fmt.Sprintf("its revisit refers to %s, a response of no known payload class (not in the before-manifest)", ref)
	case otherDigest != "":
		return fmt.Sprintf("its revisit refers to %s, a response with another digest, %s", ref, otherDigest)
	case ix.isRevisitAt(r.refURI, r.refDate):
		return fmt.Sprintf("its revisit refers to %s, a revisit, not a response", ref)
	}
	return fmt.Sprintf("its revisit refers to %s, which names no record after", ref)
}

// readExternal reads the responses outside the collection.
func (ix *index) readExternal(r *manifest.Reader) error {
	ix.external, ix.externalByURI, ix.externalDigests = map[key][]string{}, map[string][]string{}, map[string]bool{}
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if isRevisit(&l) {
			continue
		}
		k := key{l.URI, l.Date}
		ix.external[k] = append(ix.external[k], l.Digest)
		ix.externalByURI[l.URI] = append(ix.externalByURI[l.URI], l.Digest)
		ix.externalDigests[l.Digest] = true
	}
}

// externalHas reports whether a response outside the collection with the
// URI and date ("*": any date) has the digest.
func (ix *index) externalHas(uri, date, digest string) bool {
	ds := ix.external[key{uri, date}]
	if date == "*" {
		ds = ix.externalByURI[uri]
	}
	return slices.Contains(ds, digest)
}

// isRevisitAt reports whether a revisit after has the URI and date ("*":
// any date).
func (ix *index) isRevisitAt(uri, date string) bool {
	if date != "*" {
		return len(ix.revisits[key{uri, date}]) > 0
	}
	if ix.revisitURIs == nil {
		ix.revisitURIs = map[string]bool{}
		for k := range ix.revisits {
			ix.revisitURIs[k.uri] = true
		}
	}
	return ix.revisitURIs[uri]
}

// Package verify proves that nothing was lost between two manifests of the
// same collection, taken before and after a rewrite (or a conversion): the
// paper's step 6.
//
// The comparison of a rewrite (Rewrite) holds no manifest in memory: it
// writes what each check needs of the lines to temporary files, sorts
// them with the system sort on the key of that check, and reads the
// sorted files side by side (merge joins). Its memory is bounded whatever
// the number of records; what it holds at a time is the records of one
// capture (URI and date), the payload classes of one digest, and the
// digest algorithms seen at one Refers-To target.
package verify

import (
	"context"
	"fmt"
	"io"
	"strings"

	"warcdedup/internal/syssort"
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

// Options are how a comparison of a rewrite sorts: the system sort's
// buffer and the directory of its temporary files, which hold about three
// times the two manifests at the most.
type Options struct {
	Sort syssort.Sorter
}

// Rewrite compares the manifests of a collection before and after
// deduplication (both written by warcsum, with its revisit lines; lines
// in any order) and reports through violation every record that was lost.
// Each after-record stands for one before-record at most, and:
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
// Where several after-records could stand for a before-record, the
// before-records are served in the order of their lines, and each takes
// the first that fits in the order of their fields (digest, Refers-To URI
// and date), a revisit with the very digest before one in another
// algorithm. Violations are reported in the order of the before-lines
// they concern: missing before-revisits, then before-responses that are
// not found, then before-revisits whose original is gone, then payload
// classes left without a response (by digest and ext).
//
// Its temporary files go to the system's temporary directory; see
// Options.RewriteAgainst.
func Rewrite(before, after *manifest.Reader, violation func(string)) (Stats, error) {
	return RewriteAgainst(before, after, nil, violation)
}

// RewriteAgainst is Rewrite for a collection deduplicated against records
// outside it (the committed crawls of a crawl index): a revisit may also
// refer to a response of external (a manifest, nil for none) with its
// digest. Those records are taken to exist as the manifest says; that the
// index's crawls are unchanged is checked apart (warcdedup index verify).
func RewriteAgainst(before, after, external *manifest.Reader, violation func(string)) (Stats, error) {
	return Options{}.RewriteAgainst(context.Background(), before, after, external, violation)
}

// RewriteAgainst is the package's RewriteAgainst with o's sorts, stopped
// when ctx is done.
func (o Options) RewriteAgainst(ctx context.Context, before, after, external *manifest.Reader, violation func(string)) (Stats, error) {
	c := &comparison{ctx: ctx, sort: o.Sort, violation: violation}
	defer c.remove()
	err := c.run(before, after, external)
	return c.st, err
}

// comparison is one comparison of a rewrite: its passes, each a merge
// join over a sorted file that the passes before it wrote.
type comparison struct {
	ctx       context.Context
	sort      syssort.Sorter
	violation func(string)
	st        Stats
	afterName string // the after-manifest's name, for its errors

	// both manifests' lines, for the join by capture: the after-manifest's
	// and the before-manifest's, read at the same time
	captures, capturesBefore *syssort.File
	digests                  *syssort.File // class facts and pairs, for the join by digest
	refs                     *syssort.File // after-responses, after-revisits, external records
	pending                  *syssort.File // the before-responses not present as themselves
	queries                  *syssort.File // what is asked of a Refers-To target
	choices                  *syssort.File // each candidate revisit of a before-response, judged
	violations               *syssort.File // numbered, to be reported in order

	// star is set when a Refers-To date is "*": the targets are then
	// also written under that date, to be found by URI alone.
	star bool
	// chains is set when a before-revisit found unchanged asks whether
	// its target is still a response.
	chains bool
	lost   int64 // classes reported lost so far, their order
}

func (c *comparison) run(before, after, external *manifest.Reader) error {
	files := []**syssort.File{&c.captures, &c.capturesBefore, &c.digests, &c.refs, &c.pending, &c.queries, &c.choices, &c.violations}
	names := []string{"verify-captures", "verify-captures-before", "verify-digests", "verify-refs", "verify-pending", "verify-queries", "verify-choices", "verify-violations"}
	for i, f := range files {
		var err error
		if *f, err = c.sort.Create(names[i]); err != nil {
			return err
		}
	}
	// Each pass but the first reads files the passes after it do not:
	// they are removed once it is done, so that what the comparison
	// holds in memory (or on disk) is what is still to be read.
	for _, pass := range []struct {
		run  func() error
		read []*syssort.File
	}{
		{func() error { return c.read(before, after, external) }, nil},
		{c.joinCaptures, []*syssort.File{c.captures, c.capturesBefore}},
		{c.joinClasses, []*syssort.File{c.digests}},
		{c.joinTargets, []*syssort.File{c.queries, c.refs, c.pending}},
		{c.choose, []*syssort.File{c.choices}},
		{c.report, []*syssort.File{c.violations}},
	} {
		if err := pass.run(); err != nil {
			return err
		}
		for _, f := range pass.read {
			f.Remove()
		}
		if err := c.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (c *comparison) remove() {
	for _, f := range []*syssort.File{c.captures, c.capturesBefore, c.digests, c.refs, c.pending, c.queries, c.choices, c.violations} {
		f.Remove()
	}
}

// violate notes a violation, reported in the order of phase and seq.
func (c *comparison) violate(phase byte, seq int64, format string, args ...any) error {
	var b []byte
	b = append(b, phase, ' ')
	b = syssort.Num(b, seq)
	b = append(b, ' ')
	b = fmt.Appendf(b, format, args...)
	return c.violations.Line(b)
}

// The phases of violations, in the order they are reported.
const (
	phaseRevisitMissing = '1' // a before-revisit not found unchanged
	phaseResponse       = '2' // a before-response found neither as itself nor as a revisit that resolves
	phaseChain          = '3' // a before-revisit whose target is no longer a response
	phaseLost           = '4' // a payload class left without a response
)

// report reports the violations in order.
func (c *comparison) report() error {
	in, err := c.sort.Sorted(c.ctx, c.violations)
	if err != nil {
		return err
	}
	defer in.Close()
	var f [3][]byte
	for in.Next() {
		if !syssort.Fields(in.Bytes(), f[:]) {
			return fmt.Errorf("verify: bad violation line %q", in.Bytes())
		}
		c.st.Violations++
		c.violation(string(f[2]))
	}
	if err := in.Err(); err != nil {
		return err
	}
	return in.Close()
}

// algorithm returns the label of a digest field.
func algorithm(d string) string {
	label, _, _ := strings.Cut(d, ":")
	return label
}

// sameAlgorithm reports whether two digest fields use the same algorithm,
// so that their values can be compared.
func sameAlgorithm(a, b string) bool { return algorithm(a) == algorithm(b) }

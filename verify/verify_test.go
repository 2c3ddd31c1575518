package verify_test

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/verify"
)

// sha and md returns the manifest digest of a made-up payload.
func sha(payload string) string {
	s := sha1.Sum([]byte(payload))
	return digest.SHA1.Format(s[:])
}

func md(payload string) string {
	s := md5.Sum([]byte(payload))
	return digest.MD5.Format(s[:])
}

// resp is a response line as warcsum writes it (6 fields), resp7 one with
// the ext of warccollres (7 fields), rev a revisit line of warcsum
// --revisits (10 fields: ext 0, copy 2, Refers-To URI and date).
func resp(file string, off int, uri, date, dig string) string {
	return fmt.Sprintf("%s %d 100 %s %s %s", file, off, uri, date, dig)
}

func resp7(file string, off int, uri, date, dig string, ext int) string {
	return fmt.Sprintf("%s %d 100 %s %s %s %d", file, off, uri, date, dig, ext)
}

func rev(file string, off int, uri, date, dig, refURI, refDate string) string {
	return fmt.Sprintf("%s %d 40 %s %s %s -1 0 %s %s", file, off, uri, date, dig, refURI, refDate)
}

func text(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// compare runs Rewrite on two manifests given as lines.
func compare(before, after []string) (verify.Stats, []string, error) {
	var violations []string
	st, err := verify.Rewrite(
		manifest.NewReader(strings.NewReader(text(before)), "before.manifest"),
		manifest.NewReader(strings.NewReader(text(after)), "after.manifest"),
		func(v string) { violations = append(violations, v) })
	return st, violations, err
}

const (
	uA = "http://example.com/a"
	uB = "http://example.com/b"
	uC = "http://example.org/c"
	t1 = "2012-04-08T20:13:38Z"
	t2 = "2012-05-08T20:13:41Z"
	t3 = "2012-06-08T09:00:00Z"
	t4 = "2012-07-08T09:00:00Z"
)

var (
	dX = sha("payload X")
	dY = sha("payload Y")
	dZ = sha("payload Z")
)

// TestRewriteAccepts proves that correct rewrites give no violation, and
// that every before-record is counted as present as itself or as a revisit
// that resolves.
func TestRewriteAccepts(t *testing.T) {
	tests := []struct {
		name                 string
		before, after        []string
		themselves, revisits int64
	}{
		{
			name:       "identical manifests",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dY), rev("b.warc.gz", 0, uA, t3, dX, uA, t1)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dY), rev("b.warc.gz", 0, uA, t3, dX, uA, t1)},
			themselves: 3,
		},
		{
			name:       "response now a revisit of the same URI, original in another file",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uA, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 900, uA, t2, dX, uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			name:       "response now a revisit of another URI in another file",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uB, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 120, uB, t2, dX, uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			name:       "revisit without WARC-Refers-To-Date (*) resolves to any date of the URI",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uB, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 120, uB, t2, dX, uA, "*")},
			themselves: 1, revisits: 1,
		},
		{
			name:       "revisit without WARC-Refers-To-Target-URI (its own URI) resolves",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 700, uA, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("a.warc.gz", 700, uA, t2, dX, uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			name: "before-revisits unchanged after",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 0, uB, t2, dX, uA, t1),
				rev("b.warc.gz", 300, uC, t3, md("payload X"), uA, "*")},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 0, uB, t2, dX, uA, t1),
				rev("b.warc.gz", 300, uC, t3, md("payload X"), uA, "*")},
			themselves: 3,
		},
		{
			name:       "before-revisit whose original was never in the collection stays as it was",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 0, uB, t2, dY, "http://gone/", t1)},
			after:      []string{rev("b.warc.gz", 0, uB, t2, dY, "http://gone/", t1), resp("a.warc.gz", 0, uA, t1, dX)},
			themselves: 2,
		},
		{
			name: "line order differs between the manifests",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dY),
				resp("b.warc.gz", 0, uC, t3, dX), resp("b.warc.gz", 400, uB, t4, dY), rev("c.warc.gz", 0, uC, t4, dY, uB, t2)},
			after: []string{rev("c.warc.gz", 0, uC, t4, dY, uB, t2), rev("b.warc.gz", 200, uB, t4, dY, uB, t2),
				rev("b.warc.gz", 0, uC, t3, dX, uA, t1), resp("a.warc.gz", 500, uB, t2, dY), resp("a.warc.gz", 0, uA, t1, dX)},
			themselves: 3, revisits: 2,
		},
		{
			name: "ext 0 and ext 1 of one digest each keep a response (7-field before)",
			before: []string{resp7("a.warc.gz", 0, uA, t1, dX, 0), resp7("a.warc.gz", 500, uB, t2, dX, 1),
				resp7("b.warc.gz", 0, uA, t3, dX, 0), resp7("b.warc.gz", 500, uB, t4, dX, 1)},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dX),
				rev("b.warc.gz", 0, uA, t3, dX, uA, t1), rev("b.warc.gz", 300, uB, t4, dX, uB, t2)},
			themselves: 2, revisits: 2,
		},
		{
			name:       "revisit's own digest in md5, its Refers-To target has the sha1 of before",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uB, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 900, uB, t2, md("payload X"), uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			name:       "the same capture in two files: one kept, the other a revisit of it",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("copy.warc.gz", 0, uA, t1, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("copy.warc.gz", 0, uA, t1, dX, uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			// The before-revisit must claim its unchanged line even when the
			// response at the same URI and date is read first and that line
			// would also resolve for it.
			name: "before-revisit and a rewritten response at the same URI and date",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 0, uB, t2, dX),
				rev("c.warc.gz", 0, uB, t2, dX, uA, t1)},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 0, uB, t2, dX, uA, "*"),
				rev("c.warc.gz", 0, uB, t2, dX, uA, t1)},
			themselves: 2, revisits: 1,
		},
		{
			// Two captures at one URI and date with other payloads; the md5
			// revisit fits either, the sha1 one only the first: each must
			// get the one that fits it, whatever order they come in.
			name: "a revisit in another algorithm is left for the record it alone fits",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uA, t3, dY),
				resp("b.warc.gz", 0, uB, t2, dX), resp("b.warc.gz", 500, uB, t2, dY)},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uA, t3, dY),
				rev("b.warc.gz", 0, uB, t2, md("either"), uA, "*"), rev("b.warc.gz", 100, uB, t2, dX, uA, t1)},
			themselves: 2, revisits: 2,
		},
		{
			name:       "revisit of a response that was not in the before-manifest, one payload class",
			before:     []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 0, uB, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), resp("new.warc.gz", 0, uC, t4, dX), rev("b.warc.gz", 0, uB, t2, dX, uC, t4)},
			themselves: 1, revisits: 1,
		},
		{
			name:       "10-field lines with copy 1 are responses",
			before:     []string{"a.warc.gz 0 100 " + uA + " " + t1 + " " + dX + " 0 1 - -", resp("b.warc.gz", 0, uB, t2, dX)},
			after:      []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 0, uB, t2, dX, uA, t1)},
			themselves: 1, revisits: 1,
		},
		{
			name:       "empty manifests",
			themselves: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, violations, err := compare(tt.before, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if len(violations) != 0 || st.Violations != 0 {
				t.Fatalf("%d violations, want none:\n%s", st.Violations, strings.Join(violations, "\n"))
			}
			if st.Before != int64(len(tt.before)) || st.After != int64(len(tt.after)) {
				t.Errorf("Before, After = %d, %d; want %d, %d", st.Before, st.After, len(tt.before), len(tt.after))
			}
			if st.Themselves != tt.themselves || st.Revisits != tt.revisits {
				t.Errorf("Themselves, Revisits = %d, %d; want %d, %d", st.Themselves, st.Revisits, tt.themselves, tt.revisits)
			}
		})
	}
}

// TestRewriteReports proves that each way of losing a record is reported,
// once per lost record (and once more per payload class left with no
// response), each message naming the URI, the date and where the record
// was before.
func TestRewriteReports(t *testing.T) {
	orig := resp("a.warc.gz", 0, uA, t1, dX) // kept in every case below but where it is lost
	tests := []struct {
		name          string
		before, after []string
		// want holds, for each violation in order, strings its message
		// must contain.
		want [][]string
	}{
		{
			name:   "response missing after",
			before: []string{orig, resp("b.warc.gz", 900, uB, t2, dY)},
			after:  []string{orig},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", "missing after"}, {uB, t2, "b.warc.gz offset 900", dY, "payload is lost"}},
		},
		{
			name:   "duplicate missing after, neither as itself nor as a revisit",
			before: []string{orig, resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{orig},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", "missing after"}},
		},
		{
			name:   "revisit whose Refers-To names no record",
			before: []string{orig, resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{orig, rev("b.warc.gz", 100, uB, t2, dX, uC, t1)},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", uC + " " + t1, "names no record"}},
		},
		{
			name:   "revisit whose Refers-To names the right URI at another date",
			before: []string{orig, resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{orig, rev("b.warc.gz", 100, uB, t2, dX, uA, t3)},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", uA + " " + t3, "names no record"}},
		},
		{
			name:   "revisit whose Refers-To target has another digest",
			before: []string{orig, resp("a.warc.gz", 500, uC, t3, dY), resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{orig, resp("a.warc.gz", 500, uC, t3, dY), rev("b.warc.gz", 100, uB, t2, dX, uC, t3)},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", uC + " " + t3, "another digest", dY}},
		},
		{
			name:   "revisit whose own digest (same algorithm) differs",
			before: []string{orig, resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{orig, rev("b.warc.gz", 100, uB, t2, dZ, uA, t1)},
			want:   [][]string{{uB, t2, "b.warc.gz offset 900", "another digest", dZ}},
		},
		{
			name:   "revisit that points at another revisit",
			before: []string{orig, resp("b.warc.gz", 0, uB, t2, dX), resp("b.warc.gz", 900, uC, t3, dX)},
			after:  []string{orig, rev("b.warc.gz", 0, uB, t2, dX, uA, t1), rev("b.warc.gz", 100, uC, t3, dX, uB, t2)},
			want:   [][]string{{uC, t3, "b.warc.gz offset 900", uB + " " + t2, "a revisit, not a response"}},
		},
		{
			name:   "before-revisit missing after",
			before: []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, t1)},
			after:  []string{orig},
			want:   [][]string{{uB, t2, "c.warc.gz offset 300", "revisit before", "missing after"}},
		},
		{
			name:   "before-revisit changed after (other Refers-To)",
			before: []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, t1)},
			after:  []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, "*")},
			want:   [][]string{{uB, t2, "c.warc.gz offset 300", "revisit before", "missing after"}},
		},
		{
			name:   "before-revisit changed after (other digest)",
			before: []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, t1)},
			after:  []string{orig, rev("c.warc.gz", 300, uB, t2, md("payload X"), uA, t1)},
			want:   [][]string{{uB, t2, "c.warc.gz offset 300", "revisit before", "missing after"}},
		},
		{
			name:   "the same revisit in two files before, one left after",
			before: []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, t1), rev("d.warc.gz", 0, uB, t2, dX, uA, t1)},
			after:  []string{orig, rev("c.warc.gz", 300, uB, t2, dX, uA, t1)},
			want:   [][]string{{uB, t2, "d.warc.gz offset 0", "revisit before", "missing after"}},
		},
		{
			name:   "before-revisit whose original became a revisit (a chain)",
			before: []string{orig, resp("b.warc.gz", 0, uB, t2, dX), rev("c.warc.gz", 300, uC, t3, dX, uB, t2)},
			after:  []string{orig, rev("b.warc.gz", 0, uB, t2, dX, uA, t1), rev("c.warc.gz", 300, uC, t3, dX, uB, t2)},
			want:   [][]string{{uC, t3, "c.warc.gz offset 300", uB + " " + t2, "no longer one after"}},
		},
		{
			name:   "digest class left with no response: copies are revisits of each other",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{rev("a.warc.gz", 0, uA, t1, dX, uB, t2), rev("b.warc.gz", 100, uB, t2, dX, uA, t1)},
			want: [][]string{
				{uA, t1, "a.warc.gz offset 0", "a revisit, not a response"},
				{uB, t2, "b.warc.gz offset 900", "a revisit, not a response"},
				{uA, t1, "a.warc.gz offset 0", "digest " + dX, "none of its 2 records", "payload is lost"},
			},
		},
		{
			name:   "digest class left with no response: copies point at a missing original",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("b.warc.gz", 900, uB, t2, dX)},
			after:  []string{rev("b.warc.gz", 100, uB, t2, dX, uA, t1)},
			want: [][]string{
				{uA, t1, "a.warc.gz offset 0", "missing after"},
				{uB, t2, "b.warc.gz offset 900", "names no record"},
				{uA, t1, "a.warc.gz offset 0", "digest " + dX, "payload is lost"},
			},
		},
		{
			name:   "lost class named by its earliest capture, whatever the order of lines",
			before: []string{resp("b.warc.gz", 900, uB, t2, dX), resp("c.warc.gz", 5, uC, t3, dX), resp("a.warc.gz", 0, uA, t1, dX)},
			after:  []string{},
			want: [][]string{
				{uB, t2, "b.warc.gz offset 900", "missing after"},
				{uC, t3, "c.warc.gz offset 5", "missing after"},
				{uA, t1, "a.warc.gz offset 0", "missing after"},
				{uA, t1, "a.warc.gz offset 0", "digest " + dX, "none of its 3 records", "payload is lost"},
			},
		},
		{
			name: "revisit of a response that was not in the before-manifest, two payload classes",
			before: []string{resp7("a.warc.gz", 0, uA, t1, dX, 0), resp7("a.warc.gz", 500, uB, t2, dX, 1),
				resp7("b.warc.gz", 0, uB, t4, dX, 1)},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dX),
				resp("new.warc.gz", 0, uC, t3, dX), rev("b.warc.gz", 0, uB, t4, dX, uC, t3)},
			want: [][]string{{uB, t4, "b.warc.gz offset 0", uC + " " + t3, "no known payload class"}},
		},
		{
			name:   "two ext classes of one digest left with one response",
			before: []string{resp7("a.warc.gz", 0, uA, t1, dX, 0), resp7("b.warc.gz", 900, uB, t2, dX, 1)},
			after:  []string{resp("a.warc.gz", 0, uA, t1, dX), rev("b.warc.gz", 100, uB, t2, dX, uA, t1)},
			want: [][]string{
				{uB, t2, "b.warc.gz offset 900", "another payload class", "ext 0, not 1"},
				{uB, t2, "b.warc.gz offset 900", "ext 1", "payload is lost"},
			},
		},
		{
			// As many responses after as classes before, yet a copy of
			// ext 1 refers to the original of ext 0: its bytes are lost.
			name: "copy of ext 1 refers to the original of ext 0",
			before: []string{resp7("a.warc.gz", 0, uA, t1, dX, 0), resp7("a.warc.gz", 500, uB, t2, dX, 1),
				resp7("b.warc.gz", 0, uA, t3, dX, 0), resp7("b.warc.gz", 500, uB, t4, dX, 1)},
			after: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dX),
				rev("b.warc.gz", 0, uA, t3, dX, uA, t1), rev("b.warc.gz", 300, uB, t4, dX, uA, t1)},
			want: [][]string{{uB, t4, "b.warc.gz offset 500", "another payload class", "ext 0, not 1"}},
		},
		{
			name:   "the same capture in two files, one left after",
			before: []string{resp("a.warc.gz", 0, uA, t1, dX), resp("copy.warc.gz", 7, uA, t1, dX)},
			after:  []string{resp("a.warc.gz", 0, uA, t1, dX)},
			want:   [][]string{{uA, t1, "copy.warc.gz offset 7", "missing after"}},
		},
		{
			name:   "one revisit after for two rewritten captures",
			before: []string{orig, resp("b.warc.gz", 0, uB, t2, dX), resp("c.warc.gz", 0, uB, t2, dX)},
			after:  []string{orig, rev("b.warc.gz", 0, uB, t2, dX, uA, t1)},
			want:   [][]string{{uB, t2, "c.warc.gz offset 0", "missing after"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, violations, err := compare(tt.before, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if len(violations) != len(tt.want) || st.Violations != int64(len(tt.want)) {
				t.Fatalf("%d violations (Stats says %d), want %d:\n%s", len(violations), st.Violations, len(tt.want), strings.Join(violations, "\n"))
			}
			for i, v := range violations {
				for _, s := range tt.want[i] {
					if !strings.Contains(v, s) {
						t.Errorf("violation %d %q does not say %q", i+1, v, s)
					}
				}
			}
		})
	}
}

// TestRewriteReportsInAnyOrder proves that the violations do not depend on
// the order of the after-manifest's lines.
func TestRewriteReportsInAnyOrder(t *testing.T) {
	before := []string{resp7("a.warc.gz", 0, uA, t1, dX, 0), resp7("a.warc.gz", 500, uB, t2, dX, 1),
		resp7("b.warc.gz", 0, uC, t1, dY, 0), resp7("b.warc.gz", 500, uC, t2, dZ, 0)}
	after := []string{rev("a.warc.gz", 0, uA, t1, dX, uB, t2), rev("a.warc.gz", 500, uB, t2, dX, uA, t1),
		rev("b.warc.gz", 0, uC, t1, dY, uC, t2), rev("b.warc.gz", 500, uC, t2, dZ, uC, t1)}
	_, want, err := compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 8 {
		t.Fatalf("%d violations, want 8 (4 records, 4 classes):\n%s", len(want), strings.Join(want, "\n"))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(after), func(i, j int) { after[i], after[j] = after[j], after[i] })
		_, got, err := compare(before, after)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after in order\n%s\ngives\n%s\nwant\n%s", text(after), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestRewriteInputErrors proves that a bad line in either manifest stops
// the comparison with the manifest's name and the line number.
func TestRewriteInputErrors(t *testing.T) {
	good := []string{resp("a.warc.gz", 0, uA, t1, dX), resp("a.warc.gz", 500, uB, t2, dY)}
	bad := func(line string) []string { return append(slices.Clone(good), line) }
	tests := []struct {
		name          string
		before, after []string
		wantName      string
		wantLine      int
		wantText      string
	}{
		{"before: 8 fields", bad(resp7("a.warc.gz", 9, uC, t3, dX, 0) + " 1"), good, "before.manifest", 3, "8 fields"},
		{"before: 5 fields", bad("a.warc.gz 9 100 " + uC + " " + t3), good, "before.manifest", 3, "5 fields"},
		{"before: offset not a number", bad(strings.Replace(resp("a.warc.gz", 9, uC, t3, dX), " 9 ", " x9 ", 1)), good, "before.manifest", 3, "offset"},
		{"before: unknown digest algorithm", bad(resp("a.warc.gz", 9, uC, t3, "crc32:00000000")), good, "before.manifest", 3, "crc32"},
		{"before: revisit line without its reference", bad("a.warc.gz 9 100 " + uC + " " + t3 + " " + dX + " -1 0 - -"), good, "before.manifest", 3, "must name"},
		{"after: 9 fields", good, []string{good[0], "b.warc.gz 0 40 " + uB + " " + t2 + " " + dY + " -1 0 " + uA}, "after.manifest", 2, "9 fields"},
		{"after: malformed digest", good, []string{"a.warc.gz 0 100 " + uA + " " + t1 + " sha1:notbase32"}, "after.manifest", 1, "malformed digest"},
		{"after: last line cut short", good, []string{good[0], "a.warc.gz 500"}, "after.manifest", 2, "no line feed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, a := text(tt.before), text(tt.after)
			if strings.HasSuffix(tt.name, "cut short") {
				a = strings.TrimSuffix(a, "\n")
			}
			_, err := verify.Rewrite(manifest.NewReader(strings.NewReader(b), "before.manifest"),
				manifest.NewReader(strings.NewReader(a), "after.manifest"), func(string) {})
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a *manifest.Error", err)
			}
			if me.Name != tt.wantName || me.Line != tt.wantLine {
				t.Errorf("error at %s:%d, want %s:%d (%v)", me.Name, me.Line, tt.wantName, tt.wantLine, err)
			}
			want := fmt.Sprintf("%s:%d: ", tt.wantName, tt.wantLine)
			if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q, want it to start with %q and say %q", err, want, tt.wantText)
			}
		})
	}
}

// collection is a generated collection: its before-manifest and the
// after-manifest of a correct rewrite, with what each after-line is.
type collection struct {
	before    []manifest.Line
	after     []manifest.Line
	originals []int          // after-lines kept as responses
	rewrites  []int          // after-lines that were before-responses, now revisits
	revisits  []int          // after-lines that were revisits before
	classOf   map[int][2]any // after-line of an original or rewrite -> {digest, ext}
	exts      bool
}

// generate makes a collection of a few hundred responses with many
// duplicates (and, with exts, digests with two payload classes), some
// revisits already there before, and rewrites it correctly: the earliest
// line of each class is the original, every other line becomes a revisit
// that refers to it.
func generate(rng *rand.Rand, exts bool) *collection {
	c := &collection{classOf: map[int][2]any{}, exts: exts}
	n := 200 + rng.IntN(200)
	base := time.Date(2012, 4, 8, 0, 0, 0, 0, time.UTC)
	dates := rng.Perm(n + n/8) // distinct dates: no two captures share URI and date
	date := func(i int) string { return base.Add(time.Duration(dates[i]) * 17 * time.Second).Format(time.RFC3339) }
	payloads := 2 + n/5
	offsets := map[string]int64{}
	type cls struct {
		digest string
		ext    int
	}
	members := map[cls][]int{} // before-lines of each class
	var order []cls
	for i := range n {
		file := fmt.Sprintf("crawl-%d.warc.gz", rng.IntN(5))
		p := rng.IntN(payloads)
		l := manifest.Line{
			File: file, Offset: offsets[file], Length: int64(200 + rng.IntN(900)),
			URI:    fmt.Sprintf("http://h%d.example/p%d", rng.IntN(6), rng.IntN(8)),
			Date:   date(i),
			Digest: sha(fmt.Sprint("payload ", p)), Fields: 6,
		}
		offsets[file] += l.Length
		if exts {
			l.Fields = 7
			if p%3 == 0 { // a colliding digest: two payload classes
				l.Class = rng.IntN(2)
			}
		}
		k := cls{l.Digest, l.Class}
		if members[k] == nil {
			order = append(order, k)
		}
		members[k] = append(members[k], len(c.before))
		c.before = append(c.before, l)
	}
	// The original of each class: the earliest capture.
	original := map[cls]int{}
	for _, k := range order {
		m := members[k]
		best := m[0]
		for _, i := range m[1:] {
			if c.before[i].Date < c.before[best].Date {
				best = i
			}
		}
		original[k] = best
	}
	// Revisits already in the collection, referring to an original.
	for i := n; i < n+n/8; i++ {
		k := order[rng.IntN(len(order))]
		o := c.before[original[k]]
		v := manifest.Line{
			File: "old.warc.gz", Offset: offsets["old.warc.gz"], Length: 300,
			URI: fmt.Sprintf("http://h%d.example/p%d", rng.IntN(6), rng.IntN(8)), Date: date(i),
			Digest: k.digest, Class: -1, Copy: 0, RefURI: o.URI, RefDate: o.Date, Fields: 10,
		}
		offsets["old.warc.gz"] += v.Length
		if rng.IntN(4) == 0 {
			v.Digest = md(fmt.Sprint("payload of ", o.Digest))
		}
		if rng.IntN(4) == 0 {
			v.RefDate = "*"
		}
		c.before = append(c.before, v)
	}
	// The rewrite, written by warcsum --revisits afterwards: offsets move.
	newOffsets := map[string]int64{}
	for i, b := range c.before {
		a := b
		a.Offset = newOffsets[a.File]
		if i >= n {
			c.revisits = append(c.revisits, len(c.after))
			newOffsets[a.File] += a.Length
			c.after = append(c.after, a)
			continue
		}
		k := cls{b.Digest, b.Class}
		c.classOf[len(c.after)] = [2]any{k.digest, k.ext}
		o := original[k]
		if o == i {
			a.Fields, a.Class = 6, 0
			c.originals = append(c.originals, len(c.after))
		} else {
			a = manifest.Line{File: a.File, Offset: a.Offset, Length: 350, URI: b.URI, Date: b.Date, Digest: b.Digest,
				Class: -1, Copy: 0, RefURI: c.before[o].URI, RefDate: c.before[o].Date, Fields: 10}
			if rng.IntN(5) == 0 {
				a.Digest = md(fmt.Sprint("payload of ", b.Digest))
			}
			if rng.IntN(8) == 0 && !exts {
				a.RefDate = "*"
			}
			c.rewrites = append(c.rewrites, len(c.after))
		}
		newOffsets[a.File] += a.Length
		c.after = append(c.after, a)
	}
	return c
}

func render(lines []manifest.Line, order []int) string {
	var b []byte
	for _, i := range order {
		b = lines[i].Append(b)
	}
	return string(b)
}

// run compares the collection's manifests, the after-manifest shuffled.
func (c *collection) run(rng *rand.Rand, after []manifest.Line) (verify.Stats, []string, error) {
	var violations []string
	st, err := verify.Rewrite(
		manifest.NewReader(strings.NewReader(render(c.before, rng.Perm(len(c.before)))), "before"),
		manifest.NewReader(strings.NewReader(render(after, rng.Perm(len(after)))), "after"),
		func(v string) { violations = append(violations, v) })
	return st, violations, err
}

// A corruption breaks a correct rewrite in one way; it returns false when
// the collection offers no place for it.
type corruption struct {
	name  string
	apply func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool)
}

func pick(rng *rand.Rand, s []int) int { return s[rng.IntN(len(s))] }

func without(after []manifest.Line, i int) []manifest.Line {
	return slices.Delete(slices.Clone(after), i, i+1)
}

// asRevisitOf turns after-line i into a revisit that refers to after-line j.
func asRevisitOf(after []manifest.Line, i, j int) {
	a := &after[i]
	a.Fields, a.Class, a.Copy, a.RefURI, a.RefDate = 10, -1, 0, after[j].URI, after[j].Date
}

var corruptions = []corruption{
	{"a response missing after", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		return without(after, pick(rng, slices.Concat(c.originals, c.rewrites))), true
	}},
	{"an original missing after", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		return without(after, pick(rng, c.originals)), true
	}},
	{"a revisit whose Refers-To names no response", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		if len(c.rewrites) == 0 {
			return nil, false
		}
		i := pick(rng, c.rewrites)
		after[i].RefURI = "http://nowhere.example/"
		return after, true
	}},
	{"a revisit whose Refers-To target has another digest", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		if len(c.rewrites) == 0 {
			return nil, false
		}
		i := pick(rng, c.rewrites)
		for _, j := range rng.Perm(len(c.originals)) {
			o := c.originals[j]
			if c.classOf[o][0] != c.classOf[i][0] {
				after[i].RefURI, after[i].RefDate = after[o].URI, after[o].Date
				return after, true
			}
		}
		return nil, false
	}},
	{"a revisit whose own digest differs", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		if len(c.rewrites) == 0 {
			return nil, false
		}
		i := pick(rng, c.rewrites)
		after[i].Digest = sha("another payload")
		return after, true
	}},
	{"a revisit that points at another revisit", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		targets := slices.Concat(c.rewrites, c.revisits)
		if len(c.rewrites) == 0 || len(targets) < 2 {
			return nil, false
		}
		i := pick(rng, c.rewrites)
		j := i
		for j == i {
			j = pick(rng, targets)
		}
		after[i].RefURI, after[i].RefDate = after[j].URI, after[j].Date
		return after, true
	}},
	{"a before-revisit missing after", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		if len(c.revisits) == 0 {
			return nil, false
		}
		return without(after, pick(rng, c.revisits)), true
	}},
	{"a class left with no response: its original a revisit of a copy", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		for _, o := range rng.Perm(len(c.originals)) {
			o = c.originals[o]
			for _, r := range c.rewrites {
				if c.classOf[r] == c.classOf[o] {
					asRevisitOf(after, o, r)
					return after, true
				}
			}
		}
		return nil, false
	}},
	{"two ext classes left with one response", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		for _, o1 := range rng.Perm(len(c.originals)) {
			o1 = c.originals[o1]
			if c.classOf[o1][1] != 1 {
				continue
			}
			for _, o0 := range c.originals {
				if c.classOf[o0] == [2]any{c.classOf[o1][0], 0} {
					// As the original warcsumproc did: the whole class
					// taken for copies of class 0.
					asRevisitOf(after, o1, o0)
					for _, r := range c.rewrites {
						if c.classOf[r] == c.classOf[o1] {
							asRevisitOf(after, r, o0)
						}
					}
					return after, true
				}
			}
		}
		return nil, false
	}},
	{"a copy of ext 1 refers to the original of ext 0", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		for _, r := range rng.Perm(len(c.rewrites)) {
			r = c.rewrites[r]
			if c.classOf[r][1] != 1 {
				continue
			}
			for _, o0 := range c.originals {
				if c.classOf[o0] == [2]any{c.classOf[r][0], 0} {
					asRevisitOf(after, r, o0)
					return after, true
				}
			}
		}
		return nil, false
	}},
	{"the original a before-revisit refers to became a revisit of another copy", func(rng *rand.Rand, c *collection, after []manifest.Line) ([]manifest.Line, bool) {
		// A rewrite that chose another original of the class: correct for
		// every before-response, but a revisit that was there before now
		// refers to a revisit.
		for _, v := range rng.Perm(len(c.revisits)) {
			v = c.revisits[v]
			if after[v].RefDate == "*" {
				continue
			}
			for _, o := range c.originals {
				if after[o].URI != after[v].RefURI || after[o].Date != after[v].RefDate {
					continue
				}
				for _, r := range c.rewrites {
					if c.classOf[r] != c.classOf[o] || after[r].URI == after[o].URI {
						continue
					}
					a := &after[r]
					a.Digest, a.Fields, a.Copy, a.RefURI, a.RefDate = c.classOf[o][0].(string), 6, 0, "", ""
					asRevisitOf(after, o, r)
					for _, q := range c.rewrites {
						if q != r && c.classOf[q] == c.classOf[o] {
							asRevisitOf(after, q, r)
						}
					}
					return after, true
				}
			}
		}
		return nil, false
	}},
}

// TestRewriteProperty proves, on generated collections, that a correct
// rewrite gives no violation and that each corruption of it gives at least
// one.
func TestRewriteProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	applied := map[string]int{}
	for seed := range seeds {
		for _, exts := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			c := generate(rng, exts)
			st, violations, err := c.run(rng, c.after)
			if err != nil {
				t.Fatalf("seed %d exts %v: %v", seed, exts, err)
			}
			if len(violations) > 0 {
				t.Fatalf("seed %d exts %v: a correct rewrite gives %d violations:\n%s", seed, exts, len(violations), strings.Join(violations, "\n"))
			}
			if st.Themselves+st.Revisits != st.Before || st.Themselves != int64(len(c.originals)+len(c.revisits)) {
				t.Fatalf("seed %d exts %v: Themselves %d + Revisits %d, want %d + %d", seed, exts, st.Themselves, st.Revisits,
					len(c.originals)+len(c.revisits), len(c.rewrites))
			}
			for _, cr := range corruptions {
				after, ok := cr.apply(rng, c, slices.Clone(c.after))
				if !ok {
					continue
				}
				applied[cr.name]++
				_, violations, err := c.run(rng, after)
				if err != nil {
					t.Fatalf("seed %d exts %v, %s: %v", seed, exts, cr.name, err)
				}
				if len(violations) == 0 {
					t.Errorf("seed %d exts %v, %s: no violation", seed, exts, cr.name)
				}
			}
		}
	}
	// Every corruption must have been tried, or the test proves less than
	// it says.
	for _, cr := range corruptions {
		t.Logf("%s: applied to %d collections", cr.name, applied[cr.name])
		if applied[cr.name] < seeds/2 {
			t.Errorf("%s: applied to %d collections of %d", cr.name, applied[cr.name], 2*seeds)
		}
	}
}

// TestSummary proves the summary states the counts.
func TestSummary(t *testing.T) {
	st := verify.Stats{Before: 5, After: 4, Themselves: 3, Revisits: 1, Violations: 1}
	var b strings.Builder
	st.Summary(&b)
	for _, want := range []string{"before: 5 records; after: 4 records", "present as themselves: 3", "resolve to an original with the same digest: 1", "violations: 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary %q does not say %q", b.String(), want)
		}
	}
}

// TestRewriteAgainst proves verification of a crawl deduplicated against
// the committed crawls of an index: a revisit of an external original
// with its digest resolves, and a payload class kept only outside the
// collection is not lost; a revisit of an external response with another
// digest, or of one the index does not have, is still reported, and a
// payload the index does not hold is lost.
func TestRewriteAgainst(t *testing.T) {
	external := []string{resp("jan/a.warc.gz", 0, uA, t1, dX), resp("jan/a.warc.gz", 500, uC, t1, dY)}
	tests := []struct {
		name          string
		before, after []string
		want          []string // a string each violation must contain, in order
	}{
		{"revisit of an external original", []string{resp("feb/b.warc.gz", 0, uB, t2, dX)}, []string{rev("feb/b.warc.gz", 0, uB, t2, dX, uA, t1)}, nil},
		{"refers to an external response of another digest", []string{resp("feb/b.warc.gz", 0, uB, t2, dX)}, []string{rev("feb/b.warc.gz", 0, uB, t2, dX, uC, t1)},
			[]string{"names no record after"}},
		{"refers to a capture the index lacks", []string{resp("feb/b.warc.gz", 0, uB, t2, dX)}, []string{rev("feb/b.warc.gz", 0, uB, t2, dX, uA, t3)},
			[]string{"names no record after"}},
		{"a payload neither here nor in the index is lost", []string{resp("feb/b.warc.gz", 0, uB, t2, dZ)}, []string{rev("feb/b.warc.gz", 0, uB, t2, dZ, uA, t1)},
			[]string{"names no record after", "payload is lost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var violations []string
			_, err := verify.RewriteAgainst(
				manifest.NewReader(strings.NewReader(text(tt.before)), "before.manifest"),
				manifest.NewReader(strings.NewReader(text(tt.after)), "after.manifest"),
				manifest.NewReader(strings.NewReader(text(external)), "index.manifest"),
				func(v string) { violations = append(violations, v) })
			if err != nil {
				t.Fatal(err)
			}
			if len(violations) != len(tt.want) {
				t.Fatalf("violations %q, want %d", violations, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(violations[i], w) {
					t.Errorf("violation %q, want it to say %q", violations[i], w)
				}
			}
		})
	}
}

// TestRewriteThroughSystemSort proves that the comparison gives the same
// counts and violations, in the same order, when every pass sorts with
// the system sort through files (as a large comparison does) as when the
// passes sort in memory, on generated collections and their corruptions,
// and that it leaves no file in its temporary directory.
func TestRewriteThroughSystemSort(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 1
	}
	dir := t.TempDir()
	for seed := range seeds {
		for _, exts := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			c := generate(rng, exts)
			afters := [][]manifest.Line{c.after}
			for _, cr := range corruptions {
				if after, ok := cr.apply(rng, c, slices.Clone(c.after)); ok {
					afters = append(afters, after)
				}
			}
			for i, after := range afters {
				b := render(c.before, rng.Perm(len(c.before)))
				a := render(after, rng.Perm(len(after)))
				var inMemory, sorted []string
				st1, err1 := verify.Rewrite(manifest.NewReader(strings.NewReader(b), "before"), manifest.NewReader(strings.NewReader(a), "after"),
					func(v string) { inMemory = append(inMemory, v) })
				opt := verify.Options{Sort: syssort.Sorter{TempDir: dir, InMemory: -1}}
				st2, err2 := opt.RewriteAgainst(context.Background(), manifest.NewReader(strings.NewReader(b), "before"), manifest.NewReader(strings.NewReader(a), "after"), nil,
					func(v string) { sorted = append(sorted, v) })
				if err1 != nil || err2 != nil {
					t.Fatalf("seed %d exts %v after %d: %v, %v", seed, exts, i, err1, err2)
				}
				if st1 != st2 || !slices.Equal(inMemory, sorted) {
					t.Fatalf("seed %d exts %v after %d: in memory %+v\n%s\nthrough sort %+v\n%s", seed, exts, i,
						st1, strings.Join(inMemory, "\n"), st2, strings.Join(sorted, "\n"))
				}
			}
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("%d files left in the temporary directory, the first %s", len(left), left[0].Name())
	}
}

package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
)

// TestRunIndexWACZRefusesUnrefreshableRequirerOfRequirer is
// setUpCommittedRequirer with a second committed package of crawl-0,
// crawl-0-0.wacz, requiring crawl-0's requirer (crawl-0-1.wacz) by its
// SHA-256 and size: the run of crawl-1 writes crawl-0-1.wacz anew (its
// entry for crawl-1's package brought up to date), so crawl-0-0.wacz's
// entry for it goes stale in turn and must be brought up to date too.
// When crawl-0-0.wacz cannot be (signed: its signature is not the run's
// to remove), the run must refuse before anything is rewritten, as it
// does for a package that requires one of the crawl's directly. Before,
// only direct requirers were checked: the run rewrote crawl-1's
// packages and crawl-0-1.wacz, then refused crawl-0-0.wacz, leaving its
// entry naming a package that is no longer there.
func TestRunIndexWACZRefusesUnrefreshableRequirerOfRequirer(t *testing.T) {
	sign := func(t *testing.T, path string) {
		signPackage(t, path, path+".signed")
		if err := os.Rename(path+".signed", path); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// chained: crawl-0-0.wacz requires crawl-0's requirer and is
		// signed; else the requirer itself is signed.
		chained bool
	}{
		{"signed requirer of crawl-1's package", false},
		{"signed requirer of the requirer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setUpCommittedRequirer(t)
			signed := c.requirer
			if tc.chained {
				signed = filepath.Join(filepath.Dir(c.requirer), "crawl-0-0.wacz")
				jobtest.RequireBy(t, signed, c.requirer)
			}
			sign(t, signed)
			staleBefore := map[string]bool{}
			for _, e := range jobtest.StaleRequires(t, c.dirs...) {
				staleBefore[e] = true // crawl-0-1.wacz's entry for crawl-0-0.wacz, changed here
			}
			before := c.snapshot(t)
			msg := mustRefuse(t, c.rerun(), &before, func() string {
				return "the run of crawl-1 succeeded: crawl-0-0.wacz cannot be brought up to date"
			})
			for _, e := range jobtest.StaleRequires(t, c.dirs...) {
				if !staleBefore[e] {
					t.Errorf("stale entry left: %s (%s)", e, msg)
				}
			}
			if !strings.Contains(msg, filepath.Base(signed)) || !strings.Contains(msg, "is signed: writing its requires entries anew would invalidate its signature") {
				t.Errorf("the refusal does not name %s and why: %s", filepath.Base(signed), msg)
			}
		})
	}
}

// TestRunIndexWACZRefusesRequirerChangedSinceCommit is
// setUpCommittedRequirer with crawl-0's requirer written anew by another
// tool after its crawl's commit (re-zipped as a streaming writer does:
// its WARC members moved, the index's originals of them no longer at
// their offsets). The run of crawl-1, which would write the requirer
// anew, must refuse before anything is rewritten: noting the requirer
// as it now is and recording it at the commit would have the index
// take the moved package as the one its originals are in. Before, the
// note took the moved places, the rewrite kept them, and the commit
// recorded the package anew (exit 0), the index's originals of it
// pointing into the wrong bytes.
func TestRunIndexWACZRefusesRequirerChangedSinceCommit(t *testing.T) {
	c := setUpCommittedRequirer(t)
	places := jobtest.WARCPlaces(t, c.requirer)
	jobtest.WithDescriptors(t, c.requirer)
	if got := jobtest.WARCPlaces(t, c.requirer); slices.Equal(got, places) {
		t.Fatalf("%s's WARC members did not move: the test proves nothing", c.requirer)
	}
	before := c.snapshot(t)
	msg := mustRefuse(t, c.rerun(), &before, func() string {
		return fmt.Sprintf("the run of crawl-1 succeeded; the index now disagrees on crawl-0's %v", jobtest.IndexDisagrees(t, c.index, "crawl-0"))
	})
	if !strings.Contains(msg, filepath.Base(c.requirer)) {
		t.Errorf("the refusal does not name %s: %s", filepath.Base(c.requirer), msg)
	}
}

// TestChangingPackages proves the closure committedRequirers checks
// before anything is rewritten: a committed package changes when it
// requires by hash one the run rewrites, or one that changes in turn
// (through a committed package or one of the crawl's own not staged),
// and only then.
func TestChangingPackages(t *testing.T) {
	cand := func(path string, reqs ...string) committedCandidate {
		return committedCandidate{path: path, byHash: reqs}
	}
	for _, tc := range []struct {
		name  string
		cands []committedCandidate
		own   []committedCandidate
		want  map[string][]string
	}{
		{"direct", []committedCandidate{cand("/c0/a.wacz", "p.wacz")}, nil,
			map[string][]string{"/c0/a.wacz": {"p.wacz"}}},
		{"requirer of a requirer", []committedCandidate{cand("/c0/b.wacz", "a.wacz"), cand("/c0/a.wacz", "p.wacz")}, nil,
			map[string][]string{"/c0/a.wacz": {"p.wacz"}, "/c0/b.wacz": {"a.wacz"}}},
		{"through the crawl's own package", []committedCandidate{cand("/c0/a.wacz", "q.wacz")}, []committedCandidate{cand("/c1/q.wacz", "p.wacz")},
			map[string][]string{"/c0/a.wacz": {"q.wacz"}}},
		{"requiring an unchanged package", []committedCandidate{cand("/c0/a.wacz", "r.wacz"), cand("/c0/b.wacz", "a.wacz")}, []committedCandidate{cand("/c1/r.wacz", "s.wacz")},
			map[string][]string{}},
		{"a cycle", []committedCandidate{cand("/c0/a.wacz", "b.wacz"), cand("/c0/b.wacz", "a.wacz", "p.wacz")}, nil,
			map[string][]string{"/c0/a.wacz": {"b.wacz"}, "/c0/b.wacz": {"p.wacz"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changingPackages(map[string]bool{"p.wacz": true}, tc.cands, tc.own)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if !slices.Equal(got[k], v) {
					t.Errorf("%s: got %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

package dedup

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
)

// TestRunIndexWACZNotedRequirerChangedSinceCommit is
// TestRunIndexWACZRefreshesCommittedRequirers resuming a stopped
// attempt: crawl-0's requirer is in the work directory's refile note (as
// the attempt noted it, unchanged since its crawl's commit) when the
// rewrite begins, and is then changed. Written anew by the stopped
// attempt (its requires entries, its WARC members where the note has
// them), the run goes on and the commit records it again. Written anew
// by another tool that moved its WARC members, the run must refuse
// before anything is rewritten, as it refuses such a package not noted.
// Before, a noted package was taken as the note had it without any
// check: the run rewrote crawl-1's packages and the requirer, and only
// its commit found the requirer's members moved (not committed, the
// packages already rewritten).
func TestRunIndexWACZNotedRequirerChangedSinceCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change changes the requirer after it was noted.
		change func(t *testing.T, c *committedRequirerCase)
		refuse bool
	}{
		{"written anew by the stopped attempt, its members in place", func(t *testing.T, c *committedRequirerCase) {
			jobtest.RequireBy(t, c.requirer, c.required)
		}, false},
		{"written anew by another tool, its members moved", func(t *testing.T, c *committedRequirerCase) {
			jobtest.WithDescriptors(t, c.requirer)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setUpCommittedRequirer(t)
			var before dirsSnapshot
			opt := c.rerun()
			opt.afterHash = func() {
				c.writeNote(t, c.noteRequirer(t))
				tc.change(t, c)
				if len(jobtest.IndexDisagrees(t, c.index, "crawl-0")) == 0 {
					t.Fatalf("%s is as its crawl's commit recorded it: the test proves nothing", c.requirer)
				}
				moved := !slices.Equal(jobtest.WARCPlaces(t, c.requirer), c.places)
				if moved != tc.refuse {
					t.Fatalf("%s's WARC members moved: %v: the test proves nothing", c.requirer, moved)
				}
				before = c.snapshot(t)
			}
			if !tc.refuse {
				c.runAgain(t, opt)
				return
			}
			msg := mustRefuse(t, opt, &before, func() string {
				return "the run of crawl-1 succeeded: crawl-0's requirer moved its records since it was noted"
			})
			if !strings.Contains(msg, filepath.Base(c.requirer)) || !strings.Contains(msg, "noted by a stopped attempt") {
				t.Errorf("the refusal does not name %s and why: %s", filepath.Base(c.requirer), msg)
			}
		})
	}
}

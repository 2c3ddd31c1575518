package dedup

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
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
			places := jobtest.WARCPlaces(t, c.requirer)
			required := hashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
			before := map[string]map[string]string{}
			opt := Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true}
			opt.afterHash = func() {
				e, err := crawlindex.NotePackage("crawl-0", filepath.Base(c.requirer), c.requirer)
				if err != nil {
					t.Fatal(err)
				}
				if err := crawlindex.WriteRefileNote(filepath.Join(c.wd, crawlRefileNote), []crawlindex.RefileEntry{e}); err != nil {
					t.Fatal(err)
				}
				tc.change(t, c)
				if len(jobtest.IndexDisagrees(t, c.index, "crawl-0")) == 0 {
					t.Fatalf("%s is as its crawl's commit recorded it: the test proves nothing", c.requirer)
				}
				moved := !slices.Equal(jobtest.WARCPlaces(t, c.requirer), places)
				if moved != tc.refuse {
					t.Fatalf("%s's WARC members moved: %v: the test proves nothing", c.requirer, moved)
				}
				for _, d := range c.dirs {
					before[d] = hashTree(t, d)
				}
			}
			r, err := Run(context.Background(), opt)
			if !tc.refuse {
				if err != nil || r.Report.Exit != 0 {
					t.Fatalf("crawl-1 run again: %v %+v", err, r.Report.ExitReason)
				}
				c.check(t, required, places)
				return
			}
			if err == nil && r.Report.Exit == 0 {
				t.Fatal("the run of crawl-1 succeeded: crawl-0's requirer moved its records since it was noted")
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = strings.Join(r.Report.ExitReason, "; ")
			}
			for _, d := range c.dirs {
				for name, h := range hashTree(t, d) {
					if before[d][name] != h {
						t.Errorf("%s changed (the run should have refused before rewriting anything: %s)", filepath.Join(d, name), msg)
					}
				}
			}
			if !strings.Contains(msg, filepath.Base(c.requirer)) || !strings.Contains(msg, "noted by a stopped attempt") {
				t.Errorf("the refusal does not name %s and why: %s", filepath.Base(c.requirer), msg)
			}
		})
	}
}

package dedup

import (
	"context"
	"os"
	"path/filepath"
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
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		says string
	}{
		{"signed", func(t *testing.T, path string) {
			signPackage(t, path, path+".signed")
			if err := os.Rename(path+".signed", path); err != nil {
				t.Fatal(err)
			}
		}, "signed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setUpCommittedRequirer(t)
			second := filepath.Join(filepath.Dir(c.requirer), "crawl-0-0.wacz")
			jobtest.RequireBy(t, second, c.requirer)
			tc.make(t, second)
			staleBefore := map[string]bool{}
			for _, e := range jobtest.StaleRequires(t, c.dirs...) {
				staleBefore[e] = true // crawl-0-1.wacz's entry for crawl-0-0.wacz, changed here
			}
			before := map[string]map[string]string{}
			for _, d := range c.dirs {
				before[d] = hashTree(t, d)
			}
			r, err := Run(context.Background(), Options{Collections: []string{c.op}, Crawl: "crawl-1", Index: c.index, Jobs: 2, KeepWork: true})
			if err == nil && r.Report.Exit == 0 {
				t.Fatal("the run of crawl-1 succeeded: crawl-0-0.wacz cannot be brought up to date")
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
			for _, e := range jobtest.StaleRequires(t, c.dirs...) {
				if !staleBefore[e] {
					t.Errorf("stale entry left: %s (%s)", e, msg)
				}
			}
			if !strings.Contains(msg, "crawl-0-0.wacz") || !strings.Contains(msg, tc.says) {
				t.Errorf("the refusal does not name crawl-0-0.wacz and why (%q): %s", tc.says, msg)
			}
		})
	}
}

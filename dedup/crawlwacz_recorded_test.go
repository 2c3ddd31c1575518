package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
)

// TestRunIndexWACZRecordsRequires proves what a crawl's commit records
// of its packages' requires entries, and that a run relies on it only
// while the package is the version recorded: setUpCommittedRequirer's
// crawl-0 is recorded with crawl-0-1.wacz requiring crawl-1's package
// and crawl-0-0.wacz requiring none (a later run does not open it).
// Then crawl-0-0.wacz is made to require crawl-1's package too, by
// another tool, after the commit: the run of crawl-1 must open it (its
// stamp is not the recorded one) and refuse, as it refuses any package
// changed since its crawl's commit that it would have to write anew,
// rather than skip it and leave its entry stale.
func TestRunIndexWACZRecordsRequires(t *testing.T) {
	c := setUpCommittedRequirer(t)
	other := filepath.Join(filepath.Dir(c.requirer), "crawl-0-0.wacz")
	ix, err := crawlindex.Open(c.index)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ix.Files("crawl-0")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]crawlindex.FileInfo{}
	for _, f := range files {
		recorded[filepath.Base(f.Name)] = f
	}
	if f := recorded[filepath.Base(c.requirer)]; !f.RequiresKnown || !slices.Contains(f.RequiredNames(), filepath.Base(c.required)) {
		t.Errorf("crawl-0's %s recorded requiring %q (known: %v), want %s among them", filepath.Base(c.requirer), f.RequiredNames(), f.RequiresKnown, filepath.Base(c.required))
	}
	if f := recorded["crawl-0-0.wacz"]; !f.RequiresKnown || f.Requires != "" {
		t.Errorf("crawl-0's crawl-0-0.wacz recorded requiring %q (known: %v), want none", f.RequiredNames(), f.RequiresKnown)
	}
	if !requiresNoneAsRecorded(other, recorded["crawl-0-0.wacz"]) {
		t.Fatalf("%s is not taken as requiring none as recorded: the test proves nothing", other)
	}

	jobtest.RequireBy(t, other, c.required)
	before := c.snapshot(t)
	msg := mustRefuse(t, c.rerun(), &before, func() string {
		return fmt.Sprintf("the run of crawl-1 succeeded; stale entries: %v", jobtest.StaleRequires(t, c.dirs...))
	})
	if !strings.Contains(msg, "crawl-0-0.wacz") || !strings.Contains(msg, "has changed since its crawl's commit") {
		t.Errorf("the refusal does not name crawl-0-0.wacz and why: %s", msg)
	}
}

// TestRequiresNoneAsRecorded proves when a run takes a committed package
// to require none without opening it: the index recorded its requires
// entries, none, of the version it still is.
func TestRequiresNoneAsRecorded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.wacz")
	if err := os.WriteFile(path, []byte("not opened"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	as := crawlindex.FileInfo{Name: "a.wacz", Size: fi.Size(), Stamp: crawlindex.Stamp(fi), RequiresKnown: true}
	requiring := as
	requiring.Requires = "b.wacz\n"
	unknown := as
	unknown.RequiresKnown = false
	rewritten := filepath.Join(dir, "rewritten.wacz")
	if err := os.WriteFile(rewritten, []byte("not opened"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		f    crawlindex.FileInfo
		want bool
	}{
		{"none recorded, the version recorded", path, as, true},
		{"one recorded", path, requiring, false},
		{"not recorded", path, unknown, false},
		{"another version (stamp)", rewritten, as, false},
		{"gone", filepath.Join(dir, "gone.wacz"), as, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requiresNoneAsRecorded(tc.path, tc.f); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

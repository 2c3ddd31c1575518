package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/workdir"
)

// crawlRequires are the requires entries of the packages under dir, each
// as "filename crawlId hashed sized" (whether it has a hash and a size).
func crawlRequires(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for n, reqs := range packageRequires(t, dir) {
		for _, r := range reqs {
			out[n] = append(out[n], fmt.Sprintf("%s crawlId=%q hashed=%v sized=%v", r.Filename, r.CrawlID, r.Hash != "", r.Size >= 0))
		}
		slices.Sort(out[n])
	}
	return out
}

// TestRunIndexWACZKilledKeepsRequiresOfCommittedCrawls attacks the
// requires entries Recover gives a package of a crawl run with a crawl
// index whose revisits have originals in a committed crawl's package,
// not beside it: after a kill with members staged and reruns until exit
// 0, each package of the crawl must name what a run never killed names
// (file name, crawlId, hash and size), each hash and size those of the
// package named as it now is.
func TestRunIndexWACZKilledKeepsRequiresOfCommittedCrawls(t *testing.T) {
	// want: the entries of a run never killed.
	root := threeCrawlsOfWACZ(t)
	index := filepath.Join(root, "index")
	for _, c := range []string{"crawl-0", "crawl-1"} {
		if out, err := exec.Command(binPath, "run", "-q", "--index", index, filepath.Join(root, c)).CombinedOutput(); err != nil {
			t.Fatalf("%s's run: %v\n%s", c, err, out)
		}
	}
	want := crawlRequires(t, filepath.Join(root, "crawl-1"))
	external := 0
	for _, es := range want {
		for _, e := range es {
			if !strings.Contains(e, `crawlId=""`) {
				external++
			}
		}
	}
	if external == 0 {
		t.Fatalf("crawl-1 requires no package of crawl-0 (%v): the test proves nothing", want)
	}
	for attempt := 1; attempt <= 30; attempt++ {
		root := threeCrawlsOfWACZ(t)
		index := filepath.Join(root, "index")
		crawl1 := filepath.Join(root, "crawl-1")
		if out, err := exec.Command(binPath, "run", "-q", "--index", index, filepath.Join(root, "crawl-0")).CombinedOutput(); err != nil {
			t.Fatalf("crawl-0's run: %v\n%s", err, out)
		}
		wd := filepath.Join(index, "work", "crawl-1")
		p := killPoint{"members staged, their package not written anew", func(w *watch) (string, bool) {
			fi, err := os.Stat(filepath.Join(wd, workdir.LogFile))
			if err != nil || fi.Size() == 0 {
				return "", false
			}
			s, _ := filepath.Glob(filepath.Join(crawl1, ".*.warcdedup-member"))
			return fmt.Sprintf("with %d members staged", len(s)), len(s) > 0
		}}
		args := []string{"run", "-q", "--index", index, crawl1}
		where, _ := killAt(t, exec.Command(binPath, args...), wd, p)
		if where == "" {
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		status := -1
		var last []byte
		for rerun := 1; rerun <= 3 && status != 0; rerun++ {
			var err error
			last, err = exec.Command(binPath, args...).CombinedOutput()
			status = exitStatus(t, err, last)
			t.Logf("rerun %d: exit %d", rerun, status)
		}
		if status != 0 {
			t.Fatalf("three runs after the kill, still exit %d:\n%s", status, last)
		}
		got := crawlRequires(t, crawl1)
		for _, n := range slices.Sorted(maps.Keys(want)) {
			if !slices.Equal(got[n], want[n]) {
				t.Errorf("%s requires\n  %v\nafter the kill and rerun; a run never killed:\n  %v", n, got[n], want[n])
			}
		}
		for n, reqs := range packageRequires(t, crawl1) {
			for _, r := range reqs {
				if r.Hash == "" && r.Size < 0 {
					continue
				}
				at := filepath.Join(crawl1, r.Filename)
				if r.CrawlID != "" {
					at = filepath.Join(root, r.CrawlID, r.Filename)
				}
				b, err := os.ReadFile(at)
				if err != nil {
					t.Errorf("%s requires %s: %v", n, r.Filename, err)
					continue
				}
				h := sha256.Sum256(b)
				if r.Size != int64(len(b)) || r.Hash != "" && r.Hash != hex.EncodeToString(h[:]) {
					t.Errorf("%s requires %s with %d bytes, %s: stale", n, r.Filename, r.Size, r.Hash)
				}
			}
		}
		return
	}
	t.Fatal("the run was never killed with members staged")
}

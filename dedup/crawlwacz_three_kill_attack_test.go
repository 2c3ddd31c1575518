package dedup

import (
	"os/exec"
	"path/filepath"
	"testing"

	"warcdedup/crawlindex"
)

// TestRunIndexWACZThirdCrawlKilledInCommit commits two monthly crawls of
// WACZ packages, then kills the run of the third (whose revisits need
// both) in its commit: while the index's next generation is built, and
// once it is published, before the run recorded its job complete. It
// proves that a rerun (at most three) finishes with exit 0, and that then
// every revisit has its original where its WARC-Refers-To-Container
// says, every requires entry names its package as it is, the index holds
// the third crawl requiring both others, and index verify --deep passes.
func TestRunIndexWACZThirdCrawlKilledInCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(k *threeWACZCrawls) killPoint
	}{
		{"the next generation being built", func(k *threeWACZCrawls) killPoint {
			return killPoint{"the next generation being built", func(*watch) (string, bool) {
				m, _ := filepath.Glob(filepath.Join(k.index, ".tmp-gen-*"))
				return "with " + filepath.Base(firstOf(m)) + " being built", len(m) > 0
			}}
		}},
		{"published, the job not recorded complete", func(k *threeWACZCrawls) killPoint {
			return killPoint{"the crawl committed", func(*watch) (string, bool) {
				ix, err := crawlindex.Open(k.index)
				return "with crawl-2 committed", err == nil && ix.Registry.Crawl("crawl-2") != nil
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := 1; attempt <= 10; attempt++ {
				k := newWACZCrawls(t, 3, 2)
				args := []string{"run", "-q", "--keep-work", "--index", k.index, "--crawl", "crawl-2", k.dirs[2]}
				where, _ := killAt(t, exec.Command(binPath, args...), k.workDir(2), tc.at(k))
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
				}
				if status != 0 {
					t.Fatalf("three runs after the kill, still exit %d:\n%s", status, last)
				}
				ix, err := crawlindex.Open(k.index)
				if err != nil {
					t.Fatal(err)
				}
				need := map[string]bool{}
				if c := ix.Registry.Crawl("crawl-2"); c != nil {
					for _, n := range c.Requires {
						need[n.Crawl] = true
					}
				}
				if !need["crawl-0"] || !need["crawl-1"] {
					t.Errorf("crawl-2 committed requiring %v, want crawl-0 and crawl-1", need)
				}
				k.check(t, "after the reruns", true)
				if out, err := exec.Command(binPath, "index", "verify", "--deep", "--index", k.index).CombinedOutput(); err != nil {
					t.Errorf("index verify --deep: %v\n%s", err, out)
				}
				return
			}
			t.Fatal("the run was never killed there")
		})
	}
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

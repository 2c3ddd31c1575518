package dedup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/workdir"
)

// threeCrawlsOfWACZ writes six packages of three crawls (warcgen -wacz 6
// -crawls 3 -files 12 -records 300 -seed 41), each crawl in a directory
// of its own under the directory returned.
func threeCrawlsOfWACZ(t *testing.T) string {
	t.Helper()
	cfg := gen.Config{Files: 12, Records: 300, DupRate: 0.3, Seed: 41, MeanPayload: 20 << 10, NonCandidates: true,
		Chunked: 0.05, SameURL: 0.4, Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz}}
	dir, res := jobtest.Generated(t, cfg)
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 6, Crawls: 3, Index: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, p := range coll.Packages {
		if err := os.MkdirAll(filepath.Join(root, p.CrawlID), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, p.Name), filepath.Join(root, p.CrawlID, p.Name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestRunIndexWACZKilledWhileStagedCommitsOnlyWhole: a crawl's run with a
// crawl index killed while it stages members, some of them already
// logged as rewritten and staged beside their package, the package not
// yet written anew, is run again.
// The rerun finishes that package from the staged members first (so its
// stamp is no longer the one the killed run's hash stage compared), and
// its rewrite may then refuse to write a package anew ("run again"),
// leaving the members' new versions beside it, exit 1. It must not
// commit the crawl so: a later run finishes the package, which rewrites
// a committed crawl, and every run after it refused the crawl as
// committed and changed since (exit 2 for ever, index verify failing).
// Whatever the reruns say on the way, a few of them must end with exit 0
// and an index that verifies.
func TestRunIndexWACZKilledWhileStagedCommitsOnlyWhole(t *testing.T) {
	for attempt := 1; attempt <= 30; attempt++ {
		root := threeCrawlsOfWACZ(t)
		index := filepath.Join(root, "index")
		crawl1 := filepath.Join(root, "crawl-1")
		if out, err := exec.Command(binPath, "run", "-q", "--index", index, filepath.Join(root, "crawl-0")).CombinedOutput(); err != nil {
			t.Fatalf("crawl-0's run: %v\n%s", err, out)
		}
		wd := filepath.Join(index, "work", "crawl-1")
		staged := func() []string {
			m, _ := filepath.Glob(filepath.Join(crawl1, ".*.warcdedup-member"))
			return m
		}
		p := killPoint{"members logged and staged, their package not written anew", func(w *watch) (string, bool) {
			fi, err := os.Stat(filepath.Join(wd, workdir.LogFile))
			if err != nil || fi.Size() == 0 {
				return "", false
			}
			s := staged()
			partial, _ := filepath.Glob(filepath.Join(crawl1, ".tmp-.*.warcdedup-member-*"))
			return fmt.Sprintf("with %d members staged, %d being staged and %d bytes logged", len(s), len(partial), fi.Size()), len(s) > 0 && len(partial) > 0
		}}
		args := []string{"run", "-q", "--index", index, crawl1}
		where, _ := killAt(t, exec.Command(binPath, args...), wd, p)
		if where == "" {
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		var last []byte
		status := -1
		for rerun := 1; rerun <= 3 && status != 0; rerun++ {
			var err error
			last, err = exec.Command(binPath, args...).CombinedOutput()
			status = exitStatus(t, err, last)
			t.Logf("rerun %d: exit %d", rerun, status)
		}
		if status != 0 {
			t.Fatalf("three runs after the kill, still exit %d:\n%s", status, last)
		}
		if out, err := exec.Command(binPath, "index", "verify", "--index", index).CombinedOutput(); err != nil {
			t.Fatalf("index verify after the runs: %v\n%s", err, out)
		}
		return
	}
	t.Fatal("the run was never killed with members staged")
}

// TestRunWACZKilledWhileStagingFinishesOnRerun: a run killed while it
// stages members, some already logged as rewritten and staged beside
// their package, is run again. The rerun first finishes those packages
// around the members' logged versions, which changes their stamps; its
// hash stage was done by the killed run, and the packages' verdicts
// (members compared with datapackage.json) were for the versions before.
// The rerun must take the packages its own recovery wrote as compared,
// not as changed by someone and left ("run again", exit 1): one rerun
// finishes the job.
func TestRunWACZKilledWhileStagingFinishesOnRerun(t *testing.T) {
	for attempt := 1; attempt <= 30; attempt++ {
		coll := filepath.Join(threeCrawlsOfWACZ(t), "crawl-1")
		wd := coll + ".work"
		if err := os.MkdirAll(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		p := killPoint{"members logged and staged, others being staged", func(w *watch) (string, bool) {
			fi, err := os.Stat(filepath.Join(wd, workdir.LogFile))
			if err != nil || fi.Size() == 0 {
				return "", false
			}
			s, _ := filepath.Glob(filepath.Join(coll, ".*.warcdedup-member"))
			partial, _ := filepath.Glob(filepath.Join(coll, ".tmp-.*.warcdedup-member-*"))
			return fmt.Sprintf("with %d members staged, %d being staged and %d bytes logged", len(s), len(partial), fi.Size()), len(s) > 0 && len(partial) > 0
		}}
		args := []string{"run", "-q", "--work-dir", wd, coll}
		where, _ := killAt(t, exec.Command(binPath, args...), wd, p)
		if where == "" {
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		out, err := exec.Command(binPath, args...).CombinedOutput()
		if status := exitStatus(t, err, out); status != 0 {
			t.Fatalf("the run after the kill: exit %d:\n%s", status, out)
		}
		return
	}
	t.Fatal("the run was never killed with members staged")
}

package dedup

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// TestRunWACZKilledWhileRequirersOfRequirerRefreshed: a package with no
// duplicate of its own (other-0) requires one of the collection's by
// hash, and another such package (iframe-0) requires other-0 by hash.
// The run rewrites the package other-0 requires, so it writes other-0
// anew for its entry, then iframe-0 for its entry naming other-0. Killed
// while iframe-0 is being written, the rerun must exit 0 with no stale
// entry: other-0 is named in no rewrite log entry (none of its members
// changed), so nothing in the log tells the rerun that iframe-0's entry
// names a package that changed.
func TestRunWACZKilledWhileRequirersOfRequirerRefreshed(t *testing.T) {
	// Before the packages' list (putPackages), iframe-0.wacz was left
	// naming other-0.wacz's old SHA-256, exit 0.
	for attempt := 1; attempt <= 30; attempt++ {
		j := requirersJob(t)
		cmd := exec.Command(binPath, j.args...)
		where, status := killAt(t, cmd, j.wd, iframeWritten(j.dir))
		if where == "" {
			if status != 0 {
				t.Fatalf("the run ended with exit %d before the kill point", status)
			}
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		out, err := exec.Command(binPath, j.args...).CombinedOutput()
		if status := exitStatus(t, err, out); status != 0 {
			t.Fatalf("the run after the kill: exit %d:\n%s", status, out)
		}
		if s := jobtest.StaleRequires(t, j.dir); len(s) > 0 {
			t.Errorf("after the kill and the rerun (exit 0), stale entries: %v", s)
		}
		return
	}
	t.Fatal("the run was never killed there")
}

// TestUndoWACZKilledWhileRequirersOfRequirerRefreshed: the collection
// of TestRunWACZKilledWhileRequirersOfRequirerRefreshed, run, then
// undone; the undo, which writes other-0 anew for its entry and then
// iframe-0 for its entry naming other-0, is killed while iframe-0 is
// being written. The next undo must exit 0 with no stale entry, every
// package the file it was before the run.
func TestUndoWACZKilledWhileRequirersOfRequirerRefreshed(t *testing.T) {
	for attempt := 1; attempt <= 30; attempt++ {
		j := requirersJob(t)
		before := hashTree(t, j.dir)
		if out, err := exec.Command(binPath, j.args...).CombinedOutput(); exitStatus(t, err, out) != 0 {
			t.Fatalf("run: %s", out)
		}
		undo := []string{"undo", "-q", "-j", "2", "--work-dir", j.wd, j.dir}
		where, status := killAt(t, exec.Command(binPath, undo...), j.wd, iframeWritten(j.dir))
		if where == "" {
			if status != 0 {
				t.Fatalf("the undo ended with exit %d before the kill point", status)
			}
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		out, err := exec.Command(binPath, undo...).CombinedOutput()
		if status := exitStatus(t, err, out); status != 0 {
			t.Fatalf("the undo after the kill: exit %d:\n%s", status, out)
		}
		if s := jobtest.StaleRequires(t, j.dir); len(s) > 0 {
			t.Errorf("after the kill and the next undo (exit 0), stale entries: %v", s)
		}
		jobtest.SameTree(t, "after the kill and the next undo", hashTree(t, j.dir), before)
		return
	}
	t.Fatal("the undo was never killed there")
}

// requirersJob is newWACZJob's collection with two packages of no
// duplicate of their own added: other-0 (py-wacz's test package)
// requiring crawl-1-1 by hash, and iframe-0 (ArchiveWeb.page's, its
// signature removed) requiring other-0 by hash.
func requirersJob(t *testing.T) *waczJob {
	t.Helper()
	const pywacz = "../../shared/corpus/webrecorder+py-wacz/tests/fixtures/valid_example_1.wacz"
	const iframe = "../../shared/corpus/webrecorder+replayweb.page/mkdocs/site/docs/examples/iframetest.wacz"
	for _, f := range []string{pywacz, iframe} {
		if _, err := os.Stat(f); err != nil {
			corpustest.Missing(t, "shared corpus absent: %v", err)
		}
	}
	j := newWACZJob(t)
	other, second := filepath.Join(j.dir, "other-0.wacz"), filepath.Join(j.dir, "iframe-0.wacz")
	jobtest.CopyFile(t, pywacz, other)
	jobtest.RequireBy(t, other, filepath.Join(j.dir, "crawl-1-1.wacz"))
	jobtest.Backdate(t, other)
	jobtest.CopyFile(t, iframe, second)
	requireUnsigned(t, second, other)
	jobtest.Backdate(t, second)
	return j
}

// iframeWritten kills once iframe-0.wacz is being written anew.
func iframeWritten(dir string) killPoint {
	return killPoint{"iframe-0.wacz being written", func(w *watch) (string, bool) {
		tmp, _ := filepath.Glob(filepath.Join(dir, ".tmp-iframe-0.wacz-*"))
		return "while iframe-0.wacz was written anew", len(tmp) > 0
	}}
}

// requireUnsigned writes the package requirer anew requiring required
// by its SHA-256 and size now, its signature removed (as a run with
// --unsign would).
func requireUnsigned(t *testing.T, requirer, required string) {
	t.Helper()
	r := jobtest.Requirement(t, required)
	jobtest.Rewrite(t, requirer, func(b *wacz.Rebuild) {
		b.Require = []wacz.Requirement{r}
		b.DropSignature = &wacz.SignatureRemoval{Reason: "test", Software: "test"}
	})
}

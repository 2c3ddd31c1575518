package dedup

import (
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/workdir"
)

// TestFindWorkDirDotDotUnderALink runs a job on a collection named
// through a link (ln/coll, ln linking to real) and looks its work
// directory up, as undo and show do, from a file of it named with a ".."
// that no link comes before (ln/coll/sub/../a.warc): the same file, in
// the job's collection as the job spelt it. A name spelt with every link
// resolved (real/coll/a.warc) was in none of the job's collections, and
// undo found no work directory for it.
func TestFindWorkDirDotDotUnderALink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	warctest.WriteFile(t, filepath.Join(root, "real", "coll"), "a.warc", twoCaptures("http://example.com/logo.png"))
	if err := os.MkdirAll(filepath.Join(root, "real", "coll", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "ln")); err != nil {
		t.Fatal(err)
	}
	coll := filepath.Join(root, "ln", "coll")
	wd := workdir.Default(coll)
	if r := runOn(t, coll, wd); r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten != 1 {
		t.Fatalf("exit %d %v; %d revisits written, want 1", r.Report.Exit, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	got, err := FindWorkDir(filepath.Join(coll, "sub") + "/../a.warc")
	if err != nil || got != wd {
		t.Errorf("FindWorkDir: %q, %v; want %s", got, err, wd)
	}
}

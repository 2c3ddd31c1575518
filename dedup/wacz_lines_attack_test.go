package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/workdir"
)

// TestWACZCollisionsRewriteDerivesNoLines: the collisions' rewrite
// rewrites again a member the first rewrite rewrote, copied from the
// package written anew. The hash stage's lines of that member are of the
// version before the first rewrite: no lines are derived from them for
// the new copy (a note on the display for each such member, about log
// lines and ranges, or lines that describe records where they are not),
// and every package's index is warcindex's of its members.
func TestWACZCollisionsRewriteDerivesNoLines(t *testing.T) {
	build := comparedOnceCollection(t)
	base := t.TempDir()
	dir, work := filepath.Join(base, "coll"), filepath.Join(base, "work")
	build(t, dir)
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 1, KeepWork: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep := r.Report; rep.Exit != 0 {
		t.Fatalf("exit %d %v", rep.Exit, rep.ExitReason)
	}
	log, err := os.ReadFile(filepath.Join(work, workdir.RunLog))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "reads it for its index") {
			t.Errorf("lines derived from another version: %s", l)
		}
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	sameAsFreshIndex(t, all...)
}

package dedup

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/stage"
)

// TestWACZComparedOnceResumed stops a WACZ run that compares each
// duplicate once after its first rewrite (packages written anew, the
// collisions not resolved yet), and after its collisions stage, and runs
// it again: the run resumed must find the members where the first
// rewrite left them, rewrite the collisions, finish with exit 0 and
// leave every package checked, its requires entries current, the same
// records as a run that was not stopped.
func TestWACZComparedOnceResumed(t *testing.T) {
	build := comparedOnceCollection(t)
	want := map[string]readCapture{
		"http://a.example/":  {typ: "response"},
		"http://b.example/":  {typ: "response"},
		"http://p.example/":  {typ: "response"},
		"http://p2.example/": {typ: "revisit", refers: "http://p.example/"},
		"http://a2.example/": {typ: "revisit", refers: "http://a.example/"},
		"http://b2.example/": {typ: "revisit", refers: "http://b.example/"},
		"http://b3.example/": {typ: "revisit", refers: "http://b.example/"},
	}
	for _, after := range []string{stage.RewriteName, stage.CollideName} {
		t.Run("stopped after "+after, func(t *testing.T) {
			base := t.TempDir()
			dir, work := filepath.Join(base, "coll"), filepath.Join(base, "work")
			build(t, dir)
			show, ctx := stopAfter(after)
			if _, err := Run(ctx, Options{Collections: []string{dir}, WorkDir: work, Jobs: 2, KeepWork: true, Display: show}); err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
				t.Fatalf("the interrupted run: %v", err)
			}
			r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2, KeepWork: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep := r.Report; rep.Exit != 0 || rep.Totals.Violations != 0 {
				t.Fatalf("resumed: exit %d %v, totals %+v", rep.Exit, rep.ExitReason, rep.Totals)
			}
			checkPackages(t, dir)
			if stale := staleRequires(t, dir); len(stale) > 0 {
				t.Errorf("stale requires entries: %v", stale)
			}
			got := packageCaptures(t, dir)
			for uri, w := range want {
				if got[uri] != w {
					t.Errorf("%s: %+v, want %+v", uri, got[uri], w)
				}
			}
		})
	}
}

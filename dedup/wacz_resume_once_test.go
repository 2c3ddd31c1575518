package dedup

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
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
	x, y := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin")
	a, b := httpWith(200, "application/octet-stream", x), httpWith(200, "application/octet-stream", y)
	var body strings.Builder
	for i, v := 0, uint32(1); i < 4000; i++ {
		v = v*1664525 + 1013904223
		body.WriteByte(byte('a' + v>>24%26))
	}
	page := httpWith(200, "text/html", body.String())
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
			writePackage(t, dir, "one.wacz", map[string]string{
				"one.warc.gz": string(warctest.Gzip(
					warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", a),
					warctest.Record("response", "http://b.example/", "2024-01-01T00:00:02Z", b))),
			})
			writePackage(t, dir, "two.wacz", map[string]string{
				"two-a.warc.gz": string(warctest.Gzip(
					warctest.Record("response", "http://p.example/", "2024-01-02T00:00:01Z", page),
					warctest.Record("response", "http://p2.example/", "2024-01-02T00:00:02Z", page))),
				"two-b.warc.gz": string(warctest.Gzip(
					warctest.Record("response", "http://a2.example/", "2024-01-02T00:00:03Z", a),
					warctest.Record("response", "http://b2.example/", "2024-01-02T00:00:04Z", b),
					warctest.Record("response", "http://b3.example/", "2024-01-02T00:00:05Z", b))),
			})
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

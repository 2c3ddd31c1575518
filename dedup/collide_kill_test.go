package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/workdir"
)

// atWorkFile kills once the work directory holds the file name: a point
// between two stages, or in the one after it.
func atWorkFile(what, name string) killPoint {
	return killPoint{what, func(w *watch) (string, bool) {
		_, err := os.Stat(filepath.Join(w.wd, name))
		return what, err == nil
	}}
}

// atSecondRewrite kills once the second rewrite has journaled a file.
var atSecondRewrite = killPoint{"in the rewrite of the collisions", func(w *watch) (string, bool) {
	if _, err := os.Stat(filepath.Join(w.wd, workdir.CollideByFile)); err != nil {
		return "", false
	}
	n := len(w.intents())
	return fmt.Sprintf("in the rewrite of the collisions (%d files journaled)", n), n > 0
}}

// TestKillInCollisionPass kills a run at points of its collision pass
// (the digests the rewrite kept apart, resolved byte for byte and
// rewritten again), on a collection of SHA-1 collisions, then runs it to
// the end: after the kill no record is lost (SHA-256 by SHA-256), and the
// run finished leaves the files as an uninterrupted run does, each copy a
// revisit of the member of the pair it is.
func TestKillInCollisionPass(t *testing.T) {
	a, b := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin")
	a, b = httpWith(200, "application/octet-stream", a), httpWith(200, "application/octet-stream", b)
	coll := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, coll, "first.warc.gz", warctest.Gzip(
		warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", a),
		warctest.Record("response", "http://b.example/", "2024-01-01T00:00:02Z", b)))
	want := map[string]readCapture{"http://a.example/": {typ: "response"}, "http://b.example/": {typ: "response"}}
	for i := range 24 {
		var recs []string
		for j := range 6 {
			uri := fmt.Sprintf("http://c%d-%d.example/", i, j)
			body, refers := a, "http://a.example/"
			if j%2 == 1 {
				body, refers = b, "http://b.example/"
			}
			recs = append(recs, warctest.Record("response", uri, fmt.Sprintf("2024-01-02T00:%02d:%02dZ", i, j), body))
			want[uri] = readCapture{typ: "revisit", refers: refers}
		}
		warctest.WriteFile(t, coll, fmt.Sprintf("copies-%02d.warc.gz", i), warctest.Gzip(recs...))
	}
	original := records(t, coll)
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, coll, ref)
	mustWarcdedup(t, "run", "--work-dir", ref+".work", ref)
	deduplicated := hashTree(t, ref)
	checkCaptures := func(what, dir string) {
		got := captures(t, dir)
		for uri, w := range want {
			if got[uri] != w {
				t.Errorf("%s: %s: %+v, want %+v", what, uri, got[uri], w)
			}
		}
	}
	checkCaptures("uninterrupted", ref)
	points := []killPoint{
		atWorkFile("after the rewrite kept duplicates apart", workdir.ApartFile),
		atWorkFile("with the collisions resolved", workdir.CollideOrigins),
		atSecondRewrite,
	}
	kills := 0
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			copyTree(t, coll, dir)
			wd := dir + ".work"
			where, status := killAt(t, warcdedup("run", "--work-dir", wd, dir), wd, p)
			if where == "" {
				t.Logf("the run finished (exit %d) before the kill", status)
			} else {
				kills++
				noLoss(t, "killed "+where, original, dir)
			}
			mustWarcdedup(t, "run", "--work-dir", wd, dir)
			noLoss(t, "run to the end", original, dir)
			sameTree(t, "run to the end", hashTree(t, dir), deduplicated)
			checkCaptures("run to the end", dir)
		})
	}
	if kills == 0 {
		t.Errorf("no run was killed in its collision pass")
	}
}

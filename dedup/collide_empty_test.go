package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/workdir"
)

// payload is n's body: some 8 KB that gzip does not shrink to less than
// a revisit record.
func payload(n int) string {
	var b strings.Builder
	for i := range 256 {
		sum := sha256.Sum256([]byte(fmt.Sprint(n, " ", i)))
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	return b.String()
}

// TestKillWithNothingToResolveAgain kills a run whose rewrite kept no
// duplicate apart (no collision, no ARC file, no original beyond its
// class's first: the collisions stages' shortcut, which writes their
// empty outputs without sort, rewrite or CollideBack) at points of its
// collisions stages, then runs it to the end: nothing is lost, the files
// are as an uninterrupted run leaves them, each copy a revisit of its
// original, and the collisions stage resolved nothing again.
func TestKillWithNothingToResolveAgain(t *testing.T) {
	coll := filepath.Join(t.TempDir(), "coll")
	want := map[string]readCapture{}
	for i := range 12 {
		var recs []string
		for j := range 8 {
			uri := fmt.Sprintf("http://c%d-%d.example/", i, j)
			body := payload(j % 4)
			recs = append(recs, warctest.Response(uri, fmt.Sprintf("2024-01-02T00:%02d:%02dZ", i, j), body))
			if i == 0 && j < 4 {
				want[uri] = readCapture{typ: "response"}
			} else {
				want[uri] = readCapture{typ: "revisit", refers: fmt.Sprintf("http://c0-%d.example/", j%4)}
			}
		}
		warctest.WriteFile(t, coll, fmt.Sprintf("f-%02d.warc.gz", i), warctest.Gzip(recs...))
	}
	original := records(t, coll)
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, coll, ref)
	mustWarcdedup(t, "run", "--work-dir", ref+".work", ref)
	deduplicated := hashTree(t, ref)
	checkCaptures := func(what, dir string) {
		t.Helper()
		got := captures(t, dir)
		for uri, w := range want {
			if got[uri] != w {
				t.Errorf("%s: %s: %+v, want %+v", what, uri, got[uri], w)
			}
		}
	}
	checkCollided := func(what, wd string) {
		t.Helper()
		st, err := workdir.ReadJSON[collideState](filepath.Join(wd, collideStats))
		if err != nil {
			t.Fatal(err)
		}
		if st.Result.Digests != 0 || st.Result.Apart != 0 || st.Result.Stats.Lines != 0 {
			t.Errorf("%s: the collisions stage resolved again %+v, want nothing", what, st.Result)
		}
	}
	checkCaptures("uninterrupted", ref)
	checkCollided("uninterrupted", ref+".work")
	points := []killPoint{
		atWorkFile("with the collisions resolved", workdir.CollideOrigins),
		atWorkFile("with the collisions on file", workdir.CollideByFile),
		atWorkFile("with the collisions rewritten", workdir.SavedCollisionsFile),
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coll")
			copyTree(t, coll, dir)
			wd := dir + ".work"
			where, status := killAt(t, warcdedup("run", "--work-dir", wd, dir), wd, p)
			if where == "" {
				t.Logf("the run finished (exit %d) before the kill", status)
			} else {
				noLoss(t, "killed "+where, original, dir)
			}
			mustWarcdedup(t, "run", "--work-dir", wd, dir)
			noLoss(t, "run to the end", original, dir)
			sameTree(t, "run to the end", hashTree(t, dir), deduplicated)
			checkCaptures("run to the end", dir)
			checkCollided("run to the end", wd)
		})
	}
}

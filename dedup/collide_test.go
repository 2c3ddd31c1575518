package dedup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/collres"
	"warcdedup/digest"
	"warcdedup/internal/corpustest"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/record"
	"warcdedup/refs"
	"warcdedup/report"
	"warcdedup/revisit"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// readCapture is a record as a test reads it back: its type and, for a
// revisit, the readCapture it refers to.
type readCapture struct {
	typ, refers string
}

// captures reads every record of the WARC files under dir, by URI.
func captures(t *testing.T, dir string) map[string]readCapture {
	t.Helper()
	out := map[string]readCapture{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rr, err := record.NewReader(f, p)
		if err != nil {
			return err
		}
		for {
			rec, err := rr.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			uri := rec.Header.Get("WARC-Target-URI")
			c := readCapture{typ: rec.Type}
			if rec.Type == "revisit" {
				c.refers = revisit.RefersURI(rec)
			}
			out[uri] = c
			if err := rr.Finish(); err != nil {
				return err
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// collisionPair reads a pair of /work/shared/collisions, each member
// followed by the same 8 KiB (the pairs of Merkle-Damgard hashes collide
// with any common suffix): payloads whose revisits are smaller.
func collisionPair(t *testing.T, a, b string) (string, string) {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "collisions")
	pa, err := os.ReadFile(filepath.Join(dir, a))
	if err != nil {
		corpustest.Missing(t, "the collision pairs: %v", err)
	}
	pb, err := os.ReadFile(filepath.Join(dir, b))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(pa, pb) {
		t.Fatalf("%s and %s are the same bytes", a, b)
	}
	suffix := strings.Repeat("common body of both members of the pair ", 8192/40)
	return string(pa) + suffix, string(pb) + suffix
}

func httpWith(status int, contentType, body string) string {
	return fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", status, contentType, len(body), body)
}

// TestEachDuplicateComparedOnce runs the job on collections whose copies
// resolve, numbering them without reading, cannot tell apart: two
// payloads under one digest (real collision pairs, in the algorithm they
// collide in), and the same bytes that replay differently. The rewrite
// keeps each apart from the original it was numbered with, the
// collisions stages resolve those digests byte for byte in the same run,
// and each duplicate becomes a revisit of the readCapture it is byte for
// byte and replays as; nothing colliding is ever a revisit of the other.
func TestEachDuplicateComparedOnce(t *testing.T) {
	cases := []struct {
		name string
		algo digest.Algorithm
		// pair gives the HTTP messages a and b, whose payloads share a
		// digest.
		pair func(t *testing.T) (string, string)
	}{
		{"md5 collision (wang)", digest.MD5, func(t *testing.T) (string, string) {
			x, y := collisionPair(t, "wang1.bin", "wang2.bin")
			return httpWith(200, "application/octet-stream", x), httpWith(200, "application/octet-stream", y)
		}},
		{"md5 collision (fastcoll)", digest.MD5, func(t *testing.T) (string, string) {
			x, y := collisionPair(t, "fastcoll1.bin", "fastcoll2.bin")
			return httpWith(200, "application/octet-stream", x), httpWith(200, "application/octet-stream", y)
		}},
		{"sha1 collision (sha-mbles)", digest.SHA1, func(t *testing.T) (string, string) {
			x, y := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin")
			return httpWith(200, "application/octet-stream", x), httpWith(200, "application/octet-stream", y)
		}},
		{"policy split: same bytes, another status", digest.SHA1, func(t *testing.T) (string, string) {
			body := strings.Repeat("the same page served twice ", 400)
			return httpWith(200, "text/html", body), httpWith(203, "text/html", body)
		}},
		{"policy split: same bytes, another type", digest.SHA1, func(t *testing.T) (string, string) {
			body := strings.Repeat("{\"a\": 1} ", 800)
			return httpWith(200, "text/plain", body), httpWith(200, "application/json", body)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.pair(t)
			dir := filepath.Join(t.TempDir(), "coll")
			// a's original first, then b's (numbered a duplicate of a
			// by digest), then a copy of each in another file.
			warctest.WriteFile(t, dir, "one.warc.gz", warctest.Gzip(
				warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", a),
				warctest.Record("response", "http://b.example/", "2024-01-01T00:00:02Z", b)))
			warctest.WriteFile(t, dir, "two.warc", []byte(
				warctest.Record("response", "http://a2.example/", "2024-01-02T00:00:01Z", a)+
					warctest.Record("response", "http://b2.example/", "2024-01-02T00:00:02Z", b)+
					warctest.Record("response", "http://b3.example/", "2024-01-02T00:00:03Z", b)))
			r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2, Algorithm: tc.algo})
			if err != nil {
				t.Fatal(err)
			}
			if rep := r.Report; rep.Exit != 0 || rep.Totals.Violations != 0 {
				t.Fatalf("exit %d %v, totals %+v", rep.Exit, rep.ExitReason, rep.Totals)
			}
			got := captures(t, dir)
			want := map[string]readCapture{
				"http://a.example/":  {typ: "response"},
				"http://b.example/":  {typ: "response"},
				"http://a2.example/": {typ: "revisit", refers: "http://a.example/"},
				"http://b2.example/": {typ: "revisit", refers: "http://b.example/"},
				"http://b3.example/": {typ: "revisit", refers: "http://b.example/"},
			}
			for uri, w := range want {
				if got[uri] != w {
					t.Errorf("%s: %+v, want %+v", uri, got[uri], w)
				}
			}
			if n := r.Report.Totals.RevisitsWritten; n != 3 {
				t.Errorf("%d revisits written, want 3", n)
			}
			// The report says why b is served apart from a: the
			// collision the collisions stage found, or the policy.
			why, says := r.Report.ServedApartWhy, "under the replay policy"
			if strings.Contains(tc.name, "collision") {
				says = "hash collision"
			}
			if !strings.Contains(why, says) {
				t.Errorf("served apart because %q, want it to say %q", why, says)
			}
		})
	}
}

// numberedLines reads a work directory's numbered manifest, sorted, each
// line as its record's file, offset and numbering (ext, copy, original).
func numberedLines(t *testing.T, work string) []string {
	t.Helper()
	f, err := gzfile.Open(filepath.Join(work, workdir.NumberedFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := manifest.NewReader(f, workdir.NumberedFile)
	var out []string
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %s %s ext %d copy %d refers %s %s", l.File, l.Offset, l.URI, l.Date, l.Class, l.Copy, l.RefURI, l.RefDate))
	}
	slices.Sort(out)
	return out
}

// TestCompareOnceAsComparing runs the job on collections where resolve,
// numbering the copies without reading them, sees less than the comparing
// resolve does, each case once with each resolve: both must write the
// same files, number every record alike (the account's classes served
// apart, largest classes and dependencies come from that numbering) and
// give the same totals.
func TestCompareOnceAsComparing(t *testing.T) {
	body := strings.Repeat("a page that is served twice, differently ", 300)
	pin := func(uri, date string) string {
		// An earlier tool's revisit of uri at date: the capture stays a
		// response (pinned), whatever the numbering.
		return warctest.Record("revisit", uri, "2024-03-01T00:00:00Z", "",
			"WARC-Refers-To-Target-URI: "+uri, "WARC-Refers-To-Date: "+date,
			"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest")
	}
	cases := []struct {
		name   string
		files  map[string]string
		make   func(t *testing.T) map[string]string // instead of files
		policy policy.Policy
		algo   digest.Algorithm
	}{
		// A capture an existing revisit refers to is an original of
		// its own; the comparing resolve finds it served apart from
		// the digest's first (another status), numbering without
		// reading finds no duplicate to compare it by.
		{name: "pinned capture served apart from the first", files: map[string]string{
			"one.warc": warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", httpWith(200, "text/html", body)) +
				warctest.Record("response", "http://b.example/", "2024-01-02T00:00:01Z", httpWith(203, "text/html", body)),
			"two.warc": pin("http://b.example/", "2024-01-02T00:00:01Z") +
				warctest.Record("response", "http://c.example/", "2024-01-03T00:00:01Z", httpWith(203, "text/html", body)) +
				warctest.Record("response", "http://d.example/", "2024-01-04T00:00:01Z", httpWith(200, "text/html", body)),
		}},
		// Two pinned captures served alike: one class, no class apart.
		{name: "pinned captures served alike", files: map[string]string{
			"one.warc": warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", httpWith(200, "text/html", body)) +
				warctest.Record("response", "http://b.example/", "2024-01-02T00:00:01Z", httpWith(200, "text/html", body)),
			"two.warc": pin("http://b.example/", "2024-01-02T00:00:01Z") +
				warctest.Record("response", "http://c.example/", "2024-01-03T00:00:01Z", httpWith(200, "text/html", body)),
		}},
		// Under the URI policy the digest's URIs are classes numbered
		// apart from the manifest; a collision under the second URI is
		// found apart by the rewrite: its class takes the next ext, as
		// the comparing resolve numbers it.
		{name: "class found apart after classes numbered apart"},
	}
	cases[2].policy, cases[2].algo = policy.URI, digest.SHA1
	cases[2].make = func(t *testing.T) map[string]string {
		x, y := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin")
		return map[string]string{
			"one.warc": warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", httpWith(200, "application/octet-stream", x)) +
				warctest.Record("response", "http://b.example/", "2024-01-02T00:00:01Z", httpWith(200, "application/octet-stream", x)),
			"two.warc": warctest.Record("response", "http://b.example/", "2024-01-03T00:00:01Z", httpWith(200, "application/octet-stream", y)) +
				warctest.Record("response", "http://b.example/", "2024-01-04T00:00:01Z", httpWith(200, "application/octet-stream", y)) +
				warctest.Record("response", "http://b.example/", "2024-01-05T00:00:01Z", httpWith(200, "application/octet-stream", x)),
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				totals   report.Totals
				numbered []string
				log      []string
				files    map[string]readCapture
			}
			var got [2]result
			for i, once := range []bool{false, true} {
				base := t.TempDir()
				dir := filepath.Join(base, "coll")
				files := tc.files
				if tc.make != nil {
					files = tc.make(t)
				}
				for name, data := range files {
					warctest.WriteFile(t, dir, name, []byte(data))
				}
				work := filepath.Join(base, "work")
				r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2, KeepWork: true,
					Policy: tc.policy, Algorithm: tc.algo, CompareInResolve: !once})
				if err != nil {
					t.Fatal(err)
				}
				if rep := r.Report; rep.Exit != 0 || rep.Totals.Violations != 0 {
					t.Fatalf("compare once %v: exit %d %v, totals %+v", once, rep.Exit, rep.ExitReason, rep.Totals)
				}
				got[i] = result{r.Report.Totals, numberedLines(t, work), rewritetest.ComposedLog(t, filepath.Join(work, workdir.LogFile)), captures(t, dir)}
			}
			cmp, once := got[0], got[1]
			if cmp.totals != once.totals {
				t.Errorf("totals differ:\ncomparing    %+v\ncompare once %+v", cmp.totals, once.totals)
			}
			if !slices.Equal(cmp.numbered, once.numbered) {
				t.Errorf("numbered manifests differ:\ncomparing\n  %s\ncompare once\n  %s", strings.Join(cmp.numbered, "\n  "), strings.Join(once.numbered, "\n  "))
			}
			if !slices.Equal(cmp.log, once.log) {
				t.Errorf("rewrite logs differ, composed:\ncomparing\n  %s\ncompare once\n  %s", strings.Join(cmp.log, "\n  "), strings.Join(once.log, "\n  "))
			}
			if !maps.Equal(cmp.files, once.files) {
				t.Errorf("records differ:\ncomparing    %v\ncompare once %v", cmp.files, once.files)
			}
		})
	}
}

// TestUndoAfterCollisionPass undoes a run whose rewrite of the collisions
// replaced a file that sorts before the last the first rewrite replaced:
// the undo restores the files of both, and its own log entries are in
// the order of files a run's must be, so that it ends with exit 0.
func TestUndoAfterCollisionPass(t *testing.T) {
	body := strings.Repeat("a page that is served twice, differently ", 300)
	dir := filepath.Join(t.TempDir(), "coll")
	files := map[string]string{
		"m.warc": warctest.Record("response", "http://a.example/", "2024-01-01T00:00:01Z", httpWith(200, "text/html", body)) +
			warctest.Record("response", "http://b.example/", "2024-01-02T00:00:01Z", httpWith(203, "text/html", body)),
		// Numbered a copy of a, kept apart (another status), a revisit of
		// b after the collisions stage.
		"a.warc": warctest.Record("response", "http://c.example/", "2024-01-03T00:00:01Z", httpWith(203, "text/html", body)),
		// A revisit of a in the first rewrite.
		"z.warc": warctest.Record("response", "http://d.example/", "2024-01-04T00:00:01Z", httpWith(200, "text/html", body)),
	}
	for name, data := range files {
		warctest.WriteFile(t, dir, name, []byte(data))
	}
	work := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: work, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep := r.Report; rep.Exit != 0 || rep.Totals.RevisitsWritten != 2 {
		t.Fatalf("run: exit %d %v, totals %+v", rep.Exit, rep.ExitReason, rep.Totals)
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: work, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u.Exit != 0 {
		t.Errorf("undo: exit %d %v", u.Exit, u.ExitReason)
	}
	for name, data := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%s not restored (%v)", name, err)
		}
	}
}

// TestResumeAfterCollisionRewriteListsRefused reloads what the rewrite
// of the collisions did, as a run resumed after it does: the files it
// refused are named among the exit reasons and left to the next run
// (not recorded as done), as the run that refused them does.
func TestResumeAfterCollisionRewriteListsRefused(t *testing.T) {
	wd, err := workdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	why := "a.warc: left untouched: a.warc has 2 hard links"
	did := stage.RewriteResult{Stats: refs.Stats{Refused: 1}, Refused: []string{why}, RefusedFiles: []string{"a.warc"}}
	if err := (&run{wd: wd}).keepRewroteCollisions(did); err != nil {
		t.Fatal(err)
	}
	resumed := &run{wd: wd}
	if err := resumed.reload(stage.RewriteCollisionName); err != nil {
		t.Fatal(err)
	}
	got := resumed.rewroteCollisions
	if !slices.Equal(got.RefusedFiles, did.RefusedFiles) {
		t.Errorf("refused files %q, want %q", got.RefusedFiles, did.RefusedFiles)
	}
	if reasons := got.Reasons(); !slices.Contains(reasons, "  "+why) && !slices.Contains(reasons, why) {
		t.Errorf("exit reasons %q do not name the file refused", reasons)
	}
}

// TestRunReasonsCountCollideStale gives the exit reasons of a run whose
// collisions stage left stale lines out (a record it could not read
// again): they are counted with resolve's, named, and make the exit
// status 1, as warcdedup cluster's account does, also when the run is
// resumed after that stage (its figures reloaded from the work
// directory); a collisions stage that left nothing out adds no reason.
func TestRunReasonsCountCollideStale(t *testing.T) {
	stale := "a.warc:1234: record gone: the line no longer names its record"
	cases := []struct {
		name      string
		resolve   int64 // stale lines of the resolve stage
		collide   stage.CollideResult
		wantStale int64
		wantNamed []string
	}{
		{"collisions stage left one out", 0, stage.CollideResult{Digests: 1, Apart: 2, Stats: collres.Stats{Stale: 1}, Stale: []string{stale}}, 1, []string{stale}},
		{"both stages left some out", 2, stage.CollideResult{Digests: 1, Apart: 2, Stats: collres.Stats{Stale: 1}, Stale: []string{stale}}, 3, []string{stale}},
		{"collisions stage left nothing out", 0, stage.CollideResult{Digests: 1, Apart: 2}, 0, nil},
	}
	for _, tc := range cases {
		for _, resumed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/resumed=%v", tc.name, resumed), func(t *testing.T) {
				wd, err := workdir.Open(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				r := &run{wd: wd, rep: &report.Report{}, coll: &collection{}}
				r.resolved.Stats.Stale = tc.resolve
				r.collided = collideState{Result: tc.collide}
				if resumed {
					if err := workdir.WriteJSON(wd.File(collideStats), r.collided); err != nil {
						t.Fatal(err)
					}
					r = &run{wd: wd, rep: &report.Report{}, coll: &collection{}}
					r.resolved.Stats.Stale = tc.resolve
					if err := r.reload(stage.CollideName); err != nil {
						t.Fatal(err)
					}
				}
				if got := r.resolvedAll().Stats.Stale; got != tc.wantStale {
					t.Errorf("the account's stale lines %d, want %d", got, tc.wantStale)
				}
				reasons := r.reasons()
				if tc.wantStale == 0 {
					if len(reasons) > 0 {
						t.Errorf("exit reasons %q, want none", reasons)
					}
					return
				}
				want := fmt.Sprintf("%d stale manifest lines left out", tc.wantStale)
				if len(reasons) == 0 || !strings.HasPrefix(reasons[0], want) {
					t.Errorf("exit reasons %q, want first %q", reasons, want)
				}
				for _, n := range tc.wantNamed {
					if !slices.ContainsFunc(reasons, func(s string) bool { return strings.TrimSpace(s) == n }) {
						t.Errorf("exit reasons %q do not name %q", reasons, n)
					}
				}
				rep := &report.Report{}
				stage.Finish(rep, nil, reasons)
				if rep.Exit != 1 {
					t.Errorf("exit %d, want 1", rep.Exit)
				}
			})
		}
	}
}

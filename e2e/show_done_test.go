package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestShowOriginalAfterJob shows an original after a completed run, whose
// intermediates (the manifests on digest) are gone: the revisits pointing
// at it are found in every file through the rewrite log, at their offsets
// now, and once undone are no longer listed. It once listed only those of
// the original's own file, under "(no manifest sorted on digest yet)".
func TestShowOriginalAfterJob(t *testing.T) {
	dir := t.TempDir()
	coll := smallCollection(t, dir, "coll")
	if _, stderr, code := sh(t, dir, "warcdedup run -q -j 2 coll"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	logName := filepath.Join(dir, "coll.warcdedup", "rewrite.log")
	logged := readLogRevisits(t, logName)
	// The collection as it is now, listed by warcsum.
	if _, stderr, code := sh(t, dir, "warcsum -r coll > now.manifest"); code != 0 {
		t.Fatal(stderr)
	}
	now := readManifestFile(t, filepath.Join(dir, "now.manifest"))
	ours := map[string]bool{}
	for _, e := range logged {
		ours[e.file+" "+strconv.FormatInt(e.newOff, 10)] = true
	}

	// An original with revisits the run wrote in its own file and in
	// another one.
	type key struct{ digest, uri, date string }
	files := map[key]map[string]bool{}
	for _, e := range logged {
		k := key{e.digest, e.uri, e.day}
		if files[k] == nil {
			files[k] = map[string]bool{}
		}
		files[k][e.file] = true
	}
	var origFile, origTarget string
	var orig key
	for _, m := range now {
		k := key{m.Digest, m.URI, m.Date}
		if !m.IsRevisit() && len(files[k]) >= 2 && files[k][m.File] {
			orig, origFile = k, m.File
			break
		}
	}
	if origFile == "" {
		t.Fatal("no original with revisits written in its own file and in another one")
	}
	// Those the run wrote, wherever they are, and other tools' in its own
	// file.
	want := func() []string {
		var out []string
		for _, m := range now {
			if m.IsRevisit() && m.Digest == orig.digest && m.RefURI == orig.uri && (m.RefDate == orig.date || m.RefDate == "*") &&
				(ours[m.File+" "+strconv.FormatInt(m.Offset, 10)] || m.File == origFile) {
				out = append(out, filepath.Join(coll, m.File)+" "+strconv.FormatInt(m.Offset, 10))
			}
		}
		slices.Sort(out)
		return out
	}
	wantNow := want()
	if other := slices.IndexFunc(wantNow, func(s string) bool { return !strings.HasPrefix(s, filepath.Join(coll, origFile)+" ") }); other < 0 {
		t.Fatalf("no revisit of %s %s outside its own file %s: %q", orig.uri, orig.date, origFile, wantNow)
	}

	got := func() []string {
		origTarget = ""
		for _, m := range now {
			if !m.IsRevisit() && m.File == origFile && m.Digest == orig.digest && m.URI == orig.uri && m.Date == orig.date {
				origTarget = "coll/" + m.File + ":" + strconv.FormatInt(m.Offset, 10)
				break
			}
		}
		r := showJSON(t, dir, origTarget, 0)
		if r.Type != "response" || r.Response == nil || r.Job == nil || r.Job.Manifest != "" {
			t.Fatalf("show %s: %+v", origTarget, r)
		}
		var out []string
		for _, p := range r.Response.Revisits {
			out = append(out, p.File+" "+strconv.FormatInt(p.Offset, 10))
			if !strings.HasPrefix(p.Now, "a revisit") {
				t.Errorf("show %s: %+v is no revisit now", origTarget, p)
			}
		}
		slices.Sort(out)
		return out
	}
	if g := got(); !slices.Equal(g, wantNow) {
		t.Errorf("show %s after the run: revisits %q, want %q", origTarget, g, wantNow)
	}
	if r := showJSON(t, dir, origTarget, 0); r.Job == nil || !r.Job.Complete {
		t.Errorf("show --json %s: job %+v, want one complete", origTarget, r.Job)
	}
	text, _, code := sh(t, dir, "warcdedup show "+origTarget)
	t.Logf("show %s:\n%s", origTarget, text)
	if code != 0 || strings.Contains(text, "no manifest sorted on digest yet") || !strings.Contains(text, "revisits pointing at it: "+strconv.Itoa(len(wantNow))+"\n") {
		t.Errorf("show %s: exit %d\n%s", origTarget, code, text)
	}

	// One of its revisits in the other file: the job knows no more of
	// where its original is (the log names it by URI, date and digest),
	// and says so; through an index of the collection it resolves to it.
	other := wantNow[slices.IndexFunc(wantNow, func(s string) bool { return !strings.HasPrefix(s, filepath.Join(coll, origFile)+" ") })]
	revFile, revOff, _ := strings.Cut(strings.TrimPrefix(other, coll+string(filepath.Separator)), " ")
	revTarget := "coll/" + revFile + ":" + revOff
	if _, stderr, code := sh(t, dir, "warcdedup show "+revTarget); code != 1 || !strings.Contains(stderr, "no manifest on digest now") || strings.Contains(stderr, "--work-dir") {
		t.Errorf("show %s: exit %d, stderr %q", revTarget, code, stderr)
	}
	if _, stderr, code := sh(t, dir, strings.ReplaceAll(cdxjScript, "COLL", "coll")+" > coll.cdxj"); code != 0 {
		t.Fatal(stderr)
	}
	if rv := showJSON(t, dir, "--cdx coll.cdxj "+revTarget, 0); rv.Revisit == nil || !rv.Revisit.Resolves || rv.Revisit.Original == nil ||
		"coll/"+origFile+":"+strconv.FormatInt(rv.Revisit.Original.Offset, 10) != origTarget {
		t.Errorf("show --cdx %s: %+v, want its original %s", revTarget, rv.Revisit, origTarget)
	}

	// Undone, the run's revisits are responses again: none is listed.
	if _, stderr, code := sh(t, dir, "warcdedup undo -q -j 2 coll"); code != 0 {
		t.Fatalf("undo: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := sh(t, dir, "warcsum -r coll > now.manifest"); code != 0 {
		t.Fatal(stderr)
	}
	now, ours = readManifestFile(t, filepath.Join(dir, "now.manifest")), nil
	if g, w := got(), want(); !slices.Equal(g, w) {
		t.Errorf("show %s after undo: revisits %q, want %q", origTarget, g, w)
	}
	os.Remove(filepath.Join(dir, "now.manifest"))
}
